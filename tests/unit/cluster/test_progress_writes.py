"""Status writes that only move counts go out at most once a second; transitions and the finish go out at once."""

from __future__ import annotations

import asyncio

import pytest
from support import bcj_builders
from support.fake_engine import NAMESPACE, FakeEngine, fake_engine

from airflow_broadcast.cluster.job_records import record_name, record_path
from airflow_broadcast.cluster.pass_pacing import PROGRESS_WRITE_GAP, ProgressWrites
from airflow_broadcast.reconcilers.plan import DeleteChild, JobEvent, Plan

RUNNING = {"phase": "running", "conditions": [], "active": 3, "succeeded": 0}
COUNTED = {**RUNNING, "active": 2, "succeeded": 1}


def test_a_count_change_right_after_a_write_is_held_for_the_rest_of_the_gap() -> None:
    writes = ProgressWrites()
    plan = Plan(status=COUNTED)
    assert writes.hold(plan, RUNNING, False, now=100.0) is None  # nothing written yet
    writes.applied(plan, now=100.0)
    assert writes.hold(plan, RUNNING, False, now=100.25) == pytest.approx(PROGRESS_WRITE_GAP - 0.25)
    assert writes.hold(plan, RUNNING, False, now=100.0 + PROGRESS_WRITE_GAP) is None


@pytest.mark.parametrize("plan", [
    Plan(status={**COUNTED, "phase": "failed"}),
    Plan(status={**COUNTED, "conditions": [{"type": "Complete", "status": "True"}]}),
    Plan(status=COUNTED, finished=True),
    Plan(status=COUNTED, events=(JobEvent("Normal", "Suspended", "x"),)),
    Plan(status=COUNTED, record_parts={"p": {}}),
    Plan(status=COUNTED, record_annotations={"a": "b"}),
    Plan(status=COUNTED, create_pods=({"metadata": {"name": "p"}},)),
    Plan(status=COUNTED, deletes=(DeleteChild("Pod", "p"),)),
], ids=["phase", "conditions", "finished", "events", "parts", "annotations", "creates", "deletes"])
def test_anything_but_counts_is_written_at_once(plan: Plan) -> None:
    writes = ProgressWrites()
    writes.applied(Plan(status=RUNNING), now=100.0)
    assert writes.hold(plan, RUNNING, False, now=100.1) is None


def test_a_count_change_that_settles_the_job_is_written_at_once() -> None:
    writes = ProgressWrites()
    writes.applied(Plan(status=RUNNING), now=100.0)
    assert writes.hold(Plan(status=COUNTED), RUNNING, True, now=100.1) is None


async def test_a_burst_of_pod_results_costs_one_count_write_a_second_and_the_finish_goes_out_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async with fake_engine(monkeypatch) as env:
        for i in range(6):
            env.fake.add_node(f"node-{i}")
        loop = env.start(await env.submit(bcj_builders.manifest(name="hello", namespace=NAMESPACE)), "BroadcastJob")
        pods = await env.wait_pods(6)
        path = record_path(NAMESPACE, record_name("BroadcastJob", "hello"))
        before = _writes(env, path)
        for pod in pods[:5]:  # five results 50 ms apart: one pass each, within one gap
            env.fake.set_pod_phase(NAMESPACE, pod["metadata"]["name"], "Succeeded")
            await asyncio.sleep(0.05)
        assert _writes(env, path) - before <= 1
        env.fake.set_pod_phase(NAMESPACE, pods[5]["metadata"]["name"], "Succeeded")
        outcome = await asyncio.wait_for(loop, PROGRESS_WRITE_GAP / 2)  # the finish is not held
        assert outcome.reason == "finished" and env.status("BroadcastJob", "hello")["succeeded"] == 6


def _writes(env: FakeEngine, path: str) -> int:
    return len(env.fake.served_requests("PUT", path, 200))
