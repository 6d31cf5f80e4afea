"""TTL after finished: when an expired job record may go, and deleting it (children follow by GC).

The pass that finishes a job stamps `expires-at` on its record. The record may be
deleted once that time has passed and an Airflow task has read the result, or,
if no task ever reads it, once a grace period after expiry has passed too. A
failed delete leaves the stamp in place, so the next attempt tries again (T6).
The TTL janitor (`ttl_janitor.py`) deletes at exactly that time; the sweeps here
are the one-off forms (a trigger's start, `JobCleanupOperator`).
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.cluster.api_errors import ClusterApiError, Conflict
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


def deletable_at(raw: Mapping[str, Any], unread_grace: float = UNREAD_GRACE_SECONDS) -> float | None:
    """When the TTL lets the record go: its expiry once the result was read, else `unread_grace` later; None: never."""
    annotations = (raw.get("metadata") or {}).get("annotations") or {}
    expires = from_rfc3339(annotations.get(EXPIRES_AT))
    if expires is None:
        return None
    return expires if annotations.get(RESULT_READ) == "true" else expires + unread_grace


async def delete_expired(client: KubeClient, raw: Mapping[str, Any]) -> bool:
    """Delete this version's record (uid precondition) and record it; False when it is gone or was replaced."""
    meta = raw.get("metadata") or {}
    try:
        deleted = await delete_record(client, meta["namespace"], meta["name"], meta.get("uid", ""))
    except Conflict:
        return False  # a new job of the same name replaced it: not ours to delete
    if deleted:
        await record_job_deleted(client, raw)
    return deleted


async def sweep_expired_records(client: KubeClient, namespace: str, now: float | None = None, *,
                                unread_grace: float = UNREAD_GRACE_SECONDS) -> list[str]:
    """Delete every expired record in `namespace`; returns the deleted record names.

    A record whose result no task has read is kept `unread_grace` seconds longer.
    """
    now = time.time() if now is None else now
    deleted: list[str] = []
    async for page in client.list_pages(records_path(namespace), labelSelector=f"{MANAGED_BY_LABEL}={MANAGED_BY}"):
        for item in page.get("items") or []:
            due = deletable_at(item, unread_grace)
            meta = item.setdefault("metadata", {})
            meta["namespace"] = namespace
            if due is not None and due <= now and await delete_expired(client, item):
                deleted.append(meta["name"])
    if deleted:
        log.info("TTL cleanup deleted %d expired job record(s) in %s: %s", len(deleted), namespace,
                 ", ".join(deleted))
    return deleted


def sweep_due(namespace: str, every: float = SWEEP_EVERY_SECONDS) -> bool:
    """Whether this process's last sweep of the namespace is `every` seconds old, so a starting trigger
    needs no task (which it would keep until it ends) when another has just swept."""
    seen = _last_sweep.get(asyncio.get_running_loop(), {})
    return time.monotonic() - seen.get(namespace, -1e9) >= every


async def sweep_in_background(client: KubeClient, namespace: str, *, every: float = SWEEP_EVERY_SECONDS,
                              unread_grace: float = UNREAD_GRACE_SECONDS) -> None:
    """At most one sweep per namespace every `every` seconds per process; errors are logged, never raised."""
    if not sweep_due(namespace, every):
        return
    seen = _last_sweep.setdefault(asyncio.get_running_loop(), {})
    seen[namespace] = time.monotonic()
    try:
        await sweep_expired_records(client, namespace, unread_grace=unread_grace)
    except ClusterApiError as exc:
        log.warning("TTL cleanup in %s skipped: %s", namespace, exc.describe())
