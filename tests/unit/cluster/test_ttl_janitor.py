"""The TTL janitor deletes each record when its TTL lets it go, and not before, with nobody else running.

It runs against the in-memory API server through the real KubeClient and the shared record
informer, so the timer, the watch wake-ups, the uid preconditions and the lease are the real code.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from support.fake_cluster import FakeCluster

from airflow_broadcast.cluster import ttl_janitor, ttl_sweeper
from airflow_broadcast.cluster.informers import stop_informers
from airflow_broadcast.cluster.janitor_lease import LEASE_NAME, read_lease
from airflow_broadcast.cluster.job_records import EXPIRES_AT, RESULT_READ, new_record, record_path, records_path
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.ttl_janitor import Cleanup, run_janitor
from airflow_broadcast.specs.timestamps import from_rfc3339, to_rfc3339

NS = "ops"
READ = {RESULT_READ: "true"}
LEASES = "coordination.k8s.io/v1"


class Janitor:
    """One running janitor over a fake cluster; `cleanups` fills as it deletes."""

    def __init__(self, fake: FakeCluster, client: KubeClient, holder: str = "janitor-a",
                 unread_grace: float = 600.0) -> None:
        self.fake, self.client = fake, client
        self.cleanups: list[Cleanup] = []
        self.task = asyncio.get_running_loop().create_task(self._run(holder, unread_grace))

    async def _run(self, holder: str, unread_grace: float) -> None:
        async for cleanup in run_janitor(self.client, [NS], holder=holder, renew_every=0.1,
                                         unread_grace=unread_grace):
            self.cleanups.append(cleanup)

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


@pytest.fixture
async def kube() -> AsyncIterator[tuple[FakeCluster, KubeClient]]:
    fake = FakeCluster(apis=[LEASES])
    client = KubeClient(fake, qps=0, max_retries=0)
    yield fake, client
    await stop_informers()
    await client.close()


def add_record(fake: FakeCluster, kind: str, job: str, expires: float | None, **annotations: str) -> dict[str, Any]:
    stamp = {} if expires is None else {EXPIRES_AT: to_rfc3339(expires)}
    return fake.create(records_path(NS), new_record(kind, job, NS, {}, {}, {**stamp, **annotations}))


def add_pod(fake: FakeCluster, owner: dict[str, Any]) -> None:
    meta = owner["metadata"]
    fake.create(f"/api/v1/namespaces/{NS}/pods", {"metadata": {"name": f"{meta['name']}-pod", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": meta["name"], "uid": meta["uid"], "controller": True}]}})


def names(fake: FakeCluster, path: str) -> list[str]:
    return sorted(o["metadata"]["name"] for o in fake.objects(path))


def next_second() -> float:
    """A whole second at least 0.5 s ahead: expiry stamps have whole seconds."""
    return float(int(time.time() + 1.5))


async def test_T1_a_read_record_goes_at_its_expiry_with_its_children_and_not_before(kube: Any) -> None:
    fake, client = kube
    expires = next_second()
    record = add_record(fake, "BroadcastJob", "nightly", expires, **READ)
    add_pod(fake, record)
    add_record(fake, "BroadcastJob", "no-ttl", None, **READ)
    janitor = Janitor(fake, client)
    try:
        await fake.wait_for(lambda: fake.object(f"/apis/{LEASES}/namespaces/{NS}/leases/{LEASE_NAME}"), what="lease")
        assert "bcj-nightly" in names(fake, records_path(NS)), "deleted before its expiry"
        await fake.wait_for(lambda: janitor.cleanups, timeout=5, what="the cleanup")
        deleted_at = time.time()
    finally:
        await janitor.stop()
    assert expires <= deleted_at < expires + 1.0
    assert names(fake, records_path(NS)) == ["bcj-no-ttl"]
    assert names(fake, f"/api/v1/namespaces/{NS}/pods") == [], "the record's pods follow it"
    (cleanup,) = janitor.cleanups
    assert cleanup.payload() == {
        "kind": "BroadcastJob", "namespace": NS, "record": "bcj-nightly", "job_name": "nightly",
        "uid": record["metadata"]["uid"], "expired_at": to_rfc3339(expires), "result_read": True,
        "deleted_at": cleanup.deleted_at}
    assert expires <= cleanup.deleted_at <= deleted_at
    delete = fake.served_requests("DELETE", record_path(NS, "bcj-nightly"))
    assert [r.body["preconditions"] for r in delete] == [{"uid": record["metadata"]["uid"]}]


async def test_T1_T3_an_unread_result_waits_for_the_grace_and_a_later_read_deletes_at_once(kube: Any) -> None:
    fake, client = kube
    expired = time.time() - 5
    add_record(fake, "TFJob", "forgotten", expired - 60)  # past expiry and grace: never read, still goes
    add_record(fake, "TFJob", "late", expired)
    janitor = Janitor(fake, client, unread_grace=60.0)
    try:
        await fake.wait_for(lambda: janitor.cleanups, what="the long-forgotten record")
        await asyncio.sleep(0.5)
        assert names(fake, records_path(NS)) == ["tfjob-late"], "an unread result within its grace stays"
        fake.patch(record_path(NS, "tfjob-late"), {"metadata": {"annotations": READ}})
        await fake.wait_for(lambda: len(janitor.cleanups) == 2, what="the record read after its expiry")
    finally:
        await janitor.stop()
    assert [(c.job_name, c.result_read) for c in janitor.cleanups] == [("forgotten", False), ("late", True)]
    assert fake.objects(records_path(NS)) == []
    events = [(e["reason"], e["message"]) for e in fake.objects(f"/api/v1/namespaces/{NS}/events")]
    assert sorted(events) == [("SuccessfulDeleteJob", "Deleted job: forgotten"),
                              ("SuccessfulDeleteJob", "Deleted job: late")]


async def test_T6_a_failed_delete_keeps_the_record_and_is_tried_again(kube: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    fake, client = kube
    monkeypatch.setattr(ttl_janitor, "RETRY_FAILED_DELETE_SECONDS", 0.3)
    add_record(fake, "BroadcastJob", "flaky", time.time() - 1, **READ)
    fake.fail("DELETE", record_path(NS, "bcj-flaky"), 500, times=1)
    janitor = Janitor(fake, client)
    try:
        await fake.wait_for(lambda: janitor.cleanups, what="the second attempt")
    finally:
        await janitor.stop()
    attempts = fake.served_requests("DELETE", record_path(NS, "bcj-flaky"))
    assert [r.status for r in attempts] == [500, 200]
    assert attempts[1].at - attempts[0].at >= 0.3


async def test_two_janitors_at_once_delete_each_record_once_between_them(kube: Any) -> None:
    fake, client = kube
    for job in ("a", "b", "c"):
        add_record(fake, "BroadcastJob", job, next_second(), **READ)
    first, second = Janitor(fake, client, "janitor-a"), Janitor(fake, client, "janitor-b")
    try:
        await fake.wait_for(lambda: len(first.cleanups) + len(second.cleanups) >= 3, timeout=5, what="cleanups")
        await asyncio.sleep(0.5)
    finally:
        await first.stop()
        await second.stop()
    assert sorted(c.record for c in first.cleanups + second.cleanups) == ["bcj-a", "bcj-b", "bcj-c"]
    assert fake.objects(records_path(NS)) == []


async def test_a_record_replaced_under_the_same_name_is_not_deleted(kube: Any) -> None:
    fake, client = kube
    old = add_record(fake, "BroadcastJob", "rerun", time.time() - 1, **READ)
    fake.delete(record_path(NS, "bcj-rerun"))
    new = add_record(fake, "BroadcastJob", "rerun", None)
    assert await ttl_sweeper.delete_expired(client, old) is False
    assert fake.object(record_path(NS, "bcj-rerun"))["metadata"]["uid"] == new["metadata"]["uid"]


async def test_the_lease_names_its_holder_is_renewed_while_the_janitor_runs_and_counts_takeovers(kube: Any) -> None:
    fake, client = kube
    path = f"/apis/{LEASES}/namespaces/{NS}/leases/{LEASE_NAME}"
    janitor = Janitor(fake, client, "triggerer on host-a (pid 1)")
    try:
        first = await fake.wait_for(lambda: fake.object(path), what="the lease")
        renewed = await fake.wait_for(
            lambda: (lease := fake.object(path)) and lease["spec"]["renewTime"] != first["spec"]["renewTime"] and lease,
            what="a renewal")
        state = await read_lease(client, NS)
    finally:
        await janitor.stop()
    assert first["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "airflow-broadcast"}
    assert renewed["spec"]["holderIdentity"] == "triggerer on host-a (pid 1)"
    assert (renewed["spec"]["acquireTime"], renewed["spec"]["leaseTransitions"]) == (first["spec"]["acquireTime"], 0)
    assert state is not None and state.holder == "triggerer on host-a (pid 1)"
    assert state.duration == 15 and not state.expired(time.time())
    assert state.expired(from_rfc3339(renewed["spec"]["renewTime"]) + 16)
    assert await read_lease(client, "elsewhere") is None
    lease_verbs = {r.verb for r in fake.requests if "/leases" in r.path}
    assert lease_verbs == {"GET", "POST", "PUT"}, "what the Role grants: get, create, update"

    successor = Janitor(fake, client, "triggerer on host-b (pid 2)")
    try:
        taken = await fake.wait_for(
            lambda: (lease := fake.object(path)) and lease["spec"]["holderIdentity"].endswith("(pid 2)") and lease,
            what="the takeover")
    finally:
        await successor.stop()
    assert taken["spec"]["leaseTransitions"] == 1 and taken["spec"]["acquireTime"] > first["spec"]["acquireTime"]


async def test_two_janitors_renewing_one_lease_recover_from_conflicts_quietly(
        kube: Any, caplog: pytest.LogCaptureFixture) -> None:
    fake, client = kube
    path = f"/apis/{LEASES}/namespaces/{NS}/leases/{LEASE_NAME}"
    first, second = Janitor(fake, client, "a"), Janitor(fake, client, "b")
    try:
        await fake.wait_for(lambda: len(fake.served_requests("PUT", path, status=409)) >= 1, what="a conflict")
        renewals = len(fake.served_requests("PUT", path, status=200))
        await fake.wait_for(lambda: len(fake.served_requests("PUT", path, status=200)) > renewals + 2,
                            what="renewals after the conflict")
    finally:
        await first.stop()
        await second.stop()
    assert "cannot renew its lease" not in caplog.text
