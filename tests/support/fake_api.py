"""A scripted in-memory API server for unit tests of the plan executor.

It answers the few calls the executor makes (create, get, delete, the record PUT, event
POSTs) and records them, so each outcome (a failed create, a child already gone, a
slow-start batch) can be forced exactly and the events checked against what happened.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection
from typing import Any

from airflow_broadcast.cluster import api_errors as e
from airflow_broadcast.cluster.job_events import EventRecorder, flush_events
from airflow_broadcast.cluster.plan_executor import ApplyResult, ChildEventStyle, PlanExecutor
from airflow_broadcast.reconcilers.plan import Plan

UID = "record-uid"
RECORD = {"metadata": {"name": "bcj-x", "namespace": "ns", "uid": UID, "resourceVersion": "1"}, "data": {}}


class FakeApi:
    """Records calls. `fail` maps a child name to the error its create raises, `existing` holds what
    a GET finds, and deleting a child in `gone` ("name", or "plural/name" for one kind) finds nothing."""

    def __init__(self, fail: dict[str, Exception] | None = None, existing: dict[str, dict[str, Any]] | None = None,
                 gone: Collection[str] = ()) -> None:
        self.fail = fail or {}
        self.existing = existing or {}
        self.gone = set(gone)
        self.batch: list[str] = []
        self.batches: list[list[str]] = []
        self.deleted: list[str] = []
        self.written: list[dict[str, Any]] = []
        self.events: list[tuple[str, str]] = []
        self.event_types: dict[str, set[str]] = {}  # reason -> the Event types it was recorded with
        self.max_inflight = 32
        self.warm_gets: list[str] = []  # GETs of the connection warm-up, by path
        self.warm_error: Exception | None = None

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        await asyncio.sleep(0)
        if not self.batches or self.batches[-1] is not self.batch:
            self.batches.append(self.batch)
        self.batch.append(name)
        if name in self.fail:
            raise self.fail[name]
        return {**body, "metadata": {**body["metadata"], "uid": f"uid-{name}", "resourceVersion": "5"}}

    async def get(self, path: str, **query: Any) -> dict[str, Any]:
        name = path.rsplit("/", 1)[-1]
        if name not in self.existing:
            raise e.NotFound(404, "NotFound", "gone")
        return self.existing[name]

    async def delete(self, path: str, **kwargs: Any) -> dict[str, Any]:
        plural, name = path.rsplit("/", 2)[-2:]
        if name in self.gone or f"{plural}/{name}" in self.gone:
            raise e.NotFound(404, "NotFound", "gone")
        self.deleted.append(name)
        return {}

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.written.append(body)
        return body

    async def request(self, method: str, path: str, *, body: dict[str, Any] | None = None, retry: bool = True,
                      timeout: float | None = None) -> dict[str, Any]:
        if method == "GET":
            self.warm_gets.append(path)
            await asyncio.sleep(0)
            if self.warm_error is not None:
                raise self.warm_error
            return {"major": "1"}
        assert body is not None
        self.events.append((body["reason"], body["message"]))
        self.event_types.setdefault(body["reason"], set()).add(body["type"])
        return {}


async def apply(api: FakeApi, plan: Plan, *, style: ChildEventStyle | None = None,
                record: dict[str, Any] | None = None) -> ApplyResult:
    """Execute `plan` against `api` and wait for its events; `api.batches` gets one list per slow-start batch."""
    original_gather = asyncio.gather

    async def batched_gather(*aws: Any, **kwargs: Any) -> Any:
        api.batch = []
        return await original_gather(*aws, **kwargs)

    record = record or RECORD
    api.existing.setdefault(record["metadata"]["name"], record)  # the executor creates only for a live record
    asyncio.gather = batched_gather  # type: ignore[assignment]
    try:
        executor = PlanExecutor(api, "ns", record["metadata"]["uid"], style=style or ChildEventStyle())  # type: ignore[arg-type]
        result = await executor.apply(plan, record, EventRecorder(api, record))  # type: ignore[arg-type]
        await flush_events(str(record["metadata"]["uid"]))
        return result
    finally:
        asyncio.gather = original_gather


class RecordStore:
    """Job records (ConfigMaps) by name, for the TTL paths: LIST, PUT and DELETE them, POST events.

    The first `failing_deletes` deletes fail with a 500, as an API server under load would.
    """

    def __init__(self, *records: dict[str, Any], failing_deletes: int = 0) -> None:
        self.records = {r["metadata"]["name"]: r for r in records}
        self.failing_deletes = failing_deletes
        self.events: list[tuple[str, str]] = []

    async def list_pages(self, path: str, **query: Any) -> AsyncIterator[dict[str, Any]]:
        yield {"items": list(self.records.values())}

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.records[body["metadata"]["name"]] = body
        return body

    async def delete(self, path: str, **kwargs: Any) -> dict[str, Any]:
        if self.failing_deletes:
            self.failing_deletes -= 1
            raise e.ServerError(500, "InternalError", "etcdserver: request timed out")
        name = path.rsplit("/", 1)[-1]
        if self.records.pop(name, None) is None:
            raise e.NotFound(404, "NotFound", "gone")
        return {}

    async def request(self, method: str, path: str, *, body: dict[str, Any], retry: bool) -> dict[str, Any]:
        self.events.append((body["reason"], body["message"]))
        return {}


def job_record(kind: str, job: str, **annotations: str) -> dict[str, Any]:
    """A stored job record of `kind` for job `job`, with the given annotations."""
    name = f"{'tfjob' if kind == 'TFJob' else 'bcj'}-{job}"
    labels = {"airflow-broadcast.io/kind": kind, "airflow-broadcast.io/job-name": job}
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels,
                         "annotations": dict(annotations), "resourceVersion": "7"}, "data": {}}
