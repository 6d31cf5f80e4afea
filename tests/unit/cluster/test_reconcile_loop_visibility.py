"""The loop's start-up timeout and its warnings feed, through the real client, informers and executor on a fake."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from support import bcj_builders
from support.fake_engine import NAMESPACE, FakeEngine, fake_engine

from airflow_broadcast.cluster.job_warnings import JobWarning
from airflow_broadcast.cluster.reconcile_loop import LoopReason
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.specs.timestamps import to_rfc3339

BCJ = "BroadcastJob"
EVENTS = f"/api/v1/namespaces/{NAMESPACE}/events"


@pytest.fixture
async def env(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeEngine]:
    async with fake_engine(monkeypatch) as engine:
        yield engine


async def one_pod_job(env: FakeEngine) -> JobRecord:
    env.fake.add_node("node-0")
    return await env.submit(bcj_builders.manifest(name="hello", namespace=NAMESPACE))


def post_event(env: FakeEngine, pod: dict[str, Any], reason: str, message: str, count: int = 1,
               name: str = "ev-1") -> None:
    meta = pod["metadata"]
    env.fake.create(EVENTS, {"metadata": {"name": name}, "type": "Warning", "reason": reason, "message": message,
                             "count": count, "lastTimestamp": to_rfc3339(time.time()),
                             "involvedObject": {"kind": "Pod", "name": meta["name"], "uid": meta["uid"]}})


async def test_a_pod_pending_past_the_start_up_timeout_ends_the_loop_naming_pod_node_and_cause(
        env: FakeEngine) -> None:
    submission = await one_pod_job(env)
    loop = env.start(submission, BCJ, resync=60.0, startup_timeout=1.5)  # only the start-up timer can wake it
    [pod] = await env.wait_pods(1)
    env.fake.patch(f"/api/v1/namespaces/{NAMESPACE}/pods/{pod['metadata']['name']}", {"status": {
        "phase": "Pending", "containerStatuses": [{"name": "main", "state": {"waiting": {"reason": "ErrImagePull"}}}]}})
    post_event(env, pod, "Failed", 'Failed to pull image "busybox:1.36": not found')

    outcome = await asyncio.wait_for(loop, 5)

    assert outcome.reason is LoopReason.STARTUP_TIMEOUT
    assert outcome.message.startswith(f"pod {pod['metadata']['name']} on node node-0 has been starting for ")
    assert "longer than startup_timeout_seconds=1.5: ErrImagePull" in outcome.message
    assert outcome.message.endswith('(latest Warning event: Failed: Failed to pull image "busybox:1.36": not found)')
    assert env.pods()[0]["metadata"]["name"] == pod["metadata"]["name"]  # the loop itself deletes nothing


async def test_running_pods_never_stall_and_the_job_finishes(env: FakeEngine) -> None:
    submission = await one_pod_job(env)
    loop = env.start(submission, BCJ, startup_timeout=1.5)  # creation times are whole seconds: up to 1 s early
    await env.wait_pods(1)
    env.set_all_pods("Running")
    await asyncio.sleep(2.5)  # past the timeout, counted from the pod's creation
    assert not loop.done()
    env.set_all_pods("Succeeded")
    assert (await asyncio.wait_for(loop, 5)).reason is LoopReason.FINISHED


async def test_a_single_pass_reports_a_stall_from_the_creation_timestamp_alone(env: FakeEngine) -> None:
    """A poke (sensor, poke mode) keeps nothing between passes: the pod's age is the whole state."""
    submission = await one_pod_job(env)
    first = await env.drive(submission, BCJ, single_pass=True, startup_timeout=1.0)
    assert first.reason is LoopReason.PENDING
    await env.wait_pods(1)
    await asyncio.sleep(2.1)
    later = await env.drive(submission, BCJ, single_pass=True, startup_timeout=1.0)
    assert later.reason is LoopReason.STARTUP_TIMEOUT


async def test_warnings_reach_the_sink_as_they_happen_each_once(env: FakeEngine) -> None:
    submission = await one_pod_job(env)
    seen: list[JobWarning] = []
    loop = env.start(submission, BCJ, warnings=seen.append)
    [pod] = await env.wait_pods(1)
    post_event(env, pod, "FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.")
    await env.fake.wait_for(lambda: seen, what="the FailedScheduling warning")
    env.fake.set_pod_phase(NAMESPACE, pod["metadata"]["name"], "Failed", exit_code=137, reason="OOMKilled")
    await env.fake.wait_for(lambda: len(seen) >= 2, what="the OOMKilled warning")
    outcome = await asyncio.wait_for(loop, 5)  # FailFast: the failed pod fails the job

    assert outcome.reason is LoopReason.FINISHED
    name = pod["metadata"]["name"]
    assert seen[:2] == [
        JobWarning("FailedScheduling", f"pod {name}", "0/1 nodes are available: 1 Insufficient cpu.", "node-0"),
        JobWarning("OOMKilled", f"pod {name}", "container main terminated with exit code 137", "node-0"),
    ]
    assert [w.reason for w in seen].count("FailedScheduling") == 1


async def test_without_permission_to_watch_events_the_task_log_says_so_and_the_job_goes_on(env: FakeEngine) -> None:
    env.fake.fail("*", EVENTS, 403, times=None, message='events is forbidden: User "x" cannot list resource "events"')
    submission = await one_pod_job(env)
    seen: list[JobWarning] = []
    loop = env.start(submission, BCJ, warnings=seen.append, startup_timeout=600)
    await env.wait_pods(1)
    await env.fake.wait_for(lambda: seen, what="the EventsUnavailable warning")
    env.set_all_pods("Succeeded")

    assert (await asyncio.wait_for(loop, 5)).reason is LoopReason.FINISHED
    assert [w.reason for w in seen] == ["EventsUnavailable"]
    assert seen[0].subject == f"BroadcastJob {NAMESPACE}/hello"
    assert "403" in seen[0].message and "list and watch on events" in seen[0].message
