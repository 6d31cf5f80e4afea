"""Operator and sensor switches become the kind's options dataclass once, and travel in the trigger."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.sdk.exceptions import TaskDeferred

from airflow_broadcast.operators import job_operator
from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.reconcilers.broadcast_job.reconciler import BroadcastOptions
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.reconcilers.tf_job.options import TFJobOptions
from airflow_broadcast.sensors.broadcast_job import BroadcastJobSensor
from airflow_broadcast.sensors.tf_job import TFJobSensor
from airflow_broadcast.specs.timestamps import to_rfc3339
from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger

BCJ = {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": "prune"},
       "spec": {"completionPolicy": {"activeDeadlineSeconds": 600},
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}}}


def test_broadcast_switches_map_to_the_dataclass_with_its_defaults() -> None:
    assert BroadcastJobOperator(task_id="t", manifest={}).job_options == BroadcastOptions()
    assert BroadcastJobSensor(task_id="s", job_name="j").job_options == BroadcastOptions()
    op = BroadcastJobOperator(task_id="t", manifest={}, assign_pods_by_scheduler=False, kruise_compat=True)
    sensor = BroadcastJobSensor(task_id="s", job_name="j", assign_pods_by_scheduler=False, kruise_compat=True)
    assert op.job_options == sensor.job_options == BroadcastOptions(assign_by_scheduler=False, kruise_compat=True)
    assert (op.assign_pods_by_scheduler, op.kruise_compat) == (False, True)
    cleaner = BroadcastJobOperator(task_id="t", manifest={}, cleanup_succeeded_pods=True)
    assert cleaner.job_options == BroadcastOptions(cleanup_succeeded_pods=True)
    assert cleaner.cleanup_succeeded_pods is True


def test_tf_switches_map_to_the_dataclass_and_compat_turns_on_the_three_v1_9_behaviours() -> None:
    assert TFJobOperator(task_id="t", manifest={}).job_options == TFJobOptions()
    op = TFJobOperator(task_id="t", manifest={}, cluster_domain="c", compat=True,
                       tf_options={"sparse_ps_empty_list": True, "compat_recreate_succeeded": False})
    assert op.job_options == TFJobOptions(cluster_domain="c", compat_succeeded_then_failed=True,
                                          compat_exitcode_ignores_backoff=True, sparse_ps_empty_list=True)
    assert TFJobSensor(task_id="s", job_name="j", cluster_domain="c", compat=True,
                       tf_options={"sparse_ps_empty_list": True, "compat_recreate_succeeded": False}
                       ).job_options == op.job_options


def test_an_unknown_tf_switch_fails_when_the_dag_is_parsed() -> None:
    with pytest.raises(ValueError, match=r"unknown TFJobOptions switch\(es\) gang_schedular"):
        TFJobOperator(task_id="t", manifest={}, tf_options={"gang_schedular": "volcano"})


def _context() -> dict[str, Any]:
    pushed: dict[str, Any] = {}

    def xcom_push(key: str, value: Any) -> None:
        pushed[key] = value

    ti = SimpleNamespace(dag_id="d", task_id="t", run_id="r", map_index=-1, start_date=None, xcom_push=xcom_push)
    return {"ti": ti, "pushed": pushed}


def _submitted(monkeypatch: pytest.MonkeyPatch, status: dict[str, Any]) -> None:
    async def submit(self: Any, job: Any, submitter: str) -> tuple[JobRecord, bool]:
        assert submitter == "d/t/r/-1"
        return JobRecord(name="bcj-prune", namespace=job.namespace, uid="u-1", owner_reference={},
                         status=status, job_name=job.name, manifest=job.manifest), False

    monkeypatch.setattr(job_operator.ReconciledJobOperator, "_submit", submit)


def test_the_deferred_trigger_carries_the_options_and_the_deferral_is_bounded_by_the_active_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    started = time.time() - 100
    _submitted(monkeypatch, {"startTime": to_rfc3339(started)})
    op = BroadcastJobOperator(task_id="t", manifest=BCJ, namespace="ops", kruise_compat=True, deferrable=True)
    context = _context()
    with pytest.raises(TaskDeferred) as deferred:
        op.execute(context)

    trigger = deferred.value.trigger
    assert isinstance(trigger, JobReconcileTrigger)
    args = trigger.args
    assert (args.kind, args.namespace, args.record_name, args.uid) == ("BroadcastJob", "ops", "bcj-prune", "u-1")
    assert args.options == BroadcastOptions(kruise_compat=True)
    assert args.task_key == {"dag_id": "d", "task_id": "t", "run_id": "r", "map_index": -1}
    assert args.on_kill_action == "delete_active_pods"
    timeout = deferred.value.timeout
    assert timeout is not None and 500 + 60 - 5 <= timeout.total_seconds() <= 500 + 60 + 1
    assert context["pushed"]["job"] == {"kind": "BroadcastJob", "name": "prune", "namespace": "ops",
                                        "uid": "u-1", "record": "bcj-prune"}


def test_a_job_that_is_not_waited_for_returns_its_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    _submitted(monkeypatch, {})
    op = BroadcastJobOperator(task_id="t", manifest=BCJ, namespace="ops", wait_for_completion=False)
    assert op.execute(_context()) == {"kind": "BroadcastJob", "name": "prune", "namespace": "ops", "uid": "u-1",
                                      "record": "bcj-prune", "phase": "submitted"}


def test_execute_complete_concludes_the_record_the_event_names(monkeypatch: pytest.MonkeyPatch) -> None:
    concluded: list[Any] = []

    def conclude(args: Any, outcome: str, message: str, log: Any, **kw: Any) -> dict[str, str]:
        concluded.append((args, outcome, message))
        return {"phase": "completed"}

    monkeypatch.setattr(job_operator, "conclude", conclude)
    op = BroadcastJobOperator(task_id="t", manifest=BCJ, on_kill_action="keep", assign_pods_by_scheduler=False)
    event = {"status": "finished", "message": "", "kind": "BroadcastJob", "namespace": "ops",
             "record_name": "bcj-prune", "uid": "u-1", "phase": "completed"}
    assert op.execute_complete(_context(), event) == {"phase": "completed"}
    ((args, outcome, _),) = concluded
    assert (args.record_name, args.uid, args.on_kill_action, outcome) == ("bcj-prune", "u-1", "keep", "finished")
    assert args.options == BroadcastOptions(assign_by_scheduler=False)
