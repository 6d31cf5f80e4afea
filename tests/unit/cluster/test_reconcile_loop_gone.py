"""X4: what the loop holds for a job is dropped when the job is NotFound.

Upstream keeps creation/deletion expectations per job and drops them when the job is gone.
Here the loop's per-job state is its subscriptions to the shared watch caches and the pass
in flight; a deleted record (or one re-created under the same name with a new uid) must end
the loop at once, with no further write and no subscription left behind.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest
from support.bcj_builders import manifest

from airflow_broadcast.cluster.informers import stop_informers
from airflow_broadcast.cluster.job_records import new_record, record_name, records_path
from airflow_broadcast.cluster.kinds.registry import driver_for
from airflow_broadcast.cluster.reconcile_loop import record_informer, run_reconcile_loop

NS = "ops"
KIND = "BroadcastJob"
RECORD = record_name(KIND, "x")


def node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": "1", "labels": {}}, "spec": {},
            "status": {"allocatable": {"pods": "110"}, "conditions": [{"type": "Ready", "status": "True"}]}}


def record(uid: str, version: int) -> dict[str, Any]:
    raw = new_record(KIND, "x", NS, manifest(name="x", namespace=NS), {}, {})
    raw["metadata"].update(uid=uid, resourceVersion=str(version))
    return raw


class MemoryApi:
    """Enough of KubeClient for one loop: lists come from memory, watches stay silent, writes are recorded."""

    def __init__(self, collections: dict[str, list[dict[str, Any]]]) -> None:
        self.collections = collections
        self.writes: list[tuple[str, str]] = []
        self.version = 100

    def _stored(self, body: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        meta = {"uid": f"uid-{self.version}", **body["metadata"], "resourceVersion": str(self.version)}
        return {**copy.deepcopy(body), "metadata": meta}

    async def list_pages(self, path: str, **query: Any) -> AsyncIterator[dict[str, Any]]:
        yield {"metadata": {"resourceVersion": "1"}, "items": copy.deepcopy(self.collections.get(path, []))}

    async def watch(self, path: str, **query: Any) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        await asyncio.Event().wait()
        yield "BOOKMARK", {}

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.writes.append(("create", path))
        return self._stored(body)

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.writes.append(("replace", path))
        return self._stored(body)

    async def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        self.writes.append((method, path))  # events
        return {}


async def wait_for(condition: Any, what: str) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize("change", ["deleted", "recreated with a new uid"])
async def test_X4_a_gone_job_ends_its_loop_with_no_further_write_and_no_subscription_left(change: str) -> None:
    api = MemoryApi({records_path(NS): [record("uid-1", 1)], "/api/v1/nodes": [node("n1"), node("n2")]})
    driver = driver_for(KIND)
    try:
        loop = asyncio.create_task(run_reconcile_loop(api, driver, NS, RECORD, "uid-1", resync=60))  # type: ignore[arg-type]
        records, watched = record_informer(api, NS), driver.watch(api, NS)  # type: ignore[arg-type]
        await wait_for(lambda: len(watched.children.items("uid-1")) == 2, "the first pass to create both pods")
        await wait_for(lambda: records._subscribers.get("x"), "the loop to watch its record")
        assert not loop.done()
        before = [w for w in api.writes if not w[1].endswith("/events")]

        if change == "deleted":
            records.remove(RECORD)
        else:
            records.upsert(record("uid-2", 500))
        outcome = await asyncio.wait_for(loop, 5)

        assert outcome.reason == "gone" and "uid-1" in outcome.message
        assert [w for w in api.writes if not w[1].endswith("/events")] == before, "nothing written for a gone job"
        assert ("create", f"/api/v1/namespaces/{NS}/pods") in before
        assert not records._subscribers.get("x")
        assert not watched.children._subscribers.get("uid-1")
        assert watched.nodes is not None and not watched.nodes._subscribers.get("*")
    finally:
        await stop_informers()
