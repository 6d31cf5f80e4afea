"""Least privilege on the real cluster: the documented Role and ClusterRole are enough, and nodes are needed.

The admin identity applies `docs/rbac/role.yaml` (in the test's namespace) and
`docs/rbac/clusterrole.yaml` under unique names and binds them to the user
`restricted`; the engine then runs jobs as that user.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from kubernetes import client
from support.rbac_grants import USER, Grants, broadcast_job, rbac_document, rules_of, tf_job

from airflow_broadcast.cluster.api_errors import Forbidden

pytestmark = pytest.mark.cluster


def test_documented_roles_grant_exactly_the_documented_verbs() -> None:
    role = rules_of(rbac_document("role.yaml", "Role"))
    assert role == {
        *{("", "configmaps", v) for v in ("get", "list", "watch", "create", "update", "delete")},
        ("", "configmaps/finalizers", "update"),
        *{("", "pods", v) for v in ("get", "list", "watch", "create", "delete")},
        ("", "pods/log", "get"),
        *{("", "services", v) for v in ("get", "list", "watch", "create", "delete")},
        *{("", "events", v) for v in ("create", "list", "watch")},
        *{("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")},
    }
    assert rules_of(rbac_document("clusterrole.yaml", "ClusterRole")) == {("", "nodes", "list"), ("", "nodes", "watch")}


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
    from support.local_hook import LocalHook

    from airflow_broadcast.operators.job_runtime import JobFailedError, conclude
    from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger, JobTriggerArgs

    hook = LocalHook(cluster.restricted_kubeconfig, monkeypatch)
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
            await hook.close()

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
        hook.close_now()


GANG = {"gang_scheduler": "scheduler-plugins", "gang_scheduler_name": "default-scheduler"}


def test_documented_tfjob_extras_grant_podgroups_localqueues_and_priorityclasses() -> None:
    assert rules_of(rbac_document("tfjob-extras.yaml", "Role")) == {
        *{(g, "podgroups", v) for g in ("scheduling.x-k8s.io", "scheduling.volcano.sh")
          for v in ("get", "list", "watch", "create", "delete")},
        ("kueue.x-k8s.io", "localqueues", "get"),
    }
    assert rules_of(rbac_document("tfjob-extras.yaml", "ClusterRole")) == {
        ("scheduling.k8s.io", "priorityclasses", v) for v in ("list", "watch")}


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


def test_the_connection_warm_up_needs_no_grant(restricted_engine: Any) -> None:
    """A ramp's warm-up GETs /version, which every identity may read (the default system:public-info-viewer),
    so the documented roles need no rule for it: user `restricted`, with no role at all, is answered."""
    from airflow_broadcast.cluster.connection_warmup import WARM_PATH, warm_connections

    async def body(kube: Any) -> tuple[int, dict[str, Any]]:
        return await warm_connections(kube, 6), await kube.get(WARM_PATH)

    answered, version = restricted_engine.run_async(body)
    assert answered == 6
    assert version["major"] == "1" and version["gitVersion"].startswith("v1.")
