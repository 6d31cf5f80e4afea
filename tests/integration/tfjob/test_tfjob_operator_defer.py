"""TFJobOperator's worker side against the real cluster: it submits, then defers with a backstop timeout.

Airflow fails a deferred task whose trigger outlives `defer(timeout=...)` (TaskDeferralTimeout).
`airflow dags test` runs triggers inline and ignores that timeout, so it is checked here on the
TaskDeferred the operator raises. Checklist K1/K5/I4: the deadline does not run while a job is
suspended, and it counts from the resume.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.sdk.exceptions import TaskDeferred
from kubernetes import client
from tfjob_it_support import KIND, replica, tf_manifest

from airflow_broadcast.operators.tf_job import TFJobOperator

pytestmark = pytest.mark.cluster


@pytest.fixture(autouse=True)
def kubernetes_default(monkeypatch: pytest.MonkeyPatch, kubeconfig: str) -> None:
    """The `kubernetes_default` connection, from the environment (no Airflow metadata DB needed)."""
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(
        {"conn_type": "kubernetes", "extra": {"kube_config_path": kubeconfig}}))


def execute_until_deferred(manifest: dict[str, Any], namespace: str) -> tuple[TaskDeferred, dict[str, Any]]:
    operator = TFJobOperator(task_id="tf", manifest=manifest, namespace=namespace, deferrable=True)
    pushed: dict[str, Any] = {}
    ti = SimpleNamespace(dag_id="tf_defer", task_id="tf", run_id="manual__1", map_index=-1,
                         start_date=datetime.now(UTC), xcom_push=lambda key, value: pushed.update({key: value}))
    with pytest.raises(TaskDeferred) as raised:
        operator.execute({"ti": ti})
    return raised.value, pushed


def test_I1_operator_submits_then_defers_with_a_backstop_past_the_deadline(engine: Any, namespace: str) -> None:
    manifest = tf_manifest("bounded", {"Worker": replica(1)}, run_policy={"activeDeadlineSeconds": 3})
    deferred, pushed = execute_until_deferred(manifest, namespace)

    record = engine.record(KIND, "bounded")
    assert record is not None
    assert pushed["job"] == {"kind": KIND, "name": "bounded", "namespace": namespace, "record": "tfjob-bounded",
                             "uid": record.metadata.uid}
    kwargs = deferred.trigger.serialize()[1]
    assert (kwargs["kind"], kwargs["record_name"], kwargs["uid"]) == (KIND, "tfjob-bounded", record.metadata.uid)
    assert deferred.timeout is not None and deferred.timeout.total_seconds() > 3, \
        "the backstop never cuts a job short of its own deadline"


def test_K5_I4_a_suspended_job_is_not_timed_out_by_its_active_deadline(engine: Any, namespace: str,
                                                                       core_api: client.CoreV1Api) -> None:
    manifest = tf_manifest("queued", {"Worker": replica(2)},
                           run_policy={"suspend": True, "activeDeadlineSeconds": 3})
    deferred, _ = execute_until_deferred(manifest, namespace)

    assert engine.status(KIND, "queued") == {}, "submitted, not reconciled yet"
    assert deferred.timeout is None, (
        f"a suspended job has no running deadline, yet the task would time out after {deferred.timeout}")
