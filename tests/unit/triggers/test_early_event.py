"""A finished job's event fires before the finishing pass's writes, where the runner iterates on after it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from support.trigger_stubs import stub_trigger_cluster

from airflow_broadcast.cluster.reconcile_loop import LoopOutcome, LoopReason
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.triggers import early_event
from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger

KWARGS: dict[str, Any] = {"kind": "BroadcastJob", "namespace": "ops", "record_name": "bcj-prune", "uid": "u-1"}
BEFORE = JobRecord(name="bcj-prune", namespace="ops", uid="u-1", owner_reference={}, status={"phase": "running"})
AFTER = JobRecord(name="bcj-prune", namespace="ops", uid="u-1", owner_reference={}, status={"phase": "completed"})


class FakeLoop:
    """A reconcile loop that announces the finished job, then waits on `writes` before it returns."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.writes = asyncio.Event()
        self.fail = fail
        self.announce_given: bool | None = None
        self.returned = False

    async def __call__(self, *args: Any, announce: Any = None, **kwargs: Any) -> LoopOutcome:
        self.announce_given = announce is not None
        if announce is not None:
            announce(LoopOutcome(LoopReason.FINISHED, AFTER))
        await self.writes.wait()
        if self.fail is not None:
            raise self.fail
        self.returned = True
        return LoopOutcome(LoopReason.FINISHED, AFTER)


@pytest.fixture
def fake_loop(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLoop]:
    loop = FakeLoop()
    stub_trigger_cluster(monkeypatch, loop)
    yield loop


async def test_the_event_goes_before_the_writes_and_the_trigger_ends_after_them(
        fake_loop: FakeLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(JobReconcileTrigger, "resumed_after_event", True)
    trigger = JobReconcileTrigger(**KWARGS)
    events = trigger.run()

    first = await asyncio.wait_for(events.__anext__(), 5)
    assert first.payload["status"] == "finished" and first.payload["phase"] == "completed"
    assert not fake_loop.returned and trigger.fired  # the writes are still to come
    rest = asyncio.ensure_future(events.__anext__())
    await asyncio.sleep(0.05)
    assert not rest.done()  # the trigger waits for its writes
    fake_loop.writes.set()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(rest, 5)  # and fires no second event
    assert fake_loop.returned


async def test_a_failed_write_after_the_event_is_logged_and_fires_no_second_event(
        fake_loop: FakeLoop, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from airflow_broadcast.cluster.api_errors import ServerError

    monkeypatch.setattr(JobReconcileTrigger, "resumed_after_event", True)
    fake_loop.fail = ServerError(500, "InternalError", "etcd leader changed", verb="PUT", target="/api/v1/x")
    events = JobReconcileTrigger(**KWARGS).run()
    assert (await events.__anext__()).payload["status"] == "finished"
    fake_loop.writes.set()
    with pytest.raises(StopAsyncIteration):
        await events.__anext__()
    shown = capsys.readouterr()
    assert "last writes failed (ServerError" in shown.out + shown.err


async def test_a_runner_that_stops_at_the_first_event_gets_it_after_the_writes(fake_loop: FakeLoop) -> None:
    events = JobReconcileTrigger(**KWARGS).run()  # not inside Airflow's triggerer (as `airflow dags test`)
    first = asyncio.ensure_future(events.__anext__())
    await asyncio.sleep(0.05)
    assert not first.done() and fake_loop.announce_given is False
    fake_loop.writes.set()
    assert (await asyncio.wait_for(first, 5)).payload["phase"] == "completed"
    assert fake_loop.returned


async def test_ending_the_task_in_the_triggerer_reads_the_written_record_so_it_never_fires_early(
        fake_loop: FakeLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(JobReconcileTrigger, "resumed_after_event", True)
    trigger = JobReconcileTrigger(**KWARGS, finish_in_triggerer=True)
    assert not trigger._fires_early()


async def test_closing_the_trigger_after_its_early_event_stops_the_writes(fake_loop: FakeLoop,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(JobReconcileTrigger, "resumed_after_event", True)
    events = JobReconcileTrigger(**KWARGS).run()
    await events.__anext__()
    await events.aclose()  # the triggerer cancels it: the loop task must not outlive it
    await asyncio.sleep(0)
    assert not fake_loop.returned
    assert not [t for t in asyncio.all_tasks() if "reconcile" in repr(t.get_coro()) and not t.done()]


async def test_on_kill_after_the_early_event_stops_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    stopped: list[str] = []

    async def stop(self: Any, client: Any) -> str:
        stopped.append("stop")
        return "stopped"

    monkeypatch.setattr(JobReconcileTrigger, "_stop", stop)
    monkeypatch.setattr(JobReconcileTrigger, "_still_deferred", lambda self: asyncio.sleep(0, False))
    trigger = JobReconcileTrigger(**KWARGS)
    trigger.fired = True
    await trigger.on_kill()
    assert stopped == []


def test_only_airflows_trigger_runner_counts_as_resuming_after_the_event(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.jobs.triggerer_job_runner import TriggerCommsDecoder
    from airflow.sdk.execution_time import task_runner

    assert TriggerCommsDecoder.__name__ == early_event._TRIGGER_RUNNER_COMMS  # an upstream rename fails here
    monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", object(), raising=False)
    assert not early_event.runner_resumes_after_event()
    monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", TriggerCommsDecoder.__new__(TriggerCommsDecoder),
                        raising=False)
    assert early_event.runner_resumes_after_event()
