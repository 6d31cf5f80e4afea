"""Kubernetes Events recorded against the job record, as upstream controllers record them on the job.

Like client-go's event recorder, events are posted in the background and pass a
per-object spam filter for per-child events (a burst of 25, then one every 5 minutes),
so a 5,000-pod job does not double its API writes with 5,000 "Created pod" events.
Job-level events (JobComplete, DeadlineExceeded, Paused, ...) are never filtered.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from airflow_broadcast.cluster import job_metrics
from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.reconcilers.plan import JobEvent

log = logging.getLogger(__name__)
COMPONENT = "airflow-broadcast"
SPAM_BURST = 25
SPAM_REFILL_SECONDS = 300.0
_MAX_TRACKED_OBJECTS = 10_000


class _SpamFilter:
    """Token bucket per involved object (client-go's EventSourceObjectSpamFilter defaults)."""

    def __init__(self) -> None:
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def allow(self, key: str, now: float) -> bool:
        tokens, last = self._buckets.pop(key, (float(SPAM_BURST), now))
        tokens = min(float(SPAM_BURST), tokens + (now - last) / SPAM_REFILL_SECONDS)
        allowed = tokens >= 1.0
        self._buckets[key] = (tokens - 1.0 if allowed else tokens, now)
        while len(self._buckets) > _MAX_TRACKED_OBJECTS:
            self._buckets.popitem(last=False)
        return allowed


DELETED_JOB_REASON = "SuccessfulDeleteJob"
_spam = _SpamFilter()
# Per-child events are the ones a large job repeats thousands of times; job-level events always go out.
PER_CHILD_REASONS = frozenset({
    "SuccessfulCreate", "FailedCreate", "SuccessfulDelete", "SuccessfulCreatePod", "FailedCreatePod",
    "SuccessfulDeletePod", "SuccessfulCreateService", "FailedCreateService", "SuccessfulDeleteService",
    "ExitedWithCode",
})
_pending: dict[str, set[asyncio.Task[None]]] = {}  # record uid → its events still being posted


class EventRecorder:
    """Posts core/v1 Events best-effort: a failed or filtered event never fails a reconcile pass."""

    def __init__(self, client: KubeClient, record: Mapping[str, Any]) -> None:
        self.client = client
        meta = record.get("metadata") or {}
        self.namespace = str(meta.get("namespace", ""))
        self.involved = {"apiVersion": "v1", "kind": "ConfigMap", "name": meta.get("name", ""),
                         "namespace": self.namespace, "uid": meta.get("uid", "")}
        self.recorded: list[JobEvent] = []
        self.dropped = 0

    async def record(self, events: Sequence[JobEvent]) -> None:
        """Queue the events; they are posted in the background so the pass does not wait for them."""
        now = time.monotonic()
        kept = []
        for event in events:
            if event.reason not in PER_CHILD_REASONS or _spam.allow(str(self.involved["uid"]), now):
                kept.append(event)
            else:
                self.dropped += 1
        if not kept:
            return
        self.recorded.extend(kept)
        task = asyncio.get_running_loop().create_task(self._post_all(kept))
        uid = str(self.involved["uid"])
        _pending.setdefault(uid, set()).add(task)
        task.add_done_callback(lambda done: _forget(uid, done))

    async def _post_all(self, events: Sequence[JobEvent]) -> None:
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        for event in events:
            await self._post(event, stamp)

    async def _post(self, event: JobEvent, stamp: str) -> None:
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{self.involved['name']}.", "namespace": self.namespace},
            "involvedObject": self.involved, "reason": event.reason, "message": event.message[:1024],
            "type": event.type, "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        }
        try:
            await self.client.request("POST", api_path("v1", "events", namespace=self.namespace), body=body,
                                      retry=False)
        except ClusterApiError as exc:
            log.debug("event %s not recorded: %s", event.reason, exc)


def _forget(uid: str, task: asyncio.Task[None]) -> None:
    tasks = _pending.get(uid)
    if tasks is not None:
        tasks.discard(task)
        if not tasks:
            del _pending[uid]


async def flush_events(uid: str, timeout: float = 5.0) -> None:
    """Wait (bounded) for one record's queued events, e.g. before its trigger fires; other jobs' are not waited for."""
    tasks = list(_pending.get(uid, ()))
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)


async def record_job_deleted(client: KubeClient, record: Mapping[str, Any]) -> None:
    """`SuccessfulDeleteJob "Deleted job: <name>"` when a TFJob record is deleted (upstream H2), and the metric.

    OpenKruise records no event for a BroadcastJob TTL deletion, so none is recorded for those.
    """
    meta = record.get("metadata") or {}
    labels = meta.get("labels") or {}
    kind = str(labels.get("airflow-broadcast.io/kind", ""))
    job_metrics.count(job_metrics.JOBS_DELETED, kind, str(meta.get("namespace", "")))
    if kind != "TFJob":
        return
    name = labels.get("airflow-broadcast.io/job-name", "")
    recorder = EventRecorder(client, record)
    await recorder.record([JobEvent("Normal", DELETED_JOB_REASON, f"Deleted job: {name}")])
    await flush_events(str(meta.get("uid", "")))
