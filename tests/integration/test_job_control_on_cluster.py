"""Timeout and kill cleanup on the real cluster: only pods the job record controls are deleted."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from support.local_hook import LocalHook

from airflow_broadcast.reconcilers.observed import RECORD_UID_LABEL

pytestmark = pytest.mark.cluster

FOREVER = {"nodeSelector": {}, "restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]}


def running_job(name: str, pool: str) -> dict[str, Any]:
    """A BroadcastJob whose pods run until deleted (no simulated result)."""
    spec = {**FOREVER, "nodeSelector": {"pool": pool}}
    return {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": name},
            "spec": {"template": {"spec": spec}, "completionPolicy": {"type": "Never"}}}


def impostor(name: str, uid: str, pool: str, owner: dict[str, Any] | None) -> dict[str, Any]:
    """A pod that copies the job's uid label, owned by someone else (or nobody)."""
    meta: dict[str, Any] = {"name": name, "labels": {RECORD_UID_LABEL: uid}}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"metadata": meta, "spec": {**FOREVER, "nodeSelector": {"pool": pool}}}


@pytest.fixture
def task_as_admin(kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The task's cluster calls go to the local cluster (no Airflow connection needed)."""
    hook = LocalHook(kubeconfig, monkeypatch)
    yield
    hook.close_now()


def wait_for(check: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)
    return result


def test_timeout_cleanup_deletes_the_jobs_pods_and_spares_labelled_pods_it_does_not_control(
        engine: Any, node_factory: Any, namespace: str, core_api: client.CoreV1Api, task_as_admin: None) -> None:
    from airflow_broadcast.operators.job_runtime import JobTimeoutError, conclude
    from airflow_broadcast.reconcilers.broadcast_job.reconciler import BroadcastOptions
    from airflow_broadcast.triggers.job_reconcile import JobTriggerArgs

    node_factory(2, labels={"pool": namespace})
    submission = engine.submit(running_job("kill", namespace))
    engine.drive(submission, "BroadcastJob", single_pass=True)
    ours = wait_for(lambda: sorted(p.metadata.name for p in engine.pods(f"{RECORD_UID_LABEL}={submission.uid}")))
    other = core_api.create_namespaced_config_map(namespace, {"metadata": {"name": "someone-else"}})
    foreign = {"apiVersion": "v1", "kind": "ConfigMap", "name": "someone-else", "uid": other.metadata.uid,
               "controller": True}
    core_api.create_namespaced_pod(namespace, impostor("owned-elsewhere", submission.uid, namespace, foreign))
    core_api.create_namespaced_pod(namespace, impostor("owned-by-nobody", submission.uid, namespace, None))

    args = JobTriggerArgs(kind="BroadcastJob", namespace=namespace, record_name=submission.name, uid=submission.uid,
                          options=BroadcastOptions())
    with pytest.raises(JobTimeoutError, match="deadline passed"):
        conclude(args, "timeout", "the task's execution deadline passed", logging.getLogger("test.job_control"))

    left = {p.metadata.name: p.metadata.deletion_timestamp
            for p in engine.pods(f"{RECORD_UID_LABEL}={submission.uid}")}
    assert len(ours) == 2
    assert left.get("owned-elsewhere", "gone") is None and left.get("owned-by-nobody", "gone") is None
    assert all(left.get(name) is not None for name in ours if name in left)  # ours are deleted or terminating

