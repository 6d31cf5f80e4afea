"""The page's reads of hand-off jobs, on the in-memory API server: shared caches of the custom resources,
unserved CRDs left out and not asked for again on every poll, and the pods their controller made."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from support.fake_cluster import FakeCluster

from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.cluster.informers import stop_informers
from airflow_broadcast.cluster.job_records import SUBMITTED_BY
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.ui import reads

KRUISE = "apps.kruise.io/v1beta1"
BCJS = api_path(KRUISE, "broadcastjobs")
TFJOBS = api_path("kubeflow.org/v1", "tfjobs")


@pytest.fixture
async def fake() -> AsyncIterator[FakeCluster]:
    yield FakeCluster(apis=[KRUISE])  # OpenKruise installed, training-operator not
    await stop_informers()


def bcj(name: str, namespace: str, *, airflows: bool = True) -> dict[str, Any]:
    annotations = {SUBMITTED_BY: "etl/run/manual__1/-1"} if airflows else {}
    return {"apiVersion": KRUISE, "kind": "BroadcastJob", "spec": {}, "status": {"phase": "running"},
            "metadata": {"name": name, "namespace": namespace, "annotations": annotations}}


def bcj_pod(name: str, uid: str, owner: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"broadcastjob-controller-uid": uid},
                         "ownerReferences": [{"kind": "BroadcastJob", "name": "x", "uid": owner, "controller": True}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}}


async def test_only_airflows_resources_are_listed_cluster_wide_and_an_unserved_kind_is_left_out(
        fake: FakeCluster) -> None:
    fake.create(BCJS, bcj("ours", "team-a"))
    fake.create(BCJS, bcj("theirs", "team-b", airflows=False))

    found = await reads.resources(KubeClient(fake))

    assert [(r["kind"], r["metadata"]["namespace"], r["metadata"]["name"]) for r in found] == [
        ("BroadcastJob", "team-a", "ours")]


async def test_a_404_or_403_is_believed_for_a_minute_then_asked_again(
        fake: FakeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(reads, "clock", lambda: now[0])
    client = KubeClient(fake)
    fake.fail("GET", BCJS, 403, times=None)

    for _ in range(5):
        assert await reads.resources(client) == []
    assert (len(fake.served_requests("GET", TFJOBS)), len(fake.served_requests("GET", BCJS))) == (1, 1)

    now[0] += reads.UNSERVED_SECONDS + 1
    fake.faults.clear()
    fake.create(BCJS, bcj("ours", "team-a"))
    assert [r["metadata"]["name"] for r in await reads.resources(client)] == ["ours"]
    assert len(fake.served_requests("GET", TFJOBS)) == 2


async def test_a_served_kind_is_probed_once_then_read_from_its_watch_cache(fake: FakeCluster) -> None:
    client = KubeClient(fake)
    assert await reads.resources(client) == []
    fake.create(BCJS, bcj("later", "team-a"))

    names: list[str] = []
    for _ in range(100):
        names = [r["metadata"]["name"] for r in await reads.resources(client)]
        if names:
            break
        await asyncio.sleep(0.05)

    assert names == ["later"]
    assert len(fake.served_requests("GET", BCJS)) == 2  # the probe and the cache's one LIST; then the watch


async def test_the_pods_of_a_resource_are_the_ones_its_controller_owns(fake: FakeCluster) -> None:
    pods = api_path("v1", "pods", namespace="team-a")
    fake.create(pods, bcj_pod("mine", "uid-1", "uid-1"))
    fake.create(pods, bcj_pod("stale-label", "uid-1", "uid-0"))
    fake.create(pods, bcj_pod("other-job", "uid-2", "uid-2"))

    found = await reads.resource_pods(KubeClient(fake), "BroadcastJob", "team-a", "bcj", "uid-1")

    assert [(p.name, p.node) for p in found] == [("mine", "n1")]
