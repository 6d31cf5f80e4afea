"""X4: what the loop holds for a job is dropped when the job is NotFound.

Upstream keeps creation/deletion expectations per job and drops them when the job is gone.
Here the loop's per-job state is its subscriptions to the shared watch caches and the pass
in flight; a deleted record (or one re-created under the same name with a new uid) must end
the loop at once, with no further write and no subscription left behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from support.fake_engine import NAMESPACE, FakeEngine, fake_engine

from airflow_broadcast.cluster.job_records import new_record, record_path, records_path
from airflow_broadcast.cluster.kinds.registry import driver_for
from airflow_broadcast.cluster.reconcile_loop import record_informer

KIND = "BroadcastJob"
WRITES = ("POST", "PUT", "PATCH", "DELETE")


@pytest.fixture
async def env(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeEngine]:
    async with fake_engine(monkeypatch) as engine:
        yield engine


def writes(env: FakeEngine) -> list[tuple[str, str]]:
    """Every write the provider sent, events aside."""
    return [(r.verb, r.path) for r in env.fake.requests if r.verb in WRITES and not r.path.endswith("/events")]


@pytest.mark.parametrize("change", ["deleted", "recreated with a new uid"])
async def test_X4_a_gone_job_ends_its_loop_with_no_further_write_and_no_subscription_left(
        env: FakeEngine, change: str) -> None:
    submission, loop = await env.running_broadcast_job(2)
    records = record_informer(env.client, NAMESPACE)
    watched = driver_for(KIND).watch(env.client, NAMESPACE)
    await env.fake.wait_for(lambda: records._subscribers.get("hello"), what="the loop to watch its record")
    assert watched.children._subscribers.get(submission.uid), "the loop watches its pods"
    await env.fake.wait_for(lambda: env.status(KIND, "hello").get("active") == 2,
                            what="the first pass to write its status")
    assert not loop.done()
    before = writes(env)

    env.fake.delete(record_path(NAMESPACE, submission.name))
    if change != "deleted":
        env.fake.create(records_path(NAMESPACE), new_record(KIND, "hello", NAMESPACE, submission.manifest, {}, {}))
    outcome = await asyncio.wait_for(loop, 5)

    assert outcome.reason == "gone" and submission.uid in outcome.message
    assert writes(env) == before, "nothing is written for a gone job"
    assert ("POST", f"/api/v1/namespaces/{NAMESPACE}/pods") in before
    assert not records._subscribers.get("hello")
    assert not watched.children._subscribers.get(submission.uid)
    assert watched.nodes is not None and not watched.nodes._subscribers.get("*")


async def test_X4_a_pass_woken_by_the_collector_creates_nothing_for_a_record_its_cache_still_holds(
        env: FakeEngine) -> None:
    """The record watch lags; the collector removes the pods; the pass those removals wake must not re-create them."""
    submission, loop = await env.running_broadcast_job(2)
    await env.fake.wait_for(lambda: env.status(KIND, "hello").get("active") == 2,
                            what="the first pass to write its status")
    env.fake.hold_watches(f"{records_path(NAMESPACE)}*")
    before = writes(env)

    env.fake.delete(record_path(NAMESPACE, submission.name))
    assert not env.pods(), "the collector took the pods with their owner"
    outcome = await asyncio.wait_for(loop, 5)

    assert outcome.reason == "gone" and submission.uid in outcome.message
    assert writes(env) == before, "no pod is re-created for a gone owner, and no status is written"
    assert not env.pods(), "nothing was left for the collector to take again"
    env.fake.release_watches()
