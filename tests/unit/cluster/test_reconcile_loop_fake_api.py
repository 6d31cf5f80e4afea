"""The fake cluster the loop tests stand on answers like an API server, as seen through the real KubeClient."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from support.fake_cluster import FakeCluster

from airflow_broadcast.cluster import api_errors
from airflow_broadcast.cluster.kube_client import KubeClient

CMS = "/api/v1/namespaces/ns/configmaps"
PODS = "/api/v1/namespaces/ns/pods"


@pytest.fixture
async def kube() -> AsyncIterator[tuple[FakeCluster, KubeClient]]:
    fake = FakeCluster()
    client = KubeClient(fake, qps=0, max_retries=0)
    yield fake, client
    await client.close()


def cm(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {}}


async def test_writes_get_uids_timestamps_and_increasing_resource_versions(kube: Any) -> None:
    _, client = kube
    a = await client.create(CMS, cm("a"))
    b = await client.create(CMS, cm("b"))
    a2 = await client.merge_patch(f"{CMS}/a", {"data": {"k": "v"}})

    assert a["metadata"]["uid"] != b["metadata"]["uid"]
    assert a["metadata"]["creationTimestamp"].endswith("Z")
    versions = [int(o["metadata"]["resourceVersion"]) for o in (a, b, a2)]
    assert versions == sorted(versions) and len(set(versions)) == 3
    assert a2["metadata"]["uid"] == a["metadata"]["uid"] and a2["data"] == {"k": "v"}
    with pytest.raises(api_errors.AlreadyExists):
        await client.create(CMS, cm("a"))


async def test_replace_with_a_stale_version_and_delete_with_another_uid_conflict(kube: Any) -> None:
    _, client = kube
    old = await client.create(CMS, cm("a"))
    await client.replace(f"{CMS}/a", {**old, "data": {"x": "1"}})

    with pytest.raises(api_errors.Conflict, match="the object has been modified"):
        await client.replace(f"{CMS}/a", {**old, "data": {"x": "2"}})
    with pytest.raises(api_errors.Conflict, match="Precondition failed"):
        await client.delete(f"{CMS}/a", preconditions_uid="someone-else")
    await client.delete(f"{CMS}/a", preconditions_uid=old["metadata"]["uid"])
    with pytest.raises(api_errors.NotFound):
        await client.get(f"{CMS}/a")


async def test_label_and_field_selectors_filter_lists(kube: Any) -> None:
    _, client = kube
    for name, labels in (("a", {"app": "x", "tier": "web"}), ("b", {"app": "y"}), ("c", {})):
        await client.create(CMS, cm(name, **labels))

    async def names(**query: str) -> list[str]:
        items, _ = await client.list_all(CMS, **query)
        return [i["metadata"]["name"] for i in items]

    assert await names(labelSelector="app") == ["a", "b"]
    assert await names(labelSelector="app=x") == ["a"]
    assert await names(labelSelector="app!=x") == ["b", "c"]
    assert await names(labelSelector="!app") == ["c"]
    assert await names(labelSelector="app in (x,y),tier") == ["a"]
    assert await names(fieldSelector="metadata.name=b") == ["b"]
    with pytest.raises(api_errors.ClusterApiError) as bad:
        await names(fieldSelector="spec.nodeName=n1")
    assert bad.value.status == 400


async def test_pages_follow_continue_and_a_compacted_token_restarts_the_list(kube: Any) -> None:
    fake, client = kube
    for i in range(5):
        await client.create(CMS, cm(f"cm-{i}"))

    items, version = await client.list_all(CMS, page_size=2)
    assert [i["metadata"]["name"] for i in items] == [f"cm-{i}" for i in range(5)]
    assert version == str(fake.store.version)
    assert len(fake.served_requests("GET", CMS)) == 3

    pages = client.list_pages(CMS, page_size=2)
    first = await anext(pages)
    fake.create(CMS, cm("late"))
    fake.compact()  # the first page's snapshot is older than the compaction: its continue token expired
    rest = [page async for page in pages]
    assert [r.status for r in fake.served_requests("GET", CMS)][3:] == [200, 410, 200, 200, 200]
    assert [len(p["items"]) for p in (first, *rest)] == [2, 2, 2, 2], "the list restarted, late item included"


async def test_watches_replay_from_a_version_through_the_selector_and_expire_after_compaction(kube: Any) -> None:
    fake, client = kube
    start = (await client.create(CMS, cm("a", app="x")))["metadata"]["resourceVersion"]
    await client.merge_patch(f"{CMS}/a", {"data": {"k": "v"}})
    await client.merge_patch(f"{CMS}/a", {"metadata": {"labels": {"app": "y"}}})  # leaves the selection
    await client.create(CMS, cm("b", app="x"))
    await client.delete(f"{CMS}/b")
    seen: list[tuple[str, str]] = []
    watch = client.watch(CMS, resource_version=start, labelSelector="app=x")
    while len(seen) < 4:
        kind, obj = await anext(watch)
        seen.append((kind, obj["metadata"]["name"]))
    await watch.aclose()
    assert seen == [("MODIFIED", "a"), ("DELETED", "a"), ("ADDED", "b"), ("DELETED", "b")]

    fake.compact()
    with pytest.raises(api_errors.Gone, match="too old resource version"):
        async for _ in client.watch(CMS, resource_version=start):
            pass


async def test_deleting_an_owner_collects_its_dependents_unless_orphaned_and_finalizers_hold(kube: Any) -> None:
    fake, client = kube
    owner = await client.create(CMS, cm("owner"))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    child = await client.create(PODS, {"metadata": {"name": "child", "ownerReferences": [ref]}, "spec": {}})
    grandchild_ref = {**ref, "kind": "Pod", "name": "child", "uid": child["metadata"]["uid"]}
    await client.create(CMS, {"metadata": {"name": "grandchild", "ownerReferences": [grandchild_ref]}})
    await client.create(CMS, {"metadata": {"name": "held", "ownerReferences": [ref], "finalizers": ["x/y"]}})

    await client.delete(f"{CMS}/owner")

    assert fake.object(f"{PODS}/child") is None
    assert fake.object(f"{CMS}/grandchild") is None
    held = fake.object(f"{CMS}/held")
    assert held is not None and held["metadata"]["deletionTimestamp"]
    await client.merge_patch(f"{CMS}/held", {"metadata": {"finalizers": None}})
    assert fake.object(f"{CMS}/held") is None

    keeper = await client.create(CMS, cm("keeper"))
    keep_ref = {**ref, "name": "keeper", "uid": keeper["metadata"]["uid"]}
    await client.create(PODS, {"metadata": {"name": "orphan", "ownerReferences": [keep_ref]}, "spec": {}})
    await client.delete(f"{CMS}/keeper", propagation="Orphan")
    orphan = fake.object(f"{PODS}/orphan")
    assert orphan is not None and orphan["metadata"]["ownerReferences"] == []


async def test_pods_start_pending_and_the_test_moves_them_on(kube: Any) -> None:
    fake, client = kube
    created = await client.create(PODS, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]},
                                         "status": {"phase": "Succeeded"}})
    assert created["status"] == {"phase": "Pending"}, "a posted status is ignored"

    fake.set_pod_phase("ns", "p", "Failed", exit_code=137, reason="OOMKilled")
    pod = await client.get(f"{PODS}/p")
    assert pod["status"]["phase"] == "Failed"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"] == {"exitCode": 137, "reason": "OOMKilled"}


async def test_injected_faults_map_to_the_client_errors_and_run_out(kube: Any) -> None:
    fake, client = kube
    fake.fail("GET", f"{CMS}/*", 429, times=2, retry_after=3)
    fake.reset("*", PODS)

    for _ in range(2):
        with pytest.raises(api_errors.TooManyRequests) as throttled:
            await client.get(f"{CMS}/a")
        assert throttled.value.retry_after == 3.0
    with pytest.raises(api_errors.NotFound):
        await client.get(f"{CMS}/a")
    with pytest.raises(api_errors.TransportError, match="Connection reset"):
        await client.get(PODS)
    with pytest.raises(api_errors.NotFound, match="could not find the requested resource"):
        await client.get("/apis/example.com/v1/namespaces/ns/widgets")
