"""The TTL janitor: deletes each expired job record the moment its TTL lets it go, with no task of the job running.

One long-lived coroutine per set of namespaces (in Airflow, an asset-watcher trigger in the triggerer).
It reads the records from each namespace's shared record informer (a watch, no polling), keeps one timer
for the earliest time a record may go (`ttl_sweeper.deletable_at`: expiry once the result was read, else
expiry plus the unread grace), deletes with the record's uid as precondition and reports every deletion.
Deletes are idempotent, so two janitors over one namespace (a trigger briefly running twice) delete each
record once between them. Its lease (`janitor_lease.py`) tells workers and people that it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.cache_subscribers import ANY_KEY
from airflow_broadcast.cluster.informers import Informer
from airflow_broadcast.cluster.janitor_lease import RENEW_SECONDS, keep_leases
from airflow_broadcast.cluster.job_records import EXPIRES_AT, JOB_LABEL, KIND_LABEL, RESULT_READ
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.cluster.reconcile_loop import record_informer
from airflow_broadcast.cluster.ttl_sweeper import UNREAD_GRACE_SECONDS, deletable_at, delete_expired

log = logging.getLogger(__name__)
RETRY_FAILED_DELETE_SECONDS = 10.0
MAX_WAIT_SECONDS = 300.0  # re-read the wall clock at least this often (a clock step moves every expiry)
MIN_SCAN_INTERVAL = 0.25  # a burst of record updates costs one scan
DELETES_AT_ONCE = 16


@dataclass(frozen=True)
class Cleanup:
    """One record the janitor deleted: the payload of its Airflow event."""

    kind: str
    namespace: str
    record: str
    job_name: str
    uid: str
    expired_at: str
    result_read: bool
    deleted_at: float

    @classmethod
    def of(cls, raw: Mapping[str, Any], deleted_at: float) -> Cleanup:
        meta = raw.get("metadata") or {}
        labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
        return cls(kind=str(labels.get(KIND_LABEL, "")), namespace=str(meta.get("namespace", "")),
                   record=str(meta.get("name", "")), job_name=str(labels.get(JOB_LABEL, "")),
                   uid=str(meta.get("uid", "")), expired_at=str(annotations.get(EXPIRES_AT, "")),
                   result_read=annotations.get(RESULT_READ) == "true", deleted_at=deleted_at)

    def payload(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class ExpirySchedule:
    """Which cached records are due, and when the next one will be; one expiry parse per record version."""

    def __init__(self, unread_grace: float = UNREAD_GRACE_SECONDS) -> None:
        self.unread_grace = unread_grace
        self._due_at: dict[tuple[str, str], tuple[str, float | None]] = {}
        self._retry_at: dict[str, float] = {}  # uid → when a failed delete is tried again
        self._deleted: set[str] = set()  # uids deleted while the watch may still show them

    def scan(self, informers: Mapping[str, Informer[JsonDict]], now: float) -> tuple[list[JsonDict], float | None]:
        due: list[JsonDict] = []
        upcoming: float | None = None
        seen_keys: set[tuple[str, str]] = set()
        seen_uids: set[str] = set()
        for namespace, informer in informers.items():
            for name, raw in informer.values.items():
                meta = raw.get("metadata") or {}
                key, uid = (namespace, name), str(meta.get("uid", ""))
                seen_keys.add(key)
                seen_uids.add(uid)
                when = self._when(key, raw)
                if when is None or uid in self._deleted:
                    continue
                when = max(when, self._retry_at.get(uid, when))
                if when <= now:
                    due.append(raw)
                elif upcoming is None or when < upcoming:
                    upcoming = when
        self._forget(seen_keys, seen_uids)
        return due, upcoming

    def _when(self, key: tuple[str, str], raw: JsonDict) -> float | None:
        version = str((raw.get("metadata") or {}).get("resourceVersion", ""))
        cached = self._due_at.get(key)
        if cached is None or cached[0] != version or not version:
            cached = (version, deletable_at(raw, self.unread_grace))
            self._due_at[key] = cached
        return cached[1]

    def _forget(self, keys: set[tuple[str, str]], uids: set[str]) -> None:
        for key in [k for k in self._due_at if k not in keys]:
            del self._due_at[key]
        self._deleted &= uids
        for uid in [u for u in self._retry_at if u not in uids]:
            del self._retry_at[uid]

    def deleted(self, uid: str) -> None:
        self._deleted.add(uid)

    def failed(self, uid: str, now: float) -> None:
        self._retry_at[uid] = now + RETRY_FAILED_DELETE_SECONDS


async def run_janitor(client: KubeClient, namespaces: Sequence[str], *, holder: str,
                      renew_every: float = RENEW_SECONDS,
                      unread_grace: float = UNREAD_GRACE_SECONDS) -> AsyncIterator[Cleanup]:
    """Delete expired records of `namespaces` as they become due, forever; yields each deletion.

    A record whose result no task has read goes `unread_grace` seconds after its expiry.
    """
    informers = {namespace: record_informer(client, namespace) for namespace in namespaces}
    wake = asyncio.Event()
    for informer in informers.values():
        informer.subscribe(ANY_KEY, wake)
    leases = asyncio.get_running_loop().create_task(keep_leases(client, namespaces, holder, renew_every),
                                                    name="ttl janitor leases")
    leases.add_done_callback(lambda _: wake.set())
    schedule = ExpirySchedule(unread_grace)
    try:
        for informer in informers.values():
            await informer.synced.wait()  # a failed LIST still marks it synced; the informer keeps retrying
        log.info("TTL janitor %s watches the job records of %s", holder, ", ".join(namespaces))
        while True:
            wake.clear()
            due, upcoming = schedule.scan(informers, time.time())
            for start in range(0, len(due), DELETES_AT_ONCE):
                batch = due[start:start + DELETES_AT_ONCE]
                for cleanup in await asyncio.gather(*(_delete(client, raw, schedule) for raw in batch)):
                    if cleanup is not None:
                        yield cleanup
            if due:
                continue  # scan again: a failed delete now has its retry time, and time has passed
            if leases.done():
                leases.result()  # the heartbeat died of a bug: surface it instead of running unseen
            timeout = MAX_WAIT_SECONDS if upcoming is None else min(MAX_WAIT_SECONDS, upcoming - time.time())
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for loses a cancellation that arrives as the
            # event is set, and a janitor that misses its cancellation outlives its paused DAG.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, timeout)):
                    await wake.wait()
            await asyncio.sleep(MIN_SCAN_INTERVAL)
    finally:
        leases.cancel()
        for informer in informers.values():
            informer.unsubscribe(ANY_KEY, wake)


async def _delete(client: KubeClient, raw: JsonDict, schedule: ExpirySchedule) -> Cleanup | None:
    uid = str((raw.get("metadata") or {}).get("uid", ""))
    try:
        deleted = await delete_expired(client, raw)
    except ClusterApiError as exc:
        schedule.failed(uid, time.time())
        log.warning("TTL janitor could not delete %s/%s (retry in %.0f s): %s", raw["metadata"].get("namespace"),
                    raw["metadata"].get("name"), RETRY_FAILED_DELETE_SECONDS, exc.describe())
        return None
    schedule.deleted(uid)
    if not deleted:
        return None
    cleanup = Cleanup.of(raw, time.time())
    log.info("TTL janitor deleted %s %s/%s (record %s, expired at %s, result %s)", cleanup.kind, cleanup.namespace,
             cleanup.job_name, cleanup.record, cleanup.expired_at, "read" if cleanup.result_read else "never read")
    return cleanup
