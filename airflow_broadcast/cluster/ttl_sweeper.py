"""TTL after finished: delete expired job records (children follow by GC).

The pass that finishes a job stamps `expires-at` on its record. The record is
deleted once that time has passed and an Airflow task has read the result, or,
if no task ever reads it, once a grace period after expiry has passed too. A
failed delete leaves the stamp in place, so the next sweep tries again (T6).
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.job_events import record_job_deleted
from airflow_broadcast.cluster.job_records import (
    EXPIRES_AT,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    RESULT_READ,
    delete_record,
    records_path,
)
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.specs.timestamps import from_rfc3339

log = logging.getLogger(__name__)
UNREAD_GRACE_SECONDS = 600.0
SWEEP_EVERY_SECONDS = 60.0
_last_sweep: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, float]] = weakref.WeakKeyDictionary()


async def sweep_expired_records(client: KubeClient, namespace: str, now: float | None = None, *,
                                unread_grace: float = UNREAD_GRACE_SECONDS) -> list[str]:
    """Delete every expired record in `namespace`; returns the deleted record names.

    A record whose result no task has read is kept `unread_grace` seconds longer.
    """
    now = time.time() if now is None else now
    deleted: list[str] = []
    async for page in client.list_pages(records_path(namespace), labelSelector=f"{MANAGED_BY_LABEL}={MANAGED_BY}"):
        for item in page.get("items") or []:
            meta = item.get("metadata") or {}
            annotations = meta.get("annotations") or {}
            expires = from_rfc3339(annotations.get(EXPIRES_AT))
            if expires is None or now < expires:
                continue
            if annotations.get(RESULT_READ) != "true" and now < expires + unread_grace:
                continue
            if await delete_record(client, namespace, meta["name"], meta.get("uid", "")):
                deleted.append(meta["name"])
                await record_job_deleted(client, item)
    if deleted:
        log.info("TTL cleanup deleted %d expired job record(s) in %s: %s", len(deleted), namespace,
                 ", ".join(deleted))
    return deleted


async def sweep_in_background(client: KubeClient, namespace: str, *, every: float = SWEEP_EVERY_SECONDS,
                              unread_grace: float = UNREAD_GRACE_SECONDS) -> None:
    """At most one sweep per namespace every `every` seconds per process; errors are logged, never raised."""
    seen = _last_sweep.setdefault(asyncio.get_running_loop(), {})
    if time.monotonic() - seen.get(namespace, -1e9) < every:
        return
    seen[namespace] = time.monotonic()
    try:
        await sweep_expired_records(client, namespace, unread_grace=unread_grace)
    except ClusterApiError as exc:
        log.warning("TTL cleanup in %s skipped: %s", namespace, exc.describe())
