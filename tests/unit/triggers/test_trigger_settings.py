"""The trigger runs with the triggerer's `[airflow_broadcast]` settings, not with constants or its kwargs."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_broadcast.cluster.reconcile_loop import LoopOutcome, LoopReason
from airflow_broadcast.hooks import metrics
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.triggers import job_reconcile
from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger

KWARGS: dict[str, Any] = {"kind": "TFJob", "namespace": "ml", "record_name": "tfjob-x", "uid": "u-1"}


class _Client:
    requests_sent = 3


class _Hook:
    async def kube_client(self) -> _Client:
        return _Client()


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def loop(client: Any, driver: Any, namespace: str, record_name: str, uid: str, **kw: Any) -> LoopOutcome:
        seen["loop"] = kw
        record = JobRecord(name=record_name, namespace=namespace, uid=uid, owner_reference={}, status={})
        return LoopOutcome(LoopReason.FINISHED, record)

    async def sweep(client: Any, namespace: str, **kw: Any) -> None:
        seen["sweep"] = kw

    monkeypatch.setattr(job_reconcile, "run_reconcile_loop", loop)
    monkeypatch.setattr(job_reconcile, "sweep_in_background", sweep)
    monkeypatch.setattr(JobReconcileTrigger, "_hook", lambda self: _Hook())
    monkeypatch.setattr(metrics, "_in_triggerer", False)
    return seen


async def test_defaults_apply_without_a_section(calls: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    events = [e async for e in JobReconcileTrigger(**KWARGS).run()]
    assert [e.payload["status"] for e in events] == ["finished"]  # one event; the sweep is awaited after it
    assert calls["loop"]["thread_threshold"] == 200
    assert calls["sweep"] == {"every": 60.0, "unread_grace": 600.0}
    assert "event loop lag" not in capsys.readouterr().out


async def test_the_triggerers_settings_reach_the_loop_the_sweeper_and_the_lag_log(
        calls: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for option, value in {"THREAD_THRESHOLD": "7", "TTL_SWEEP_SECONDS": "5", "UNREAD_RESULT_GRACE_SECONDS": "90",
                          "MEASURE_LOOP_LAG": "True"}.items():
        monkeypatch.setenv(f"AIRFLOW__AIRFLOW_BROADCAST__{option}", value)
    [e async for e in JobReconcileTrigger(**KWARGS).run()]
    assert calls["loop"]["thread_threshold"] == 7
    assert calls["sweep"] == {"every": 5.0, "unread_grace": 90.0}
    logged = capsys.readouterr().out
    assert "event loop lag while reconciling" in logged and "(3 API requests)" in logged


async def test_running_a_trigger_routes_counters_to_the_triggerers_stats(calls: dict[str, Any]) -> None:
    assert metrics.airflow_stats().__name__ == metrics.WORKER_STATS  # type: ignore[attr-defined]
    [e async for e in JobReconcileTrigger(**KWARGS).run()]
    assert metrics.airflow_stats().__name__ == metrics.TRIGGERER_STATS  # type: ignore[attr-defined]
