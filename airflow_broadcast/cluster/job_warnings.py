"""What went wrong with a job's pods, as it happens: Warning events and the pod statuses that are warnings.

Warning events of the namespace come from one shared informer (field selector `type=Warning`,
indexed by the involved object's uid), so a job only looks up its own pods and its record.
Some causes are no Event at all: OOMKilled is a container's terminated reason, and image
pull failures are also container waiting reasons; those are read from the pods' status.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.cluster.informers import Informer, shared_informer
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.cluster.wake import Wake
from airflow_broadcast.reconcilers.journal import ChangeTracker
from airflow_broadcast.reconcilers.observed import STUCK_WAITING_REASONS, PodInfo
from airflow_broadcast.reconcilers.startup import StartupStall
from airflow_broadcast.specs.timestamps import from_rfc3339

EXIT_WARNINGS = frozenset({"OOMKilled", "ContainerCannotRun"})  # terminated reasons
FEED_INTERVAL_SECONDS = 1.0
MAX_MESSAGE = 1024


@dataclass(frozen=True)
class WarningEvent:
    """One core/v1 Event of type Warning; `count` grows when the source repeats it."""

    name: str
    involved_kind: str
    involved_name: str
    involved_uid: str
    reason: str
    message: str
    count: int
    last_seen: float


@dataclass(frozen=True)
class JobWarning:
    """One line's worth of trouble: `subject` is `pod <name>` or the job itself."""

    reason: str
    subject: str
    message: str
    node: str = ""

    def describe(self) -> str:
        where = f" on node {self.node}" if self.node else ""
        return f"Warning {self.reason} {self.subject}{where}: {self.message}"


def warning_event(obj: JsonDict) -> WarningEvent:
    meta = obj.get("metadata") or {}
    involved = obj.get("involvedObject") or {}
    series = obj.get("series") or {}
    seen = obj.get("lastTimestamp") or series.get("lastObservedTime") or obj.get("eventTime")
    return WarningEvent(
        name=str(meta.get("name", "")), involved_kind=str(involved.get("kind", "")),
        involved_name=str(involved.get("name", "")), involved_uid=str(involved.get("uid", "")),
        reason=str(obj.get("reason", "") or ""), message=str(obj.get("message", "") or "")[:MAX_MESSAGE],
        count=int(series.get("count") or obj.get("count") or 1), last_seen=from_rfc3339(seen) or 0.0,
    )


def _involved_uid(obj: JsonDict) -> str:
    return str((obj.get("involvedObject") or {}).get("uid", ""))


def events_informer(client: KubeClient, namespace: str) -> Informer[WarningEvent]:
    """The namespace's Warning events, shared by every job of the namespace in this process."""
    return shared_informer(client, api_path("v1", "events", namespace=namespace), warning_event,
                           field_selector="type=Warning", index_by=_involved_uid)


def status_warnings(pod: PodInfo) -> list[tuple[str, str]]:
    """(reason, message) of the pod's status that are warnings: OOMKilled and the like, stuck waiting reasons."""
    found = [(e.reason, f"container {e.container} terminated with exit code {e.exit_code}"
              + (f": {e.message}" if e.message else "")) for e in pod.all_exits if e.reason in EXIT_WARNINGS]
    if pod.waiting_reason in STUCK_WAITING_REASONS and not pod.terminal:
        found.append((pod.waiting_reason, f"a container is waiting: {pod.waiting_reason}"
                      + (f" ({pod.restarts} restart(s))" if pod.restarts else "")))
    return found


class _Mark:
    """A feed's subscription to one object's Warning events: notes that they changed, and wakes the feed."""

    __slots__ = ("dirty", "uid", "wake")

    def __init__(self, dirty: dict[str, None], uid: str, wake: Wake) -> None:
        self.dirty, self.uid, self.wake = dirty, uid, wake

    def set(self) -> None:
        self.dirty[self.uid] = None
        self.wake.set()


class JobWarnings:
    """The new warnings of one job (record `uid`) since the last `collect()`, and the latest event per pod."""

    def __init__(self, pods: Informer[PodInfo], events: Informer[WarningEvent], uid: str, job: str) -> None:
        self.pods = pods
        self.events = events
        self.uid = uid
        self.job = job
        self._counts: dict[str, int] = {}
        self._statuses: dict[tuple[str, str, int], None] = {}  # dicts, not sets: an empty one is 64 bytes, not 216
        self._events_seen: dict[str, tuple[WarningEvent, ...]] = {}
        self._pod_changes: ChangeTracker[PodInfo] = ChangeTracker()
        self._pods_by_uid: dict[str, PodInfo] = {}
        self._marks: dict[str, _Mark] = {}
        self._dirty: dict[str, None] = {}
        self._wake: Wake | None = None  # set while a feed listens
        self._blind = False

    def collect(self) -> list[JobWarning]:
        """The warnings not yet reported. Only what changed is read again: the pods that changed (from the
        cache's journal) and, while a feed listens, the objects whose Warning events changed; without a
        feed, every pod's events (the cache hands out the same tuple of them until one changes)."""
        found: list[JobWarning] = []
        gone, pods = self._pod_changes.take(self.pods.snapshot(self.uid))
        self._pods_by_uid.update((pod.uid, pod) for pod in pods)
        for pod in gone:
            if self._pods_by_uid.get(pod.uid) is pod:
                del self._pods_by_uid[pod.uid]
                self._unlisten(pod.uid)
        if self._wake is None:
            uids: Iterable[str] = self._pods_by_uid
        else:
            for pod in pods:
                self._listen(pod.uid)
            uids = dict.fromkeys([*(pod.uid for pod in pods), *sorted(self._dirty)])
            self._dirty.clear()
        self._new_events(self.uid, self.job, "", found)
        for uid in uids:
            owner = self._pods_by_uid.get(uid)
            if owner is not None:
                self._new_events(uid, f"pod {owner.name}", owner.node, found)
        for pod in pods:
            if pod.deleting:
                continue
            for reason, message in status_warnings(pod):
                key = (pod.uid, reason, pod.restarts)
                if key not in self._statuses:
                    self._statuses[key] = None
                    found.append(JobWarning(reason, f"pod {pod.name}", message, pod.node))
        return found

    def _listen(self, uid: str) -> None:
        if self._wake is not None and uid not in self._marks:
            mark = self._marks[uid] = _Mark(self._dirty, uid, self._wake)
            self.events.subscribe(uid, mark)

    def _unlisten(self, uid: str) -> None:
        mark = self._marks.pop(uid, None)
        if mark is not None:
            self.events.unsubscribe(uid, mark)

    def _new_events(self, uid: str, subject: str, node: str, found: list[JobWarning]) -> None:
        events = self.events.items(uid)
        if not events or self._events_seen.get(uid) is events:
            return
        self._events_seen[uid] = events
        for event in sorted(events, key=lambda e: (e.last_seen, e.name)):
            if self._counts.get(event.name, 0) >= event.count:
                continue
            self._counts[event.name] = event.count
            found.append(JobWarning(event.reason, subject, event.message, node))

    def latest_event(self, pod: str) -> WarningEvent | None:
        """The most recent Warning event about the pod named `pod`."""
        uids = [p.uid for p in self.pods.items(self.uid) if p.name == pod]
        events = [e for uid in uids for e in self.events.items(uid)]
        return max(events, key=lambda e: (e.last_seen, e.count), default=None)

    def explain(self, stall: StartupStall, timeout: float) -> str:
        """The start-up timeout's message: the pod, its node, its status, and its latest Warning event."""
        event = self.latest_event(stall.pod)
        if event is None or event.message in stall.cause:
            return stall.describe(timeout)
        return f"{stall.describe(timeout)} (latest Warning event: {event.reason}: {event.message})"

    async def ready(self, timeout: float = 120.0) -> list[JobWarning]:
        """Wait (bounded) until the events are listed; a warning (once) when they cannot be watched."""
        try:
            await self.events.wait_synced(timeout)
        except (ClusterApiError, TimeoutError) as exc:
            if self._blind:
                return []
            self._blind = True
            why = exc.describe() if isinstance(exc, ClusterApiError) else f"not listed within {timeout:g} s"
            return [JobWarning("EventsUnavailable", self.job, f"cannot watch Warning events ({why}); only pod "
                               "statuses are reported. The identity needs list and watch on events")]
        return []

    async def feed(self, sink: Callable[[JobWarning], None], interval: float = FEED_INTERVAL_SECONDS) -> None:
        """Hand every new warning to `sink` as it appears, until cancelled; at most one look per `interval`.

        It listens to the Warning events of the job's record and of each of its pods, not to the namespace's:
        an event about another job's pod wakes nobody here."""
        wake = self._wake = Wake()
        for uid in (self.uid, *self._pods_by_uid):
            self._listen(uid)
        self.pods.subscribe(self.uid, wake)
        try:
            for warning in await self.ready():
                sink(warning)
            while True:
                wake.clear()
                for warning in self.collect():
                    sink(warning)
                await wake.wait()
                await asyncio.sleep(interval)
        finally:
            self._wake = None
            for uid in list(self._marks):
                self._unlisten(uid)
            self.pods.unsubscribe(self.uid, wake)
