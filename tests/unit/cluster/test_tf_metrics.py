"""M8: counters reach Airflow's Stats with upstream's names and labels; conflicts and broken sinks are safe."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from airflow_broadcast.cluster import api_errors as e
from airflow_broadcast.cluster import job_metrics
from airflow_broadcast.cluster.job_events import EventRecorder
from airflow_broadcast.cluster.plan_executor import PlanExecutor
from airflow_broadcast.hooks import metrics as airflow_metrics
from airflow_broadcast.hooks.off_loop_writer import writer
from airflow_broadcast.reconcilers.plan import JobEvent, Plan

RECORD = {"metadata": {"name": "tfjob-x", "namespace": "ns", "uid": "u", "resourceVersion": "1"}, "data": {}}
SUCCEEDED = JobEvent("Normal", "TFJobSucceeded", "TFJob ns/x successfully completed.")


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int, dict[str, str]]] = []

    def __call__(self, metric: str, amount: int, tags: Mapping[str, str]) -> None:
        self.calls.append((metric, amount, dict(tags)))


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    sink = Recorder()
    job_metrics.add_sink(sink)
    yield sink
    job_metrics.remove_sink(sink)


@pytest.mark.parametrize(("in_triggerer", "target"), [(False, airflow_metrics.WORKER_STATS),
                                                     (True, airflow_metrics.TRIGGERER_STATS)])
def test_M8_counters_go_to_airflow_stats_named_and_tagged_like_upstream(monkeypatch: pytest.MonkeyPatch,
                                                                        in_triggerer: bool, target: str) -> None:
    """Through Airflow's public stats modules: the Task SDK's on a worker, core's in a triggerer.

    In the triggerer the writer thread sends them, never the caller (the shared loop).
    """
    assert writer.flushed(10), "counters queued by earlier tests go out before the stats modules are replaced"
    sent: dict[str, list[tuple[str, int, dict[str, str]]]] = {}
    threads: set[str] = set()
    for module in (airflow_metrics.WORKER_STATS, airflow_metrics.TRIGGERER_STATS):
        calls = sent.setdefault(module, [])

        def incr(stat: str, count: int | None = None, rate: float | None = None, *,
                 tags: dict[str, str] | None = None, calls: list[Any] = calls) -> None:
            calls.append((stat, count, dict(tags or {})))
            threads.add(threading.current_thread().name)

        monkeypatch.setattr(importlib.import_module(module), "incr", incr)
    monkeypatch.setattr(airflow_metrics, "_in_triggerer", in_triggerer)
    airflow_metrics.install_airflow_metrics()
    airflow_metrics.install_airflow_metrics()  # importing twice must not double-count
    job_metrics.count(job_metrics.JOBS_SUCCESSFUL, "TFJob", "ml")
    job_metrics.count(job_metrics.CREATED_PODS, "BroadcastJob", "ops", 3)
    job_metrics.count(job_metrics.DELETED_PODS, "TFJob", "ml", 0)
    assert writer.flushed(10)

    assert threads == {"airflow-broadcast-writer" if in_triggerer else threading.current_thread().name}
    assert sent.pop(target) == [
        ("airflow_broadcast.tensorflow.jobs_successful", 1, {"job_namespace": "ml", "framework": "tensorflow"}),
        ("airflow_broadcast.broadcastjob.created_pods", 3, {"job_namespace": "ops", "framework": "broadcastjob"}),
    ]
    assert list(sent.values()) == [[]], "the other component's stats module gets nothing"


def test_M8_a_failing_sink_never_fails_the_job(recorder: Recorder) -> None:
    def broken(metric: str, amount: int, tags: Mapping[str, str]) -> None:
        raise OSError("statsd is down")

    job_metrics.add_sink(broken)
    try:
        job_metrics.count(job_metrics.JOBS_FAILED, "TFJob", "ml")
    finally:
        job_metrics.remove_sink(broken)
    assert [c[0] for c in recorder.calls] == [job_metrics.JOBS_FAILED], "later sinks still get the counter"


class Api:
    def __init__(self, conflict: bool) -> None:
        self.conflict = conflict

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.conflict:
            raise e.Conflict(409, "Conflict", "the object has been modified")
        return body

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return body


@pytest.mark.parametrize(("conflict", "expected"), [(False, [job_metrics.JOBS_SUCCESSFUL]), (True, [])])
async def test_M8_a_transition_counts_only_when_its_status_write_lands(recorder: Recorder, conflict: bool,
                                                                       expected: list[str]) -> None:
    executor = PlanExecutor(Api(conflict), "ns", "u", kind="TFJob")  # type: ignore[arg-type]
    plan = Plan(status={"conditions": []}, events=(SUCCEEDED, JobEvent("Normal", "ExitedWithCode", "...")))
    result = await executor.apply(plan, RECORD, EventRecorder(Api(False), RECORD))  # type: ignore[arg-type]
    assert result.conflict is conflict
    assert [c[0] for c in recorder.calls] == expected
