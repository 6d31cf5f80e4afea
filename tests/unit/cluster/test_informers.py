"""Shared informers: heartbeat-only node updates wake nobody (L7); a relist repairs a stale cache (X3)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from airflow_broadcast.cluster.informers import Informer
from airflow_broadcast.cluster.observation import node_info, node_significance, pod_info


def node(version: int, heartbeat: str = "t0", labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "n1", "resourceVersion": str(version), "labels": labels or {"a": "1"}},
            "spec": {"taints": taints or []},
            "status": {"allocatable": {"pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": heartbeat}]}}


async def test_L7_heartbeat_only_node_updates_wake_no_job() -> None:
    informer: Informer[Any] = Informer(client=None, path="/api/v1/nodes", transform=node_info,  # type: ignore[arg-type]
                                       significant=node_significance)
    woken = asyncio.Event()
    informer.subscribe("*", woken)
    informer.upsert(node(1))
    woken.clear()

    informer.upsert(node(2, heartbeat="t1"))
    assert not woken.is_set(), "a heartbeat changed nothing that matters"

    informer.upsert(node(3, heartbeat="t2", taints=[{"key": "k", "effect": "NoSchedule"}]))
    assert woken.is_set(), "a new taint can change eligibility"


async def test_X6_our_own_write_then_its_replayed_watch_event_wake_nobody() -> None:
    informer: Informer[Any] = Informer(client=None, path="/pods", transform=pod_info,  # type: ignore[arg-type]
                                       index_label="airflow-broadcast.io/job-uid")
    woken = asyncio.Event()
    informer.subscribe("u1", woken)
    created = {"metadata": {"name": "p", "resourceVersion": "7", "labels": {"airflow-broadcast.io/job-uid": "u1"}},
               "spec": {}, "status": {}}
    informer.upsert(created, notify=False)
    informer.upsert(copy.deepcopy(created))
    assert not woken.is_set()
    assert [p.name for p in informer.items("u1")] == ["p"]


class _ListingClient:
    def __init__(self, pages: list[dict[str, Any]]) -> None:
        self.pages = pages

    async def list_pages(self, path: str, **query: Any) -> Any:
        for page in self.pages:
            yield page


async def test_X3_a_full_relist_repairs_a_cache_that_missed_events() -> None:
    """No expectations can get stuck: a relist replaces whatever the cache believed."""
    labels = {"airflow-broadcast.io/job-uid": "u1"}
    stale = {"metadata": {"name": "ghost", "resourceVersion": "3", "labels": labels}, "spec": {}, "status": {}}
    real = {"metadata": {"name": "real", "resourceVersion": "9", "labels": labels}, "spec": {},
            "status": {"phase": "Succeeded"}}
    client = _ListingClient([{"metadata": {"resourceVersion": "10"}, "items": [real]}])
    informer: Informer[Any] = Informer(client=client, path="/pods", transform=pod_info,  # type: ignore[arg-type]
                                       index_label="airflow-broadcast.io/job-uid")
    informer.upsert(stale)
    woken = asyncio.Event()
    informer.subscribe("u1", woken)

    version = await informer._relist()

    assert version == "10"
    assert [(p.name, p.phase) for p in informer.items("u1")] == [("real", "Succeeded")]
    assert woken.is_set()


async def test_a_cache_across_namespaces_keeps_objects_of_the_same_name_apart() -> None:
    """Job records of the same name in two namespaces are two jobs (the UI's cluster-wide cache)."""
    def record(namespace: str, version: int) -> dict[str, Any]:
        return {"metadata": {"name": "bcj-nightly", "namespace": namespace, "resourceVersion": str(version)}}

    everywhere: Informer[Any] = Informer(client=_ListingClient([{"items": [record("a", 1), record("b", 2)]}]),  # type: ignore[arg-type]
                                         path="/api/v1/configmaps", transform=lambda obj: obj)
    await everywhere._relist()
    assert sorted(r["metadata"]["namespace"] for r in everywhere.items()) == ["a", "b"]
    everywhere.remove(everywhere.key_of(record("a", 1)["metadata"]))
    assert [r["metadata"]["namespace"] for r in everywhere.items()] == ["b"]

    one_namespace: Informer[Any] = Informer(client=None, path="/api/v1/namespaces/a/configmaps",  # type: ignore[arg-type]
                                            transform=lambda obj: obj)
    one_namespace.upsert(record("a", 3))
    assert list(one_namespace.values) == ["bcj-nightly"]  # readers of one namespace look objects up by name


def test_an_index_lists_and_counts_its_objects_as_they_come_move_and_go() -> None:
    def pod(name: str, job: str, version: int) -> dict[str, Any]:
        return {"metadata": {"name": name, "resourceVersion": str(version), "labels": {"job": job}}}

    pods: Informer[Any] = Informer(client=None, path="/api/v1/namespaces/a/pods",  # type: ignore[arg-type]
                                   transform=lambda obj: obj["metadata"]["name"], index_label="job")
    for version, (name, job) in enumerate([("p1", "x"), ("p2", "x"), ("p3", "y")], start=1):
        pods.upsert(pod(name, job, version))
    assert sorted(pods.items("x")) == ["p1", "p2"] and pods.count("x") == 2 and pods.count("y") == 1
    pods.upsert(pod("p2", "y", 4))  # relabelled: it moves to the other index value
    pods.remove("p1")
    assert pods.items("x") == () and pods.count("x") == 0
    assert sorted(pods.items("y")) == ["p2", "p3"] and pods.count("y") == 2 and pods.count("z") == 0


def test_a_view_is_the_same_tuple_until_one_of_its_objects_changes_in_place() -> None:
    """A pass compares its job's objects with the last pass's by identity; an unchanged view is one object."""
    def pod(name: str, job: str, version: int, phase: str = "Pending") -> dict[str, Any]:
        return {"metadata": {"name": name, "resourceVersion": str(version), "labels": {"job": job}},
                "status": {"phase": phase}}

    pods: Informer[Any] = Informer(client=None, path="/api/v1/namespaces/a/pods",  # type: ignore[arg-type]
                                   transform=lambda obj: (obj["metadata"]["name"], obj["status"]["phase"]),
                                   index_label="job")
    for version, (name, job) in enumerate([("p1", "x"), ("p2", "x"), ("p3", "y")], start=1):
        pods.upsert(pod(name, job, version))
    x, y, every = pods.items("x"), pods.items("y"), pods.items()
    assert pods.items("x") is x and pods.items() is every
    pods.upsert(pod("p1", "x", 4, "Running"))
    assert pods.items("y") is y, "a change elsewhere leaves the view alone"
    assert pods.items("x") == (("p1", "Running"), ("p2", "Pending")), "a changed object keeps its place"
    assert pods.items() is not every and len(pods.items()) == 3
    pods.upsert(pod("p1", "x", 4, "Failed"))  # a replayed version changes nothing
    assert pods.items("x")[0] == ("p1", "Running")
    pods.upsert(pod("p3", "x", 5))  # moved to x: both views change
    assert [n for n, _ in pods.items("x")] == ["p1", "p2", "p3"] and pods.items("y") == ()
    pods.remove("p2")
    assert [n for n, _ in pods.items("x")] == ["p1", "p3"] and len(pods.items()) == 2


async def test_a_relist_keeps_an_object_written_after_its_snapshot() -> None:
    """A pod we created while a relist was paging is not in the list, but it exists: dropping it
    made the next pass create the node's pod again (a third attempt where the second ran)."""
    labels = {"airflow-broadcast.io/job-uid": "u1"}
    client = _ListingClient([{"metadata": {"resourceVersion": "10"}, "items": []}])
    informer: Informer[Any] = Informer(client=client, path="/pods", transform=pod_info,  # type: ignore[arg-type]
                                       index_label="airflow-broadcast.io/job-uid")
    informer.upsert({"metadata": {"name": "before", "resourceVersion": "9", "labels": labels}}, notify=False)
    informer.upsert({"metadata": {"name": "since", "resourceVersion": "11", "labels": labels}}, notify=False)

    await informer._relist()

    assert [p.name for p in informer.items("u1")] == ["since"]


def job_pod(name: str, version: int, uid: str = "u1", phase: str = "Running") -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": str(version),
                         "labels": {"airflow-broadcast.io/job-uid": uid}},
            "spec": {"nodeName": name}, "status": {"phase": phase}}


def test_a_large_collection_is_handed_out_with_a_journal_that_replays_to_the_cache() -> None:
    from airflow_broadcast.cluster.cache_journals import JOURNAL_ABOVE
    from airflow_broadcast.reconcilers.journal import Journaled

    informer: Informer[Any] = Informer(client=None, path="/pods", transform=pod_info,  # type: ignore[arg-type]
                                       index_label="airflow-broadcast.io/job-uid")
    for i in range(JOURNAL_ABOVE - 1):
        informer.upsert(job_pod(f"p{i:03d}", i + 1))
    assert isinstance(informer.snapshot("u1"), tuple), "a small collection: a plain tuple"
    for i in range(JOURNAL_ABOVE, JOURNAL_ABOVE + 3):
        informer.upsert(job_pod(f"p{i:03d}", 1000 + i))
    first = informer.snapshot("u1")
    assert isinstance(first, Journaled) and list(first) == list(informer.items("u1"))

    informer.upsert(job_pod("p005", 2000, phase="Succeeded"))
    informer.remove("p007")
    informer.upsert(job_pod("p010", 2001, uid="u2"))  # relabelled: it leaves u1's collection
    second = informer.snapshot("u1")
    assert isinstance(second, Journaled) and second.log is first.log
    assert list(second) == list(informer.items("u1")) and len(second) == JOURNAL_ABOVE
    changes = second.since(first.log, first.end)
    assert changes is not None and [key for key, _ in changes] == ["p005", "p007", "p010"]
    assert list(first) != list(second), "an earlier snapshot stays as it was"


def test_a_journal_starts_afresh_when_long_and_is_dropped_once_nobody_reads_it() -> None:
    from airflow_broadcast.cluster.cache_journals import JOURNAL_ABOVE, JOURNAL_SLACK
    from airflow_broadcast.reconcilers.journal import Journaled

    informer: Informer[Any] = Informer(client=None, path="/pods", transform=pod_info,  # type: ignore[arg-type]
                                       index_label="airflow-broadcast.io/job-uid")
    version = 0

    def churn(times: int) -> None:
        nonlocal version
        for _ in range(times):
            version += 1
            informer.upsert(job_pod(f"p{version % JOURNAL_ABOVE:03d}", version))

    churn(JOURNAL_ABOVE)
    first = informer.snapshot("u1")
    assert isinstance(first, Journaled)
    churn(JOURNAL_ABOVE + JOURNAL_SLACK + 1)
    second = informer.snapshot("u1")
    assert isinstance(second, Journaled) and second.log is not first.log, "a long log starts afresh"
    assert len(second.log) <= 2 * JOURNAL_ABOVE + JOURNAL_SLACK and list(second) == list(informer.items("u1"))
    churn(2 * (2 * JOURNAL_ABOVE + JOURNAL_SLACK + 1))  # nobody reads since: the next fresh start drops it
    assert "u1" not in informer._journals._logs
    for i in range(JOURNAL_ABOVE):
        informer.remove(f"p{i:03d}")
    assert informer.snapshot("u1") == ()


async def test_a_relist_applies_each_page_as_it_comes_and_then_hands_the_freed_heap_back(monkeypatch: Any) -> None:
    """A relist of thousands of pods holds one page of raw objects at a time, and releases the heap they took."""
    from airflow_broadcast.cluster import heap_release

    labels = {"airflow-broadcast.io/job-uid": "u1"}

    def pod(name: str, version: int) -> dict[str, Any]:
        return {"metadata": {"name": name, "resourceVersion": str(version), "labels": labels}, "spec": {},
                "status": {}}

    seen_after_first_page: list[str] = []
    informer: Informer[Any]

    class _Pages:
        async def list_pages(self, path: str, **query: Any) -> Any:
            yield {"metadata": {"resourceVersion": "20"}, "items": [pod("a", 11), pod("b", 12)]}
            seen_after_first_page.extend(p.name for p in informer.items("u1"))
            yield {"metadata": {"resourceVersion": "20"}, "items": [pod("c", 13)]}

    informer = Informer(client=_Pages(), path="/pods", transform=pod_info,  # type: ignore[arg-type]
                        index_label="airflow-broadcast.io/job-uid")
    informer.upsert(pod("gone", 5))
    released: list[bool] = []
    monkeypatch.setattr(heap_release, "request", lambda: released.append(True))

    assert await informer._relist() == "20"

    assert sorted(seen_after_first_page) == ["a", "b", "gone"]  # page one applied before page two was read
    assert sorted(p.name for p in informer.items("u1")) == ["a", "b", "c"]  # what the list lacked is gone
    assert released == [True]


async def test_a_first_list_that_never_completes_is_a_transport_error_naming_the_collection() -> None:
    """Not a bare TimeoutError, whose empty message the task would show as "TimeoutError: "."""
    from airflow_broadcast.cluster.api_errors import TransportError

    class _Hanging:
        async def list_pages(self, path: str, **query: Any) -> Any:
            await asyncio.sleep(3600)
            yield {}

    informer: Informer[Any] = Informer(_Hanging(), "/api/v1/nodes", lambda o: o)  # type: ignore[arg-type]
    informer.start()
    try:
        await informer.wait_synced(timeout=0.05)
    except TransportError as exc:
        assert exc.describe().startswith("Kubernetes API 0 Timeout on LIST /api/v1/nodes: no complete LIST within 0 s")
    else:
        raise AssertionError("wait_synced returned")
    finally:
        assert informer._task is not None
        informer._task.cancel()


async def test_an_unexpected_error_in_the_loop_is_logged_and_the_informer_lists_again(caplog: Any) -> None:
    """A defect (here a page that breaks the parser) must not end the shared watch, leaving every job of the
    process a cache that never changes again."""
    pod = {"metadata": {"name": "p", "resourceVersion": "3"}}

    class _BreaksOnce:
        calls = 0

        async def list_pages(self, path: str, **query: Any) -> Any:
            _BreaksOnce.calls += 1
            if _BreaksOnce.calls == 1:
                raise ValueError("a defect")
            yield {"metadata": {"resourceVersion": "3"}, "items": [pod]}

        async def watch(self, path: str, **query: Any) -> Any:
            await asyncio.sleep(3600)
            yield "", {}

    informer: Informer[Any] = Informer(_BreaksOnce(), "/api/v1/pods", lambda o: o)  # type: ignore[arg-type]
    informer.start()
    try:
        await informer.wait_synced(timeout=5)
        assert list(informer.values) == ["p"]
        assert "watch of /api/v1/pods broke" in caplog.text and "ValueError: a defect" in caplog.text
    finally:
        assert informer._task is not None
        informer._task.cancel()
