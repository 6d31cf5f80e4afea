"""The engine shared by every job kind: observe → reconcile (pure) → apply, until the job is done.

Level-triggered: each pass recomputes from the record and the watch caches, so a
restarted or duplicated trigger simply carries on. Wake-ups come from watches
(children, nodes, the record) and from timers the plan asks for (deadline, backoff).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from airflow_broadcast.cluster.api_errors import ClusterApiError, Forbidden, NotFound, Unauthorized
from airflow_broadcast.cluster.informers import Informer, shared_informer
from airflow_broadcast.cluster.job_events import EventRecorder, flush_events
from airflow_broadcast.cluster.job_records import (
    JOB_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    get_record,
    read_manifest,
    read_status,
    records_path,
)
from airflow_broadcast.cluster.kube_client import Backoff, JsonDict, KubeClient
from airflow_broadcast.cluster.observation import record_view
from airflow_broadcast.cluster.plan_executor import ChildEventStyle, PlanExecutor
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.reconcilers.plan import Plan, earliest

log = logging.getLogger(__name__)
RESYNC_SECONDS = 30.0
MIN_PASS_INTERVAL = 0.25
THREAD_THRESHOLD = 200


@dataclass
class WatchSet:
    """The caches a job kind reads. `pod_groups` (gang scheduling) must work; `priorities` is best effort."""

    children: Informer[Any]
    services: Informer[Any] | None = None
    nodes: Informer[Any] | None = None
    pod_groups: Informer[Any] | None = None
    priorities: Informer[Any] | None = None


class JobDriver(Protocol):
    """What the engine needs from a job kind."""

    kind: str
    style: ChildEventStyle

    def watch(self, client: KubeClient, namespace: str) -> WatchSet: ...

    def reconcile(self, manifest: Mapping[str, Any], record: JobRecord, watched: WatchSet, now: float) -> Plan: ...

    def settled(self, manifest: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
        """True when a waiting task may return although the job is not finished (BroadcastJob `Never`)."""
        ...


@dataclass
class LoopOutcome:
    """Why the loop stopped: finished, settled, gone, timeout or invalid; plus the last record."""

    reason: str
    record: JsonDict | None
    status: JsonDict = field(default_factory=dict)
    message: str = ""


def record_informer(client: KubeClient, namespace: str) -> Informer[JsonDict]:
    return shared_informer(client, records_path(namespace), lambda obj: obj,
                           label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY}", index_label=JOB_LABEL)


async def run_reconcile_loop(
    client: KubeClient, driver: JobDriver, namespace: str, record_name: str, uid: str, *,
    deadline: float | None = None, resync: float = RESYNC_SECONDS,
    progress: Callable[[Mapping[str, Any], Mapping[str, Any]], None] | None = None, single_pass: bool = False,
) -> LoopOutcome:
    """Drive one job until it finishes (or settles), disappears, or `deadline` (epoch) passes."""
    records = record_informer(client, namespace)
    watched = driver.watch(client, namespace)
    for informer in (records, watched.children, watched.services, watched.nodes):
        if informer is not None:
            await informer.wait_synced()
    missing = await _sync_optional(watched)
    if missing is not None:
        return LoopOutcome("error", None, message=missing)
    wake = asyncio.Event()
    job_name = ""
    subscriptions: list[tuple[Informer[Any], str]] = [(watched.children, uid)]
    if watched.services is not None:
        subscriptions.append((watched.services, uid))
    if watched.nodes is not None:
        subscriptions.append((watched.nodes, "*"))
    if watched.pod_groups is not None:
        subscriptions.append((watched.pod_groups, uid))
    for informer, key in subscriptions:
        informer.subscribe(key, wake)
    failures = Backoff(1.0, 30.0)
    executor = PlanExecutor(client, namespace, uid, pods=watched.children, services=watched.services,
                            style=driver.style, kind=driver.kind, pod_groups=watched.pod_groups)
    try:
        while True:
            raw = records.values.get(record_name)
            if raw is None or (raw.get("metadata") or {}).get("uid") != uid:
                return LoopOutcome("gone", None, message=f"job record {namespace}/{record_name} (uid {uid}) is gone")
            if not job_name:
                job_name = str(((raw.get("metadata") or {}).get("labels") or {}).get(JOB_LABEL, ""))
                records.subscribe(job_name, wake)
            wake.clear()
            manifest, status = read_manifest(raw), read_status(raw)
            record = record_view(raw, status)
            started = time.monotonic()
            try:
                plan = await _reconcile(driver, manifest, record, watched)
            except ValueError as exc:  # the record's manifest no longer validates (edited by hand)
                return LoopOutcome("invalid", raw, status, str(exc))
            failure = _permanent_watch_error(records, watched)
            if failure is not None:
                return LoopOutcome("error", raw, status, failure.describe())
            try:
                applied = await executor.apply(plan, raw, EventRecorder(client, raw))
            except ClusterApiError as exc:
                if not exc.retryable:
                    raise
                if deadline is not None and time.time() >= deadline:
                    return LoopOutcome("timeout", raw, status, "the task's execution deadline passed")
                delay = failures.next(exc.retry_after)  # the API is down or throttling: the next pass retries
                log.warning("pass on %s/%s failed (%s); retrying in %.1f s", namespace, record_name, exc, delay)
                await asyncio.sleep(delay)
                continue
            failures.reset()
            if applied.conflict:
                if not await _refresh_record(client, records, namespace, record_name):
                    await _wait(wake, 1.0)
                continue
            if applied.record is not None:
                records.upsert(applied.record, notify=False)
                raw, status = applied.record, read_status(applied.record)
            if progress is not None:
                progress(status, raw)
            if plan.finished:  # its TTL expiry is stamped; the task that reads the result or the sweeper deletes
                return LoopOutcome("finished", raw, status)
            if driver.settled(manifest, status):
                return LoopOutcome("settled", raw, status)
            if single_pass:
                return LoopOutcome("pending", raw, status)
            now = time.time()
            if deadline is not None and now >= deadline:
                return LoopOutcome("timeout", raw, status, "the task's execution deadline passed")
            timeout = earliest(plan.requeue_after, resync, None if deadline is None else deadline - now)
            if applied.create_errors:
                timeout = earliest(timeout, 2.0)  # R7: failed batches retry soon
            await _wait(wake, timeout)
            spent = time.monotonic() - started
            if spent < MIN_PASS_INTERVAL:
                await asyncio.sleep(MIN_PASS_INTERVAL - spent)  # coalesce bursts of watch events
    finally:
        await flush_events()
        for informer, key in subscriptions:
            informer.unsubscribe(key, wake)
        if job_name:
            records.unsubscribe(job_name, wake)


async def _refresh_record(client: KubeClient, records: Informer[JsonDict], namespace: str, record_name: str) -> bool:
    """M5: a status write lost to another writer (409): GET the record now instead of trusting the cache.

    The next pass recomputes from the fresh version, so the other writer's changes are kept
    and nothing depends on how far behind the watch is. False when the GET itself failed.
    """
    log.info("job record %s/%s changed under us (409 on the status write); re-reading it", namespace, record_name)
    try:
        fresh = await get_record(client, namespace, record_name)
    except ClusterApiError as exc:
        log.warning("could not re-read job record %s/%s: %s", namespace, record_name, exc.describe())
        return False
    if fresh is None:
        records.remove(record_name)
    else:
        records.upsert(fresh, notify=False)
    return True


async def _sync_optional(watched: WatchSet) -> str | None:
    """Gang scheduling needs its PodGroup API; PriorityClasses only refine minResources (0 when unreadable)."""
    if watched.priorities is not None:
        try:
            await watched.priorities.wait_synced()
        except ClusterApiError as exc:
            log.warning("PriorityClasses are not readable (%s); PodGroup minResources treat every priority as 0",
                        exc.describe())
    if watched.pod_groups is None:
        return None
    try:
        await watched.pod_groups.wait_synced()
    except NotFound:
        return (f"gang scheduling is on, but the PodGroup API ({watched.pod_groups.path}) does not exist: "
                "install the gang scheduler's CRDs, or turn gang scheduling off")
    except ClusterApiError as exc:
        return f"cannot watch PodGroups for gang scheduling: {exc.describe()}"
    return None


def _permanent_watch_error(*informers: Any) -> ClusterApiError | None:
    """A watch that lost its permission (403/401) makes the cache stale: stop instead of acting on it."""
    for informer in informers:
        if isinstance(informer, WatchSet):
            found = _permanent_watch_error(informer.children, informer.services, informer.nodes,
                                           informer.pod_groups)
            if found is not None:
                return found
        elif informer is not None and isinstance(informer.error, Forbidden | Unauthorized):
            return informer.error
    return None


async def _reconcile(driver: JobDriver, manifest: Mapping[str, Any], record: JobRecord, watched: WatchSet) -> Plan:
    """Run the pure pass; large jobs run it in a worker thread so the event loop keeps ticking."""
    now = time.time()
    size = len(watched.children.items(record.uid)) + (len(watched.nodes.values) if watched.nodes else 0)
    if size < THREAD_THRESHOLD:
        return driver.reconcile(manifest, record, watched, now)
    snapshot = WatchSet(
        children=_Frozen(watched.children, record.uid),  # type: ignore[arg-type]
        services=_Frozen(watched.services, record.uid) if watched.services else None,  # type: ignore[arg-type]
        nodes=_Frozen(watched.nodes, None) if watched.nodes else None,  # type: ignore[arg-type]
        pod_groups=_Frozen(watched.pod_groups, record.uid) if watched.pod_groups else None,  # type: ignore[arg-type]
        priorities=_Frozen(watched.priorities, None) if watched.priorities else None,  # type: ignore[arg-type]
    )
    return await asyncio.to_thread(driver.reconcile, manifest, record, snapshot, now)


class _Frozen:
    """A read-only copy of an informer's items, safe to read from another thread."""

    def __init__(self, informer: Informer[Any], index: str | None) -> None:
        self._items = informer.items(index)
        self.values = {i: v for i, v in enumerate(self._items)}

    def items(self, index_value: str | None = None) -> list[Any]:
        return self._items


async def _wait(event: asyncio.Event, timeout: float | None) -> None:
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except TimeoutError:
        pass


async def current_record(client: KubeClient, namespace: str, record_name: str) -> JsonDict | None:
    """The record as the shared cache has it (started and synced on demand)."""
    records = record_informer(client, namespace)
    await records.wait_synced()
    return records.values.get(record_name)

