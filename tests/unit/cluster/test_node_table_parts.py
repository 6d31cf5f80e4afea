"""A BroadcastJob whose node table outgrows the record: real client, informers and executor on a fake cluster.

The sizes are scaled down (a part of 10 nodes, 8 nodes inline) so that every rule of the parts shows
in milliseconds; tests/integration/test_fleet_scale.py runs the real sizes against a real API server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from support.fake_engine import NAMESPACE, FakeEngine, fake_engine

from airflow_broadcast.cluster.job_records import record_name, record_view
from airflow_broadcast.cluster.kinds.broadcast_job import read_node_table
from airflow_broadcast.reconcilers.broadcast_job import node_table
from airflow_broadcast.reconcilers.broadcast_job.kind import BroadcastJobKind
from airflow_broadcast.reconcilers.observed import RECORD_PART_LABEL

BCJ = "BroadcastJob"
NODES = 40
CONFIGMAPS = f"/api/v1/namespaces/{NAMESPACE}/configmaps*"


@pytest.fixture
async def env(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeEngine]:
    monkeypatch.setattr(node_table, "INLINE_NODES", 8)
    monkeypatch.setattr(node_table, "PART_NODES", 10)
    monkeypatch.setattr(node_table, "VIEW_NODES", 5)
    async with fake_engine(monkeypatch) as engine:
        yield engine
        await asyncio.sleep(0.2)  # let the last watch events land: a cancel racing one is lost in wait_for (3.11)


def parts(env: FakeEngine) -> list[dict[str, object]]:
    return env.fake.objects(f"/api/v1/namespaces/{NAMESPACE}/configmaps", RECORD_PART_LABEL)


def part_writes(env: FakeEngine) -> dict[str, int]:
    """part name → how often it was created or replaced."""
    counts: dict[str, int] = {}
    for request in env.fake.served_requests("POST", CONFIGMAPS) + env.fake.served_requests("PUT", CONFIGMAPS):
        name = str(request.body["metadata"]["name"])
        if "-nodes-" in name:
            counts[name] = counts.get(name, 0) + 1
    return counts


async def test_a_large_table_moves_to_parts_and_the_record_keeps_counts_and_a_capped_view(env: FakeEngine) -> None:
    submission, task = await env.running_broadcast_job(NODES)
    env.set_all_pods("Succeeded")
    outcome = await asyncio.wait_for(task, 10)
    assert outcome.reason == "finished"
    status = env.status(BCJ, "hello")
    assert status["nodeParts"] == 4 and status["nodesTotal"] == NODES and status["nodesDone"] == NODES
    assert len(status["nodes"]) == 5 and status["failedNodes"] == [] and status["failedNodesTotal"] == 0
    assert len(parts(env)) == 4
    owner = parts(env)[0]["metadata"]["ownerReferences"][0]  # type: ignore[index]
    assert owner["uid"] == submission.uid and owner["kind"] == "ConfigMap"
    table = await read_node_table(env.client, NAMESPACE, record_name(BCJ, "hello"))
    assert sorted(table) == sorted(f"node-{i}" for i in range(NODES))
    assert {entry["phase"] for entry in table.values()} == {"Succeeded"}


async def test_the_xcom_is_bounded_and_names_every_failed_node_up_to_its_cap(env: FakeEngine) -> None:
    _, task = await env.running_broadcast_job(NODES, failure="Continue")
    pods = sorted(env.pods(), key=lambda p: p["metadata"]["annotations"]["airflow-broadcast.io/node"])
    for i, pod in enumerate(pods):
        env.fake.set_pod_phase(NAMESPACE, pod["metadata"]["name"], "Failed" if i < 7 else "Succeeded")
    await asyncio.wait_for(task, 10)
    raw = env.record(BCJ, "hello")
    assert raw is not None
    summary = BroadcastJobKind().summary(record_view(raw))
    assert summary["nodesTotal"] == NODES and summary["nodesTruncated"] is True
    assert summary["failedNodesTotal"] == 7 and len(summary["failedNodes"]) == 7
    assert len(summary["nodes"]) == 5 and {r["phase"] for r in summary["nodes"].values()} == {"Failed"}
    assert len(json.dumps(summary)) < 4000


async def test_each_part_is_written_a_bounded_number_of_times_however_many_passes_run(env: FakeEngine) -> None:
    """Pods finish one at a time (a pass each); a part is rewritten only when a quarter of it changed."""
    _, task = await env.running_broadcast_job(NODES)
    for pod in env.pods():
        env.fake.set_pod_phase(NAMESPACE, pod["metadata"]["name"], "Succeeded")
        await env.fake.wait_for(lambda: True)
    await asyncio.wait_for(task, 10)
    record_writes = len([r for r in env.fake.served_requests("PUT", CONFIGMAPS)
                         if r.body["metadata"]["name"] == record_name(BCJ, "hello")])
    writes = part_writes(env)
    assert len(writes) == 4
    assert record_writes > 2 * max(writes.values())  # many passes, few part writes
    assert max(writes.values()) <= 1 + node_table.FLUSH_FRACTION + 1


async def test_a_pod_deleted_by_hand_is_created_again_as_the_next_attempt(env: FakeEngine) -> None:
    _, task = await env.running_broadcast_job(NODES)
    await env.fake.wait_for(lambda: len(parts(env)) == 4, what="the parts")
    victim = env.pods()[0]
    node = victim["metadata"]["annotations"]["airflow-broadcast.io/node"]
    env.fake.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/{victim['metadata']['name']}")

    def again() -> bool:
        return any(p["metadata"]["annotations"]["airflow-broadcast.io/node"] == node for p in env.pods())

    await env.fake.wait_for(again, what="the re-created pod")
    pod = next(p for p in env.pods() if p["metadata"]["annotations"]["airflow-broadcast.io/node"] == node)
    assert pod["metadata"]["annotations"]["airflow-broadcast.io/attempt"] == "2"
    assert len(env.pods()) == NODES
    task.cancel()
