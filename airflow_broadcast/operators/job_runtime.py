"""What the operator and the sensor share: submit, run the loop in-process, and turn an outcome into a result.

Everything here runs on an Airflow worker, inside `asyncio.run`, with the same
engine the trigger uses, so deferrable and non-deferrable modes behave alike.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.job_control import stop_active_children
from airflow_broadcast.cluster.job_events import record_job_deleted
from airflow_broadcast.cluster.job_records import (
    EXPIRES_AT,
    RESULT_READ,
    delete_record,
    get_record,
    read_manifest,
    read_status,
    write_record,
)
from airflow_broadcast.cluster.kinds.registry import driver_for
from airflow_broadcast.cluster.pod_logs import log_tails
from airflow_broadcast.cluster.reconcile_loop import run_reconcile_loop
from airflow_broadcast.cluster.worker_loop import run_on_worker
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
from airflow_broadcast.specs.timestamps import from_rfc3339
from airflow_broadcast.triggers.progress import ProgressLog

DEFER_MARGIN_SECONDS = 60.0
T = TypeVar("T")


class JobFailedError(RuntimeError):
    """The job ended Failed; the message names the cause and the failed children."""


class JobTimeoutError(RuntimeError):
    """The task's execution deadline passed while the job was still running."""


@dataclass(frozen=True)
class JobTarget:
    """Which record a task drives, and how to reach the cluster."""

    kind: str
    namespace: str
    record_name: str
    uid: str
    kubernetes_conn_id: str
    cluster_context: str | None
    options: Mapping[str, Any]

    def hook(self) -> BroadcastKubernetesHook:
        return BroadcastKubernetesHook(self.kubernetes_conn_id, cluster_context=self.cluster_context)


def execution_deadline(context: Mapping[str, Any], execution_timeout: Any) -> float | None:
    """ti.start_date + execution_timeout as an absolute epoch (Airflow 3 does not enforce it while deferred)."""
    if execution_timeout is None:
        return None
    start = getattr(context.get("ti"), "start_date", None)
    started = start.timestamp() if start is not None else time.time()
    return float(started + execution_timeout.total_seconds())


def defer_timeout(deadlines: list[float | None], resync: float) -> float | None:
    """Seconds for defer(timeout=...): the earliest deadline plus a margin, a backstop only."""
    present = [d for d in deadlines if d is not None]
    if not present:
        return None
    return max(1.0, min(present) - time.time()) + max(DEFER_MARGIN_SECONDS, 2 * resync)


def run_inline(target: JobTarget, deadline: float | None, resync: float, log: Any,
               single_pass: bool = False) -> tuple[str, str]:
    """Drive the job from the worker (deferrable=False or poke mode); returns (outcome, message)."""

    async def drive() -> tuple[str, str]:
        client = await target.hook().kube_client()
        driver = driver_for(target.kind, dict(target.options))
        outcome = await run_reconcile_loop(client, driver, target.namespace, target.record_name, target.uid,
                                           deadline=deadline, resync=resync,
                                           progress=ProgressLog(log, driver).update, single_pass=single_pass)
        return outcome.reason, outcome.message

    return run_on_worker(drive)


def conclude(target: JobTarget, outcome: str, message: str, log: Any, *,
             log_tail_lines: int = 50, max_logged_failures: int = 5, on_timeout_stop: bool = True) -> dict[str, Any]:
    """Read the final state (and failed logs), apply TTL, and return the summary or raise why not."""

    async def collect() -> dict[str, Any]:
        client = await target.hook().kube_client()
        driver = driver_for(target.kind, dict(target.options))
        raw = await get_record(client, target.namespace, target.record_name)
        if raw is None or (raw.get("metadata") or {}).get("uid") != target.uid:
            raise JobFailedError(f"{target.kind} record {target.namespace}/{target.record_name} disappeared "
                                 f"before its result was read ({message or outcome})")
        status = read_status(raw)
        summary: dict[str, Any] = driver.summary(raw, status)
        if outcome == "timeout":
            if on_timeout_stop:
                stopped = await stop_active_children(client, target.namespace, target.record_name, target.uid)
                log.warning("Execution deadline passed: deleted %d active pod(s)", stopped)
            raise JobTimeoutError(f"{target.kind} {target.namespace}/{summary['name']}: {message}")
        if outcome in ("invalid", "error", "gone"):
            raise JobFailedError(f"{target.kind} {target.namespace}/{summary['name']}: {message}")
        failure = driver.failure(summary)
        if failure:
            pods = driver.failed_children(summary)[:max_logged_failures]
            container = driver.log_container(read_manifest(raw))
            tails = await log_tails(client, target.namespace, pods, container=container, lines=log_tail_lines)
            for pod, text in tails.items():
                log.error("---- last %d log lines of failed pod %s ----\n%s", log_tail_lines, pod, text)
        await _apply_ttl(client, raw, read_manifest(raw), status, log)
        if failure:
            raise JobFailedError(failure)
        return summary

    try:
        return run_on_worker(collect)
    except ClusterApiError as exc:
        raise JobFailedError(exc.describe()) from exc


async def _apply_ttl(client: Any, raw: Mapping[str, Any], _manifest: Mapping[str, Any], _status: Mapping[str, Any],
                     log: Any) -> None:
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
    await write_record(client, raw, None, {RESULT_READ: "true"})
