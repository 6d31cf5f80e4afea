"""Least privilege on the real cluster: the documented Role and ClusterRole are enough, and nodes are needed.

The admin identity applies `docs/rbac/role.yaml` (in the test's namespace) and
`docs/rbac/clusterrole.yaml` under unique names and binds them to the user
`restricted`; the engine then runs jobs as that user.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from airflow_broadcast.cluster.api_errors import Forbidden

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
RBAC_DIR = REPO / "docs" / "rbac"
SIM = "sim.airflow-broadcast.io"
USER = "restricted"
GROUP = "airflow-broadcast-testers"
RBAC_GROUP = "rbac.authorization.k8s.io"


def rbac_document(file: str, kind: str) -> dict[str, Any]:
    """The one document of `kind` in a docs/rbac file."""
    docs = [d for d in yaml.safe_load_all((RBAC_DIR / file).read_text()) if d and d.get("kind") == kind]
    assert len(docs) == 1, f"{file} must hold exactly one {kind}"
    return docs[0]


def rules_of(document: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for rule in document["rules"] for group in rule.get("apiGroups", [])
            for resource in rule["resources"] for verb in rule["verbs"]}


class Grants:
    """Applies the documented roles for user `restricted`; cluster-scoped objects are deleted at teardown."""

    def __init__(self, kubeconfig: str, namespace: str) -> None:
        api_client = config.new_client_from_config(config_file=kubeconfig)
        self.rbac = client.RbacAuthorizationV1Api(api_client)
        self.authz = client.AuthorizationV1Api(api_client)
        self.namespace = namespace
        self.suffix = f"{namespace}-{uuid.uuid4().hex[:6]}"
        self.cluster_roles: list[str] = []
        self.cluster_bindings: list[str] = []

    def subject(self) -> list[dict[str, str]]:
        return [{"kind": "User", "name": USER, "apiGroup": RBAC_GROUP}]

    def namespace_role(self, file: str = "role.yaml") -> None:
        role = rbac_document(file, "Role")
        name = f"{role['metadata']['name']}-{self.suffix}"
        body = {**role, "metadata": {**role["metadata"], "name": name, "namespace": self.namespace}}
        self.rbac.create_namespaced_role(self.namespace, body)
        self.rbac.create_namespaced_role_binding(self.namespace, {
            "apiVersion": f"{RBAC_GROUP}/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": self.namespace},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
            "subjects": self.subject(),
        })
        self.wait_allowed("create", "pods", self.namespace)
        self.wait_allowed("watch", "configmaps", self.namespace)

    def cluster_role(self) -> None:
        role = rbac_document("clusterrole.yaml", "ClusterRole")
        name = f"airflow-broadcast-nodes-{self.suffix}"
        self.rbac.create_cluster_role({**role, "metadata": {**role["metadata"], "name": name}})
        self.cluster_roles.append(name)
        self.rbac.create_cluster_role_binding({
            "apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
            "subjects": self.subject(),
        })
        self.cluster_bindings.append(name)
        self.wait_allowed("watch", "nodes", None)

    def allowed(self, verb: str, resource: str, namespace: str | None) -> bool:
        attributes: dict[str, str] = {"verb": verb, "resource": resource, "group": ""}
        if namespace:
            attributes["namespace"] = namespace
        review = self.authz.create_subject_access_review({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": USER, "groups": [GROUP, "system:authenticated"], "resourceAttributes": attributes},
        })
        return bool(review.status.allowed)

    def wait_allowed(self, verb: str, resource: str, namespace: str | None, timeout: float = 30.0) -> None:
        """The authorizer's cache follows new bindings within moments; wait for it, bounded."""
        deadline = time.monotonic() + timeout
        while not self.allowed(verb, resource, namespace):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{USER} still may not {verb} {resource} after {timeout} s")
            time.sleep(0.1)

    def cleanup(self) -> None:
        for name in self.cluster_bindings:
            self.rbac.delete_cluster_role_binding(name)
        for name in self.cluster_roles:
            self.rbac.delete_cluster_role(name)


@pytest.fixture
def grants(kubeconfig: str, namespace: str) -> Iterator[Grants]:
    granted = Grants(kubeconfig, namespace)
    yield granted
    granted.cleanup()


@pytest.fixture
def restricted_engine(cluster: Any, namespace: str, core_api: client.CoreV1Api) -> Any:
    """The real engine acting as user `restricted` (the admin `core_api` only reads results)."""
    from support.engine import Engine

    return Engine(cluster.restricted_kubeconfig, namespace, core_api)


def pod_template(pool: str, container: str) -> dict[str, Any]:
    return {"metadata": {"annotations": {f"{SIM}/result": "Succeeded"}},
            "spec": {"nodeSelector": {"pool": pool}, "restartPolicy": "Never",
                     "containers": [{"name": container, "image": "busybox:1.36"}]}}


def broadcast_job(name: str, pool: str) -> dict[str, Any]:
    return {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": name},
            "spec": {"template": pod_template(pool, "check"),
                     "completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 600}}}


def tf_job(name: str, pool: str) -> dict[str, Any]:
    replica = {"replicas": 1, "restartPolicy": "Never", "template": pod_template(pool, "tensorflow")}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
            "spec": {"runPolicy": {"cleanPodPolicy": "None"},
                     "tfReplicaSpecs": {"Chief": json.loads(json.dumps(replica)), "Worker": replica}}}


def test_documented_roles_grant_exactly_the_documented_verbs() -> None:
    role = rules_of(rbac_document("role.yaml", "Role"))
    assert role == {
        *{("", "configmaps", v) for v in ("get", "list", "watch", "create", "update", "patch", "delete")},
        ("", "configmaps/finalizers", "update"),
        *{("", "pods", v) for v in ("get", "list", "watch", "create", "delete")},
        ("", "pods/log", "get"),
        *{("", "services", v) for v in ("get", "list", "watch", "create", "delete")},
        ("", "events", "create"), ("", "events", "patch"),
        *{("coordination.k8s.io", "leases", v) for v in ("get", "create", "patch")},
    }
    assert rules_of(rbac_document("clusterrole.yaml", "ClusterRole")) == {
        ("", "nodes", "get"), ("", "nodes", "list"), ("", "nodes", "watch")}


def test_restricted_user_has_no_permissions_of_its_own(grants: Grants, namespace: str) -> None:
    assert not grants.allowed("list", "configmaps", namespace)
    assert not grants.allowed("list", "nodes", None)


def test_broadcast_job_runs_with_the_role_and_the_node_cluster_role(
        grants: Grants, restricted_engine: Any, node_factory: Any, namespace: str) -> None:
    nodes = node_factory(2, labels={"pool": namespace})
    grants.namespace_role()
    grants.cluster_role()

    submission = restricted_engine.submit(broadcast_job("rbac-bcj", namespace))
    outcome = restricted_engine.drive(submission, "BroadcastJob")

    assert outcome.reason == "finished", outcome.message
    status = restricted_engine.status("BroadcastJob", "rbac-bcj")
    assert status["phase"] == "completed"
    assert sorted(status["nodes"]) == sorted(nodes)
    assert {r["phase"] for r in status["nodes"].values()} == {"Succeeded"}
    record = restricted_engine.record("BroadcastJob", "rbac-bcj")
    assert "airflow-broadcast.io/expires-at" in (record.metadata.annotations or {})  # written as `restricted`
    assert {e.reason for e in restricted_engine.events("BroadcastJob", "rbac-bcj")} >= {"SuccessfulCreate",
                                                                                       "JobComplete"}


def test_tf_job_runs_with_the_role_alone(
        grants: Grants, restricted_engine: Any, node_factory: Any, namespace: str,
        core_api: client.CoreV1Api) -> None:
    node_factory(2, labels={"pool": namespace})
    grants.namespace_role()  # no ClusterRole: a TFJob never reads nodes

    submission = restricted_engine.submit(tf_job("rbac-tf", namespace))
    outcome = restricted_engine.drive(submission, "TFJob")

    assert outcome.reason == "finished", outcome.message
    status = restricted_engine.status("TFJob", "rbac-tf")
    succeeded = [c for c in status["conditions"] if c["type"] == "Succeeded"]
    assert succeeded and succeeded[0]["status"] == "True"
    services = core_api.list_namespaced_service(namespace, label_selector="training.kubeflow.org/job-name=rbac-tf")
    assert sorted(s.metadata.name for s in services.items) == ["rbac-tf-chief-0", "rbac-tf-worker-0"]


def test_broadcast_job_without_the_node_cluster_role_fails_naming_nodes_and_the_rbac_doc(
        grants: Grants, restricted_engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(2, labels={"pool": namespace})
    grants.namespace_role()  # the Role only: nodes are cluster-scoped and stay forbidden

    submission = restricted_engine.submit(broadcast_job("rbac-no-nodes", namespace))
    started = time.monotonic()
    with pytest.raises(Forbidden) as failure:
        restricted_engine.drive(submission, "BroadcastJob", timeout=60)

    assert time.monotonic() - started < 30  # surfaces at once, not after the drive timeout
    error = failure.value
    assert error.status == 403
    assert error.target == "/api/v1/nodes"
    message = str(error)
    assert 'cannot list resource "nodes"' in message
    assert f'User "{USER}"' in message
    assert "docs/rbac.md" in message
    assert restricted_engine.pods("broadcastjob-name=rbac-no-nodes") == []


def test_trigger_and_operator_report_the_missing_node_permission(
        grants: Grants, restricted_engine: Any, cluster: Any, node_factory: Any, namespace: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What a DAG author sees: the trigger's `error` event, then the task's JobFailedError, both naming the fix."""
    from support.engine import kube_client

    from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
    from airflow_broadcast.operators.job_runtime import JobFailedError, conclude
    from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger, JobTriggerArgs

    opened: list[Any] = []

    async def as_restricted(self: BroadcastKubernetesHook) -> Any:
        opened.append(await kube_client(cluster.restricted_kubeconfig))
        return opened[-1]

    async def close_opened() -> None:
        while opened:
            await opened.pop().close()

    monkeypatch.setattr(BroadcastKubernetesHook, "kube_client", as_restricted)
    node_factory(1, labels={"pool": namespace})
    grants.namespace_role()
    submission = restricted_engine.submit(broadcast_job("rbac-trigger", namespace))
    trigger = JobReconcileTrigger(kind="BroadcastJob", namespace=namespace, record_name=submission.name,
                                  uid=submission.uid)

    async def first_event() -> Any:
        try:
            async for event in trigger.run():
                return event.payload
            return None
        finally:
            await close_opened()

    payload = asyncio.run(asyncio.wait_for(first_event(), 60))

    assert payload["status"] == "error"
    assert "403 Forbidden" in payload["message"]
    assert 'cannot list resource "nodes"' in payload["message"]
    assert "docs/rbac.md" in payload["message"]
    args = JobTriggerArgs.from_kwargs({"kind": "BroadcastJob", "namespace": namespace,
                                       "record_name": submission.name, "uid": submission.uid})
    try:
        with pytest.raises(JobFailedError, match=r'(?s)rbac-trigger: .*"nodes".*docs/rbac\.md'):
            conclude(args, payload["status"], payload["message"], trigger.log)
    finally:
        asyncio.run(close_opened())


GANG = {"gang_scheduler": "scheduler-plugins", "gang_scheduler_name": "default-scheduler"}


def test_documented_tfjob_extras_grant_podgroups_localqueues_and_priorityclasses() -> None:
    assert rules_of(rbac_document("tfjob-extras.yaml", "Role")) == {
        *{(g, "podgroups", v) for g in ("scheduling.x-k8s.io", "scheduling.volcano.sh")
          for v in ("get", "list", "watch", "create", "delete")},
        ("kueue.x-k8s.io", "localqueues", "get"),
    }
    assert rules_of(rbac_document("tfjob-extras.yaml", "ClusterRole")) == {
        ("scheduling.k8s.io", "priorityclasses", v) for v in ("get", "list", "watch")}


def test_gang_scheduled_tf_job_runs_with_the_role_and_the_tfjob_extras(
        grants: Grants, restricted_engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(2, labels={"pool": namespace})
    grants.namespace_role()
    grants.namespace_role("tfjob-extras.yaml")  # no PriorityClass ClusterRole: priorities count as 0

    submission = restricted_engine.submit(tf_job("rbac-gang", namespace))
    outcome = restricted_engine.drive(submission, "TFJob", options=GANG)

    assert outcome.reason == "finished", outcome.message
    events = {e.reason for e in restricted_engine.events("TFJob", "rbac-gang")}
    assert {"JobTerminated", "SuccessfulDeletePodGroup"} <= events


def test_gang_scheduling_without_the_podgroup_permission_stops_naming_it(
        grants: Grants, restricted_engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    grants.namespace_role()

    submission = restricted_engine.submit(tf_job("rbac-nogang", namespace))
    outcome = restricted_engine.drive(submission, "TFJob", options=GANG)

    assert outcome.reason == "error"
    assert "cannot watch PodGroups for gang scheduling" in outcome.message and "403" in outcome.message
    assert core_api.list_namespaced_pod(namespace).items == [], "nothing was created"


def test_gang_scheduling_without_the_podgroup_permission_fails_before_the_job_is_submitted(
        grants: Grants, restricted_engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    from airflow_broadcast.exceptions import PodGroupApiError
    from airflow_broadcast.operators.tf_job import TFJobOperator

    grants.namespace_role()
    operator = TFJobOperator(task_id="train", manifest=tf_job("rbac-early", namespace), tf_options=GANG)
    job = operator.parse(operator.manifest, namespace, "default")

    with pytest.raises(PodGroupApiError, match=r"docs/rbac/tfjob-extras\.yaml\. Nothing was created"):
        restricted_engine.run_async(lambda kube: operator.before_submit(kube, job))
    assert restricted_engine.record("TFJob", "rbac-early") is None
