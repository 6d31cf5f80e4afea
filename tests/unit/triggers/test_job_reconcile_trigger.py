"""JobReconcileTrigger: kwargs are identifiers only and round-trip; on_kill respects the reassignment guard."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.trigger_stubs import stub_trigger_cluster

from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger

KWARGS: dict[str, Any] = {
    "kind": "BroadcastJob", "namespace": "ops", "record_name": "bcj-prune", "uid": "u-1",
    "kubernetes_conn_id": "k8s", "cluster_context": None, "deadline": 1800000000.0,
    "options": {"kruise_compat": False, "assign_by_scheduler": True, "cleanup_succeeded_pods": False},
    "resync_seconds": 30.0,
    "on_kill_action": "delete_active_pods", "task_key": {"dag_id": "d", "task_id": "t", "run_id": "r"},
}


def test_serialize_round_trips_and_holds_no_credentials() -> None:
    classpath, kwargs = JobReconcileTrigger(**KWARGS).serialize()
    assert classpath == "airflow_broadcast.triggers.job_reconcile.JobReconcileTrigger"
    assert kwargs == KWARGS
    assert JobReconcileTrigger(**kwargs).serialize() == (classpath, kwargs)
    text = json.dumps(kwargs).lower()
    for secret in ("token", "kube_config", "config_dict", "password", "certificate", "connection_extras"):
        assert secret not in text


def test_kwargs_written_before_an_option_existed_load_with_its_default() -> None:
    older = {**KWARGS, "options": {"kruise_compat": True, "assign_by_scheduler": True}}
    options = JobReconcileTrigger(**older).args.options
    assert (options.kruise_compat, options.cleanup_succeeded_pods) == (True, False)


@pytest.fixture
def stop_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    calls: list[tuple[str, str, str]] = []

    async def fake_stop(client: Any, namespace: str, record: str, uid: str) -> int:
        calls.append((namespace, record, uid))
        return 2

    class _Hook:
        async def kube_client(self) -> object:
            return object()

    monkeypatch.setattr("airflow_broadcast.cluster.job_control.stop_active_children", fake_stop)
    monkeypatch.setattr(JobReconcileTrigger, "_hook", lambda self: _Hook())
    return calls


async def test_on_kill_deletes_active_pods_after_a_user_action(stop_calls: list[Any],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    async def not_deferred(self: JobReconcileTrigger) -> bool:
        return False

    monkeypatch.setattr(JobReconcileTrigger, "_still_deferred", not_deferred)
    await JobReconcileTrigger(**KWARGS).on_kill()
    assert stop_calls == [("ops", "bcj-prune", "u-1")]


async def test_on_kill_does_nothing_when_the_task_is_still_deferred(stop_calls: list[Any],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Airflow 3.3 calls on_kill on a triggerer that lost the trigger by reassignment; the job must live on."""

    async def deferred(self: JobReconcileTrigger) -> bool:
        return True

    monkeypatch.setattr(JobReconcileTrigger, "_still_deferred", deferred)
    await JobReconcileTrigger(**KWARGS).on_kill()
    assert stop_calls == []


async def test_on_kill_keep_leaves_the_pods(stop_calls: list[Any]) -> None:
    await JobReconcileTrigger(**{**KWARGS, "on_kill_action": "keep"}).on_kill()
    assert stop_calls == []


async def test_still_deferred_reads_the_task_state(monkeypatch: pytest.MonkeyPatch) -> None:
    class _RTI:
        @staticmethod
        def get_task_states(dag_id: str, task_ids: list[str], run_ids: list[str], map_index: int) -> dict[str, Any]:
            assert (dag_id, task_ids, run_ids, map_index) == ("d", ["t"], ["r"], -1)
            return {"r": {"t": "deferred"}}

    from airflow.sdk.execution_time import task_runner

    monkeypatch.setattr(task_runner, "RuntimeTaskInstance", _RTI)
    assert await JobReconcileTrigger(**KWARGS)._still_deferred() is True


@pytest.mark.parametrize(("answer", "deferred"), [({"t_3": "deferred", "t": "failed"}, True),
                                                 ({"t_3": "failed", "t_2": "deferred"}, False)])
async def test_still_deferred_reads_a_mapped_instance_under_its_airflow_name(
        monkeypatch: pytest.MonkeyPatch, answer: dict[str, str], deferred: bool) -> None:
    """Airflow answers for a mapped instance under "<task_id>_<map_index>": a reassigned trigger of
    `.expand()` index 3 must see its own state, or its on_kill would delete a live job's pods."""
    class _RTI:
        @staticmethod
        def get_task_states(dag_id: str, task_ids: list[str], run_ids: list[str], map_index: int) -> dict[str, Any]:
            assert map_index == 3
            return {"r": answer}

    from airflow.sdk.execution_time import task_runner

    monkeypatch.setattr(task_runner, "RuntimeTaskInstance", _RTI)
    kwargs = {**KWARGS, "task_key": {"dag_id": "d", "task_id": "t", "run_id": "r", "map_index": 3}}
    assert await JobReconcileTrigger(**kwargs)._still_deferred() is deferred


async def test_an_api_error_becomes_an_error_event_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_broadcast.cluster.api_errors import Forbidden

    class _Hook:
        async def kube_client(self) -> object:
            raise Forbidden(403, "Forbidden", 'nodes is forbidden: User "x" cannot list resource "nodes"',
                            verb="GET", target="/api/v1/nodes")

    monkeypatch.setattr(JobReconcileTrigger, "_hook", lambda self: _Hook())
    event = await JobReconcileTrigger(**KWARGS).run().__anext__()
    assert event.payload["status"] == "error"
    assert "cannot list resource \"nodes\"" in event.payload["message"]
    assert "docs/rbac.md" in event.payload["message"]


async def test_the_loop_gets_the_kinds_options_and_the_event_names_outcome_and_phase(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_broadcast.cluster.reconcile_loop import LoopOutcome, LoopReason
    from airflow_broadcast.reconcilers.broadcast_job.reconciler import BroadcastOptions
    from airflow_broadcast.reconcilers.observed import JobRecord

    record = JobRecord(name="bcj-prune", namespace="ops", uid="u-1", owner_reference={}, status={"phase": "completed"})
    seen: dict[str, Any] = {}

    async def loop(client: Any, driver: Any, namespace: str, record_name: str, uid: str, **kw: Any) -> LoopOutcome:
        seen.update(driver=driver, target=(namespace, record_name, uid), **kw)
        return LoopOutcome(LoopReason.FINISHED, record)

    stub_trigger_cluster(monkeypatch, loop)
    event = await JobReconcileTrigger(**KWARGS).run().__anext__()

    assert event.payload == {"status": "finished", "message": "", "kind": "BroadcastJob", "namespace": "ops",
                             "record_name": "bcj-prune", "uid": "u-1", "phase": "completed"}
    assert seen["driver"].kind.options == BroadcastOptions(assign_by_scheduler=True, kruise_compat=False)
    assert seen["target"] == ("ops", "bcj-prune", "u-1")
    assert (seen["deadline"], seen["resync"]) == (1800000000.0, 30.0)
