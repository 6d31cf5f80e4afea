"""The local control plane behaves like a real cluster: scheduling, kwok outcomes, admission, RBAC."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes import client
from kubernetes_asyncio import client as async_client
from kubernetes_asyncio import config as async_config
from support.waits import wait_for_pod_phase

from airflow_broadcast.cluster.api_errors import Forbidden, Invalid
from airflow_broadcast.cluster.http_session import api_client_for
from airflow_broadcast.cluster.kube_client import KubeClient

SIM = "sim.airflow-broadcast.io"


async def _client(kubeconfig: str) -> KubeClient:
    cfg = async_client.Configuration()
    await async_config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    return KubeClient(api_client_for(cfg))


def _pod(name: str, node: str | None = None, annotations: dict[str, str] | None = None,
         restart_policy: str = "Never") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "busybox"}],
        "restartPolicy": restart_policy,
        "tolerations": [{"operator": "Exists"}],
    }
    if node:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
        }}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": annotations or {}}, "spec": spec}


async def _watch_phases(kubeconfig: str, namespace: str, name: str, until: set[str],
                        create: Any) -> tuple[list[str], dict[str, Any]]:
    """Start a watch with the project's own client, create the pod, and follow it until `until`."""
    kube = await _client(kubeconfig)
    path = f"/api/v1/namespaces/{namespace}/pods"
    seen: list[str] = []
    try:
        items, version = await kube.list_all(path, fieldSelector=f"metadata.name={name}")
        assert items == []
        last: dict[str, Any] = {}
        await asyncio.to_thread(create)
        async with asyncio.timeout(60):
            while not seen or seen[-1] not in until:
                async for _kind, pod in kube.watch(path, resource_version=version,
                                                   fieldSelector=f"metadata.name={name}"):
                    last = pod
                    phase = pod["status"].get("phase", "")
                    if not seen or seen[-1] != phase:
                        seen.append(phase)
                    if phase in until:
                        break
        return seen, last
    finally:
        await kube.close()


@pytest.mark.cluster
@pytest.mark.parametrize(
    ("annotations", "phase", "exit_code", "reason"),
    [
        ({f"{SIM}/result": "Succeeded", f"{SIM}/after": "300ms"}, "Succeeded", 0, "Completed"),
        ({f"{SIM}/result": "Failed", f"{SIM}/exit-code": "137", f"{SIM}/reason": "OOMKilled"},
         "Failed", 137, "OOMKilled"),
    ],
    ids=["succeeded", "failed-137"],
)
def test_pod_on_fake_node_runs_then_ends_as_its_annotation_says(
    kubeconfig: str, core_api: client.CoreV1Api, namespace: str, node_factory: Any,
    annotations: dict[str, str], phase: str, exit_code: int, reason: str,
) -> None:
    (node,) = node_factory(1)
    seen, pod = asyncio.run(_watch_phases(
        kubeconfig, namespace, "outcome", {"Succeeded", "Failed"},
        lambda: core_api.create_namespaced_pod(namespace, _pod("outcome", node, annotations)),
    ))

    assert "Running" in seen, f"the watch never saw Running: {seen}"
    assert seen[-1] == phase
    assert pod["spec"]["nodeName"] == node, "the scheduler bound the pod to the pinned fake node"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == exit_code
    assert terminated["reason"] == reason


@pytest.mark.cluster
def test_onfailure_pod_restarts_as_annotated_then_succeeds(
    core_api: client.CoreV1Api, namespace: str, node_factory: Any,
) -> None:
    (node,) = node_factory(1)
    annotations = {f"{SIM}/restarts": "2", f"{SIM}/result": "Succeeded", f"{SIM}/exit-code": "3"}
    core_api.create_namespaced_pod(namespace, _pod("flaky", node, annotations, restart_policy="OnFailure"))

    wait_for_pod_phase(core_api, namespace, "flaky", {"Succeeded"})

    status = core_api.read_namespaced_pod("flaky", namespace).status.container_statuses[0]
    assert status.restart_count == 2
    assert status.state.terminated.exit_code == 0


@pytest.mark.cluster
def test_pod_without_annotation_keeps_running(core_api: client.CoreV1Api, namespace: str,
                                              node_factory: Any) -> None:
    (node,) = node_factory(1)
    core_api.create_namespaced_pod(namespace, _pod("forever", node))
    seen = wait_for_pod_phase(core_api, namespace, "forever", {"Running"})
    assert seen[-1] == "Running"
    assert core_api.read_namespaced_pod("forever", namespace).status.phase == "Running"


@pytest.mark.cluster
def test_pod_with_no_containers_is_refused_with_422_and_the_reason(
    kubeconfig: str, core_api: client.CoreV1Api, namespace: str,
) -> None:
    bad = _pod("empty")
    bad["spec"]["containers"] = []

    async def create() -> Invalid:
        kube = await _client(kubeconfig)
        try:
            with pytest.raises(Invalid) as caught:
                await kube.create(f"/api/v1/namespaces/{namespace}/pods", bad)
            return caught.value
        finally:
            await kube.close()

    error = asyncio.run(create())
    assert error.status == 422
    assert any(c.get("field") == "spec.containers" for c in error.causes), error.causes
    assert "spec.containers: Required value" in str(error)
    assert core_api.list_namespaced_pod(namespace).items == []


@pytest.mark.cluster
def test_fake_nodes_carry_labels_taints_allocatable_and_cordon(
    core_api: client.CoreV1Api, node_factory: Any,
) -> None:
    (name,) = node_factory(
        1, labels={"pool": "gpu"}, taints=[{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}],
        allocatable={"cpu": "4", "memory": "8Gi", "pods": "10"}, unschedulable=True,
    )
    node = core_api.read_node(name)
    assert node.metadata.labels["pool"] == "gpu"
    assert {(t.key, t.value, t.effect) for t in node.spec.taints} >= {("dedicated", "ml", "NoSchedule")}
    assert node.status.allocatable == {"cpu": "4", "memory": "8Gi", "pods": "10"}
    assert node.spec.unschedulable is True


@pytest.mark.cluster
def test_restricted_identity_gets_403_with_an_rbac_hint(cluster: Any, namespace: str) -> None:
    async def attempt() -> Forbidden:
        kube = await _client(cluster.restricted_kubeconfig)
        try:
            with pytest.raises(Forbidden) as caught:
                await kube.get(f"/api/v1/namespaces/{namespace}/pods")
            return caught.value
        finally:
            await kube.close()

    error = asyncio.run(attempt())
    assert error.status == 403
    assert "docs/rbac.md" in str(error)
    assert 'User "restricted" cannot list resource "pods"' in error.api_message


@pytest.mark.cluster
def test_fail_nodes_annotation_fails_only_the_listed_node(core_api: client.CoreV1Api, namespace: str,
                                                          node_factory: Any) -> None:
    good, bad = node_factory(2)
    annotations = {f"{SIM}/result": "Succeeded", f"{SIM}/fail-nodes": f"other,{bad}", f"{SIM}/exit-code": "42"}
    core_api.create_namespaced_pod(namespace, _pod("on-good", good, annotations))
    core_api.create_namespaced_pod(namespace, _pod("on-bad", bad, annotations))

    wait_for_pod_phase(core_api, namespace, "on-good", {"Succeeded", "Failed"})
    wait_for_pod_phase(core_api, namespace, "on-bad", {"Succeeded", "Failed"})

    assert core_api.read_namespaced_pod("on-good", namespace).status.phase == "Succeeded"
    bad_pod = core_api.read_namespaced_pod("on-bad", namespace).status
    assert bad_pod.phase == "Failed"
    assert bad_pod.container_statuses[0].state.terminated.exit_code == 42


@pytest.mark.cluster
def test_fail_until_fails_early_pods_and_lets_later_ones_succeed(core_api: client.CoreV1Api, namespace: str,
                                                                 node_factory: Any) -> None:
    import datetime as dt

    (node,) = node_factory(1)
    until = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    annotations = {f"{SIM}/result": "Succeeded", f"{SIM}/fail-until": until, f"{SIM}/exit-code": "137"}
    core_api.create_namespaced_pod(namespace, _pod("early", node, annotations))
    wait_for_pod_phase(core_api, namespace, "early", {"Succeeded", "Failed"})
    early = core_api.read_namespaced_pod("early", namespace).status
    assert early.phase == "Failed" and early.container_statuses[0].state.terminated.exit_code == 137

    from support.waits import wait_until

    wait_until(lambda: dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ") > until, timeout=10, what="fail-until")
    core_api.create_namespaced_pod(namespace, _pod("late", node, annotations))
    wait_for_pod_phase(core_api, namespace, "late", {"Succeeded", "Failed"})
    assert core_api.read_namespaced_pod("late", namespace).status.phase == "Succeeded"
