"""Writers racing the loop: a status write lost to another writer (M5), and two loops driving one record."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest
from support import bcj_builders, tf_builders
from support.fake_engine import NAMESPACE, FakeEngine, fake_engine

from airflow_broadcast.cluster.job_records import record_path, records_path
from airflow_broadcast.cluster.reconcile_loop import record_informer

CONFIGMAPS = records_path(NAMESPACE)
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"


@pytest.fixture
async def env(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeEngine]:
    async with fake_engine(monkeypatch) as engine:
        yield engine


async def test_a_status_write_lost_to_another_writer_is_recomputed_from_a_fresh_get(
        env: FakeEngine, caplog: pytest.LogCaptureFixture) -> None:
    submission = await env.submit(tf_builders.manifest("clash", NAMESPACE, {"Worker": 2}))
    path = record_path(NAMESPACE, submission.name)
    await record_informer(env.client, NAMESPACE).wait_synced()
    await env.fake.wait_for(lambda: env.fake.watches(CONFIGMAPS), what="the record watch")
    env.fake.hold_watches(CONFIGMAPS)  # the loop's cache will lag behind the other writer
    env.fake.patch(path, {"metadata": {"annotations": {"team": "ml"}}})

    with caplog.at_level(logging.INFO, logger="airflow_broadcast.cluster"):  # the loop and job_records log it
        outcome = await env.drive(submission, "TFJob", single_pass=True)

    assert outcome.reason == "pending"
    writes = env.fake.served_requests("PUT", path)
    assert [w.status for w in writes] == [409, 200], "the stale write conflicted, the recomputed one landed"
    reread = [r for r in env.fake.served_requests("GET", path) if writes[0].at <= r.at <= writes[1].at]
    assert [r.status for r in reread] == [200], "one fresh GET between the two writes"
    assert any("409 on the status write" in r.getMessage() for r in caplog.records)
    saved = env.fake.object(path)
    assert saved is not None
    assert saved["metadata"]["annotations"]["team"] == "ml", "the other writer's change was kept"
    assert any(c["type"] == "Created" for c in env.status("TFJob", "clash")["conditions"])
    assert len(env.fake.served_requests("POST", PODS)) == 2, "the recomputed pass created no pod twice"
    assert sorted(p["metadata"]["name"] for p in env.pods()) == ["clash-worker-0", "clash-worker-1"]


@pytest.mark.parametrize("separate_clients", [True, False], ids=["two-triggerers", "one-triggerer"])
async def test_two_loops_driving_one_record_create_each_pod_once(monkeypatch: pytest.MonkeyPatch,
                                                                 separate_clients: bool) -> None:
    # A little latency per request makes the two loops' passes overlap, as they would on a real server.
    async with fake_engine(monkeypatch, latency=0.002) as env:
        nodes = [f"node-{i}" for i in range(4)]
        for name in nodes:
            env.fake.add_node(name)
        submission = await env.submit(bcj_builders.manifest(name="hello", namespace=NAMESPACE))
        other = env.new_client() if separate_clients else env.client
        loops = [env.start(submission, "BroadcastJob"), env.start(submission, "BroadcastJob", client=other)]

        await env.wait_pods(4)
        env.set_all_pods("Succeeded")
        outcomes = await asyncio.wait_for(asyncio.gather(*loops), 5)

        assert [o.reason for o in outcomes] == ["finished", "finished"]
        assert {node: len(pods) for node, pods in env.pods_by_node().items()} == dict.fromkeys(nodes, 1)
        posts = env.fake.served_requests("POST", PODS)
        assert [r.status for r in posts].count(201) == 4, "each pod was created once"
        assert any(r.status == 409 for r in posts), "the loops did race for the same pods"
        status = env.status("BroadcastJob", "hello")
        assert (status["desired"], status["succeeded"], status["active"], status["failed"]) == (4, 4, 0, 0)
