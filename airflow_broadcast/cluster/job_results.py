"""What happens to a job record once its result has been read: TTL deletion now, or a mark for the sweeper."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.cluster.api_errors import Conflict, NotFound
from airflow_broadcast.cluster.job_events import record_job_deleted
from airflow_broadcast.cluster.job_records import (
    EXPIRES_AT,
    RESULT_READ,
    current_record,
    delete_record,
    write_record,
)
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.specs.timestamps import from_rfc3339

MARK_ATTEMPTS = 3


async def result_read(client: KubeClient, raw: Mapping[str, Any], log: logging.Logger | Any) -> None:
    """The result is read: delete the record if the expiry its reconciler stamped has passed, else mark it read.

    TTL 0 expires at completion, so it deletes now; a marked record is left to the sweeper.
    A record without the stamp has no TTL.
    """
    meta = raw.get("metadata") or {}
    expires_at = (meta.get("annotations") or {}).get(EXPIRES_AT)
    expires = from_rfc3339(expires_at)
    if expires is None:
        return
    if expires <= time.time():
        if await delete_record(client, meta["namespace"], meta["name"], meta.get("uid", "")):
            await record_job_deleted(client, raw)
        log.info("TTL expired at %s: deleted job record %s and its pods", expires_at, meta["name"])
        return
    await _mark_read(client, raw, log)


async def _mark_read(client: KubeClient, raw: Mapping[str, Any], log: logging.Logger | Any) -> None:
    """Mark the result read. Another writer (the trigger's last write, a retried PUT whose answer was lost)
    may have moved the record on: read it again and mark that. The job's outcome never depends on this
    mark; without it the sweeper deletes the record `unread_result_grace_seconds` after its expiry."""
    meta = raw.get("metadata") or {}
    for _ in range(MARK_ATTEMPTS):
        if (meta.get("annotations") or {}).get(RESULT_READ) == "true":
            return
        try:
            await write_record(client, raw, None, {RESULT_READ: "true"})
            return
        except Conflict:
            fresh = await current_record(client, meta["namespace"], meta["name"], meta.get("uid", ""))
            if fresh is None:
                return
            raw, meta = fresh, fresh.get("metadata") or {}
        except NotFound:
            return
    log.warning("job record %s changed under each of %d attempts to mark its result read; the sweeper deletes it "
                "once [airflow_broadcast] unread_result_grace_seconds have passed after its expiry",
                meta.get("name"), MARK_ATTEMPTS)
