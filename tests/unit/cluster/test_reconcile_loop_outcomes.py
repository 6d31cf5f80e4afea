"""Every way `run_reconcile_loop` ends, driven through the real client, informers and executor on a fake cluster.

The same outcomes are reached on the real API server by the integration tests; here each one
takes milliseconds, and the cluster state behind it (pods per node, the record's status) is exact.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from support import bcj_builders, tf_builders
from support.fake_engine import NAMESPACE, FakeEngine, fake_engine

from airflow_broadcast.cluster.job_records import (
    EXPIRES_AT,
    new_record,
    record_name,
    record_path,
    records_path,
)
from airflow_broadcast.cluster.reconcile_loop import LoopOutcome, record_informer
from airflow_broadcast.specs.timestamps import from_rfc3339, to_rfc3339

BCJ = "BroadcastJob"
TF = "TFJob"


@pytest.fixture
async def env(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeEngine]:
    async with fake_engine(monkeypatch) as engine:
        yield engine


def nodes(env: FakeEngine, count: int) -> list[str]:
    names = [f"node-{i}" for i in range(count)]
    for name in names:
        env.fake.add_node(name)
    return names


def bcj(name: str = "hello", **spec: Any) -> dict[str, Any]:
    return bcj_builders.manifest(name=name, namespace=NAMESPACE, **spec)


def condition_types(status: Mapping[str, Any]) -> list[str]:
    return [c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"]


async def test_a_broadcast_job_finishes_when_every_eligible_node_succeeded(env: FakeEngine) -> None:
    eligible = nodes(env, 3)
    env.fake.add_node("tainted", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    submission = await env.submit(bcj())
    loop = env.start(submission, BCJ)

    await env.wait_pods(3)
    env.set_all_pods("Succeeded")
    outcome = await asyncio.wait_for(loop, 5)

    assert outcome.reason == "finished"
    assert {node: len(pods) for node, pods in env.pods_by_node().items()} == dict.fromkeys(eligible, 1)
    status = env.status(BCJ, "hello")
    assert outcome.status == status
    assert (status["phase"], status["desired"], status["succeeded"], status["failed"], status["active"]) == (
        "completed", 3, 3, 0, 0)
    assert condition_types(status) == ["Complete"]
    assert sorted(status["ineligibleNodes"]) == ["tainted"]


async def test_a_finished_job_with_a_ttl_records_when_it_expires(env: FakeEngine) -> None:
    _, loop = await env.running_broadcast_job(1, ttl=60)
    env.set_all_pods("Succeeded")

    outcome = await asyncio.wait_for(loop, 5)

    assert outcome.reason == "finished"
    record = env.record(BCJ, "hello")
    assert record is not None
    completed = from_rfc3339(env.status(BCJ, "hello")["completionTime"])
    assert completed is not None
    assert record["metadata"]["annotations"][EXPIRES_AT] == to_rfc3339(completed + 60)


async def test_a_tfjob_finishes_when_worker_0_succeeded_and_cleans_its_running_pods(env: FakeEngine) -> None:
    manifest = tf_builders.manifest("mnist", NAMESPACE, {"Worker": 2}, run_policy={"cleanPodPolicy": "Running"})
    loop = env.start(await env.submit(manifest), TF)

    pods = await env.wait_pods(2)
    services = env.fake.objects(f"/api/v1/namespaces/{NAMESPACE}/services")
    env.fake.set_pod_phase(NAMESPACE, "mnist-worker-1", "Running")
    env.fake.set_pod_phase(NAMESPACE, "mnist-worker-0", "Succeeded")
    outcome = await asyncio.wait_for(loop, 5)

    assert outcome.reason == "finished"
    assert sorted(p["metadata"]["name"] for p in pods) == ["mnist-worker-0", "mnist-worker-1"]
    assert sorted(s["metadata"]["name"] for s in services) == ["mnist-worker-0", "mnist-worker-1"]
    status = env.status(TF, "mnist")
    assert "Succeeded" in condition_types(status)
    # Upstream moves the active count of a succeeded job to succeeded (tfjob.md, worker-0 success).
    assert status["replicaStatuses"]["Worker"] == {"succeeded": 2}
    assert [p["metadata"]["name"] for p in env.pods()] == ["mnist-worker-0"], "cleanPodPolicy Running"


async def test_a_broadcast_job_that_never_completes_settles_once_every_node_is_done(env: FakeEngine) -> None:
    _, loop = await env.running_broadcast_job(2, completion="Never", failure="Continue")
    first, second = env.pods()
    env.fake.set_pod_phase(NAMESPACE, first["metadata"]["name"], "Succeeded")
    env.fake.set_pod_phase(NAMESPACE, second["metadata"]["name"], "Failed", exit_code=3)

    outcome = await asyncio.wait_for(loop, 5)

    assert outcome.reason == "settled"
    status = env.status(BCJ, "hello")
    assert (status["phase"], status["succeeded"], status["failed"], status["active"]) == ("running", 1, 1, 0)
    assert condition_types(status) == [], "a Never job is not finished, only settled"
    assert len(env.pods()) == 2


async def test_the_loop_stops_at_the_execution_deadline_and_leaves_the_job_running(env: FakeEngine) -> None:
    nodes(env, 2)
    submission = await env.submit(bcj())

    outcome = await env.drive(submission, BCJ, deadline=time.time() + 0.2)

    assert outcome.reason == "timeout"
    assert "deadline" in outcome.message
    assert [p["status"]["phase"] for p in env.pods()] == ["Pending", "Pending"], "nothing was deleted"
    assert env.status(BCJ, "hello")["active"] == 2


async def test_deleting_the_record_ends_the_loop_and_collects_its_pods(env: FakeEngine) -> None:
    submission, loop = await env.running_broadcast_job(3)

    env.fake.delete(record_path(NAMESPACE, submission.name))
    outcome = await asyncio.wait_for(loop, 5)

    assert outcome.reason == "gone"
    assert submission.uid in outcome.message
    assert env.pods() == [], "the record's ownerReferences took its pods with it"


async def test_a_record_the_watch_has_not_brought_yet_is_read_from_the_cluster_not_taken_as_gone(
        env: FakeEngine) -> None:
    """A trigger can start before the shared watch delivers a record created a moment ago."""
    await env.running_broadcast_job(1)  # the namespace's record cache is synced and running
    records, added = record_informer(env.client, NAMESPACE), asyncio.Event()
    records.subscribe("late", added)
    late = await env.submit(bcj("late"))
    await asyncio.wait_for(added.wait(), 5)
    assert late.name in records.values
    records.remove(late.name)  # no event brings it back: as if its ADDED event were still on the way

    loop = env.start(late, BCJ)
    pods = await env.wait_pods(2)

    assert not loop.done(), loop.result() if loop.done() else None
    assert sum(1 for p in pods if p["metadata"]["labels"]["airflow-broadcast.io/job-uid"] == late.uid) == 1
    assert records.values[late.name]["metadata"]["uid"] == late.uid


async def test_a_record_replaced_by_another_uid_ends_the_loop_of_the_old_one(env: FakeEngine) -> None:
    old, loop = await env.running_broadcast_job(2)

    # Both writes land before the loop's next pass: its cache holds a record of the same name, another uid.
    env.fake.delete(record_path(NAMESPACE, old.name))
    new = env.fake.create(records_path(NAMESPACE), new_record(BCJ, "hello", NAMESPACE, old.manifest,
                                                              {}, {}))
    outcome = await asyncio.wait_for(loop, 5)

    assert outcome.reason == "gone"
    assert new["metadata"]["uid"] != old.uid
    assert env.pods() == [], "the old run's pods were collected, and the old loop created none for the new record"
    assert env.status(BCJ, "hello") == {}, "the new record is left to its own loop"


async def test_a_manifest_edited_into_an_invalid_one_ends_the_loop_as_invalid(env: FakeEngine) -> None:
    _, loop = await env.running_broadcast_job(2)

    env.set_manifest(BCJ, "hello", bcj(parallelism=-1))
    outcome = await asyncio.wait_for(loop, 5)

    assert outcome.reason == "invalid"
    assert "spec.parallelism" in outcome.message
    assert outcome.record is not None
    assert outcome.record.name == record_name(BCJ, "hello")
    assert len(env.pods()) == 2, "an invalid manifest deletes nothing"


async def test_R13_a_record_edited_to_a_parallelism_without_percent_ends_the_loop_naming_it(env: FakeEngine) -> None:
    _, loop = await env.running_broadcast_job(2)

    env.set_manifest(BCJ, "hello", bcj(parallelism="5"))
    outcome = await asyncio.wait_for(loop, 5)

    assert outcome.reason == "invalid"
    assert 'spec.parallelism: Invalid value: "5"' in outcome.message
    assert len(env.pods()) == 2, "nothing is created or deleted"


async def test_a_single_pass_creates_the_pods_writes_the_status_and_returns_pending(env: FakeEngine) -> None:
    nodes(env, 2)
    submission = await env.submit(bcj())

    outcome = await env.drive(submission, BCJ, single_pass=True)

    assert outcome.reason == "pending"
    assert {node: len(pods) for node, pods in env.pods_by_node().items()} == {"node-0": 1, "node-1": 1}
    status = env.status(BCJ, "hello")
    assert outcome.status == status
    assert (status["desired"], status["active"], status["succeeded"]) == (2, 2, 0)
    created = [e for e in env.fake.objects(f"/api/v1/namespaces/{NAMESPACE}/events")
               if e["reason"] == "SuccessfulCreate"]
    assert len(created) == 2


@pytest.mark.parametrize("kind", [BCJ, TF])
async def test_the_finishing_pass_announces_its_outcome_before_writing_it_and_writes_what_it_announced(
        env: FakeEngine, kind: str) -> None:
    nodes(env, 2)
    manifest = bcj() if kind == BCJ else tf_builders.manifest("hello", NAMESPACE, {"Worker": 2},
                                                              run_policy={"cleanPodPolicy": "Running"})
    announced: list[tuple[str, dict[str, Any] | None]] = []

    def announce(outcome: LoopOutcome) -> None:
        announced.append((outcome.reason, dict(outcome.status)))
        announced.append(("written then", env.status(kind, "hello")))

    loop = env.start(await env.submit(manifest), kind, announce=announce)
    await env.wait_pods(2)
    env.set_all_pods("Succeeded")
    outcome = await asyncio.wait_for(loop, 5)

    (reason, status), (_, written_then) = announced
    assert reason == outcome.reason == "finished"
    assert status == outcome.status == env.status(kind, "hello")
    assert written_then != status  # announced before the finishing write
