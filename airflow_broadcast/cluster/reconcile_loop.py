"""The engine shared by every job kind: observe → reconcile (pure) → apply, until the job is done.

Level-triggered: each pass recomputes from the record and the watch caches, so a restarted or duplicated
trigger simply carries on. Wake-ups come from watches (children, nodes, the record) and plan timers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from airflow_broadcast.cluster import heap_release, job_records, pass_pacing
from airflow_broadcast.cluster.api_errors import ClusterApiError, Forbidden, NotFound, Unauthorized
from airflow_broadcast.cluster.cache_subscribers import Waker
from airflow_broadcast.cluster.informers import Informer, shared_informer
from airflow_broadcast.cluster.job_events import EventRecorder, flush_events
from airflow_broadcast.cluster.job_records import MANAGED_BY, MANAGED_BY_LABEL, cached_record, record_view, records_path
from airflow_broadcast.cluster.job_warnings import JobWarning, JobWarnings, events_informer
from airflow_broadcast.cluster.kube_client import Backoff, JsonDict, KubeClient
from airflow_broadcast.cluster.pass_pacing import ProgressWrites, coalesce_gap, pass_turn, wait_event, wait_for_work
from airflow_broadcast.cluster.plan_executor import ApplyResult, ChildEventStyle, PlanExecutor
from airflow_broadcast.cluster.record_parts import record_index
from airflow_broadcast.cluster.wake import Wake
from airflow_broadcast.reconcilers.kind import JobKind
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.reconcilers.plan import Plan, earliest
from airflow_broadcast.reconcilers.startup import check_startup
from airflow_broadcast.specs.manifest_limits import check_stored_manifest

log = logging.getLogger(__name__)
RESYNC_SECONDS = 30.0
CREATE_RETRY_SECONDS = 2.0
THREAD_THRESHOLD = 200
ObservedT = TypeVar("ObservedT")


@dataclass
class WatchSet:
    """The caches a job kind reads. `pod_groups` (gang scheduling) must work; `priorities` is best effort."""

    children: Informer[Any]
    services: Informer[Any] | None = None
    nodes: Informer[Any] | None = None
    pod_groups: Informer[Any] | None = None
    priorities: Informer[Any] | None = None
    records: Informer[Any] | None = None  # set by the loop: the namespace's records and their parts


class JobDriver(Protocol[ObservedT]):
    """A job kind plus the cluster side of it: what to watch, and what a pass observes from the caches."""

    @property
    def kind(self) -> JobKind[ObservedT, Any]: ...

    @property
    def style(self) -> ChildEventStyle: ...

    def watch(self, client: KubeClient, namespace: str) -> WatchSet: ...

    def observe(self, watched: WatchSet, uid: str) -> ObservedT:
        """A snapshot of the job's children (safe to reconcile in another thread)."""
        ...


class LoopReason(StrEnum):
    """Why the loop stopped; the values are the `status` of the trigger's event."""

    FINISHED = "finished"
    SETTLED = "settled"
    PENDING = "pending"
    GONE = "gone"
    TIMEOUT = "timeout"
    STARTUP_TIMEOUT = "startup_timeout"
    INVALID = "invalid"
    ERROR = "error"


@dataclass
class LoopOutcome:
    """Why the loop stopped, the record as last read (None if it was never read), and a message."""

    reason: LoopReason
    record: JobRecord | None
    message: str = ""

    @property
    def status(self) -> Mapping[str, Any]:
        return self.record.status if self.record is not None else {}


def record_informer(client: KubeClient, namespace: str) -> Informer[JsonDict]:
    return shared_informer(client, records_path(namespace), cached_record,
                           label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY}", index_by=record_index)


async def run_reconcile_loop(
    client: KubeClient, driver: JobDriver[ObservedT], namespace: str, record_name: str, uid: str, *,
    deadline: float | None = None, resync: float = RESYNC_SECONDS,
    progress: Callable[[JobRecord], None] | None = None, single_pass: bool = False,
    startup_timeout: float | None = None, warnings: Callable[[JobWarning], None] | None = None,
    thread_threshold: int = THREAD_THRESHOLD, announce: Callable[[LoopOutcome], None] | None = None,
) -> LoopOutcome:
    """Drive one job until it finishes (or settles), disappears, or `deadline` (epoch) passes.

    `startup_timeout` (seconds) ends it when a pod has been Pending that long; `warnings`
    receives the job's Warning events and warning pod statuses as they appear. A pass over
    more than `thread_threshold` children and nodes runs in a worker thread. `announce` gets
    the outcome of the finishing pass before its writes, so that a caller can report it while
    they go out; a reader that finds the record behind it repeats the pass (level-triggered).
    """
    records = record_informer(client, namespace)
    watched = driver.watch(client, namespace)
    watched.records = records
    for informer in (records, watched.children, watched.services, watched.nodes):
        if informer is not None:
            await informer.wait_synced()
    missing = await _sync_optional(watched)
    if missing is not None:
        return LoopOutcome(LoopReason.ERROR, None, missing)
    wake, job_name, gone = Wake(), "", f"job record {namespace}/{record_name} (uid {uid}) is gone"
    children = pass_pacing.child_wake(wake, driver.kind.lazy_child_change)
    subscriptions: list[tuple[Informer[Any], str, Waker]] = [(watched.children, uid, children)]
    subscriptions += [(informer, key, wake) for informer, key in (
        (watched.services, uid), (watched.nodes, "*"), (watched.pod_groups, uid)) if informer is not None]
    for informer, key, waker in subscriptions:
        informer.subscribe(key, waker)
    failures = Backoff(1.0, 30.0)
    executor = PlanExecutor(client, namespace, uid, pods=watched.children, services=watched.services,
                            style=driver.style, kind=driver.kind.name, pod_groups=watched.pod_groups,
                            records=records)
    progress_writes = ProgressWrites()
    trouble: JobWarnings | None = None
    feed: asyncio.Task[None] | None = None
    viewed: tuple[JsonDict, JobRecord] | None = None
    try:
        while True:
            raw = records.values.get(record_name)
            if raw is None or (raw.get("metadata") or {}).get("uid") != uid:
                if await job_records.record_in_cluster(client, records, namespace, record_name, uid):
                    continue  # created a moment ago, and the watch had not brought it yet
                return LoopOutcome(LoopReason.GONE, None, gone)
            if viewed is None or raw is not viewed[0]:  # the cache holds the same object until the record changes
                try:
                    check_stored_manifest(str((raw.get("data") or {}).get("manifest") or ""))
                    viewed = (raw, record_view(raw))
                except (ValueError, RecursionError) as exc:  # a hand-edited record, too big or not JSON
                    message = f"job record {namespace}/{record_name}: {exc}"[:1000]
                    return LoopOutcome(LoopReason.INVALID, None, message)
            record = viewed[1]
            if not job_name:
                job_name = record.job_name
                records.subscribe(job_name, wake)
                if warnings is not None or startup_timeout:
                    trouble = JobWarnings(watched.children, events_informer(client, namespace), uid,
                                          f"{driver.kind.name} {namespace}/{job_name}")
                if warnings is not None and trouble is not None and not single_pass:
                    feed = asyncio.get_running_loop().create_task(trouble.feed(warnings))
            wake.clear()
            children.seen()
            started = time.monotonic()
            try:
                plan = await _reconcile(driver, record, watched, thread_threshold)
                took = time.monotonic() - started  # the pass itself; the writes that follow leave the loop free
            except ValueError as exc:  # the record's manifest no longer validates (edited by hand)
                return LoopOutcome(LoopReason.INVALID, record, str(exc))
            failure = _permanent_watch_error(records, watched)
            if failure is not None:
                return LoopOutcome(LoopReason.ERROR, record, failure.describe())
            if announce is not None and plan.finished and not plan.create_pods:
                announce(LoopOutcome(LoopReason.FINISHED, _planned(record, plan)))
                announce = None
            held = None if single_pass else progress_writes.hold(
                plan, record.status, driver.kind.settled(_planned(record, plan)), time.monotonic())
            try:
                applied = ApplyResult() if held is not None else await executor.apply(
                    plan, raw, EventRecorder(client, raw))
            except ClusterApiError as exc:
                if isinstance(exc, NotFound) and not await job_records.record_in_cluster(
                        client, records, namespace, record_name, uid):  # deleted while the pass ran
                    return LoopOutcome(LoopReason.GONE, record, gone)
                if not exc.retryable:
                    raise
                if deadline is not None and time.time() >= deadline:
                    return LoopOutcome(LoopReason.TIMEOUT, record, "the task's execution deadline passed")
                delay = failures.next(exc.retry_after)  # the API is down or throttling: the next pass retries
                log.warning("pass on %s/%s failed (%s); retrying in %.1f s", namespace, record_name, exc, delay)
                await asyncio.sleep(delay)
                continue
            failures.reset()
            if held is None:
                progress_writes.applied(plan, time.monotonic())
            if applied.conflict:
                if not await job_records.refresh_record(client, records, namespace, record_name):
                    await wait_event(wake, 1.0)
                continue
            if applied.record is not None:
                records.upsert(applied.record, notify=False)
                viewed = (applied.record, record_view(applied.record))
                raw, record = viewed
            if progress is not None:
                progress(record)
            if plan.finished:  # its TTL expiry is stamped; the task that reads the result or the sweeper deletes
                return LoopOutcome(LoopReason.FINISHED, record)
            if driver.kind.settled(record):
                return LoopOutcome(LoopReason.SETTLED, record)
            now = time.time()
            startup = check_startup(watched.children.items(uid) if startup_timeout else (), now, startup_timeout)
            if startup.stall is not None and trouble is not None and startup_timeout:
                return LoopOutcome(LoopReason.STARTUP_TIMEOUT, record, trouble.explain(startup.stall, startup_timeout))
            if single_pass:
                return LoopOutcome(LoopReason.PENDING, record)
            if deadline is not None and now >= deadline:
                return LoopOutcome(LoopReason.TIMEOUT, record, "the task's execution deadline passed")
            requeue = earliest(plan.requeue_after, held)
            if applied.create_errors:  # R7: failed batches retry soon, but not back to back
                requeue = max(requeue or 0.0, CREATE_RETRY_SECONDS)
            timer = earliest(requeue, None if deadline is None else deadline - now,
                             None if startup.next_check is None else startup.next_check - now)
            del plan, applied, startup, record  # an idle job keeps its cached record, not its last pass
            viewed = viewed if job_records.view_worth_keeping(raw) else None
            await wait_for_work(wake, None if timer is None else time.monotonic() + timer, resync,
                                lambda: _permanent_watch_error(records, watched) is not None,
                                heap_release.after(driver.kind.forget_parsed))
            await asyncio.sleep(coalesce_gap(time.monotonic() - started, took))
    finally:
        if feed is not None:
            feed.cancel()
            await asyncio.gather(feed, return_exceptions=True)
        await _report_rest(trouble, warnings, single_pass)
        await flush_events(uid)
        children.seen()
        for informer, key, waker in subscriptions:
            informer.unsubscribe(key, waker)
        if job_name:
            records.unsubscribe(job_name, wake)
        heap_release.request()


def _planned(record: JobRecord, plan: Plan) -> JobRecord:
    """The record as the plan will write it (a finishing pass creates nothing, so no create counts)."""
    status = plan.status_after(0, 0)
    return record if status is None else dataclasses.replace(record, status=status)


async def _report_rest(trouble: JobWarnings | None, warnings: Callable[[JobWarning], None] | None,
                       single_pass: bool) -> None:
    """The warnings not reported yet: a poke's single pass (no feed runs), or what came after the feed's last look."""
    if trouble is not None and warnings is not None:
        for warning in [*(await trouble.ready(10.0) if single_pass else []), *trouble.collect()]:
            warnings(warning)


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


async def _reconcile(driver: JobDriver[ObservedT], record: JobRecord, watched: WatchSet,
                     thread_threshold: int = THREAD_THRESHOLD) -> Plan:
    """Run the pure pass on a snapshot of the caches; large jobs run it in a worker thread so the loop keeps ticking."""
    size = watched.children.count(record.uid) + (len(watched.nodes.values) if watched.nodes else 0)
    if size < thread_threshold:
        async with pass_turn():
            return driver.kind.reconcile(record, driver.observe(watched, record.uid), time.time())
    observed = driver.observe(watched, record.uid)
    return await asyncio.to_thread(driver.kind.reconcile, record, observed, time.time())
