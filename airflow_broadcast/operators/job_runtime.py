"""What the operator and the sensor share: submit, run the loop in-process, and turn an outcome into a result.

Everything here runs on an Airflow worker, inside `asyncio.run`, with the same
engine the trigger uses, so deferrable and non-deferrable modes behave alike.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.api_paths import InvalidApiPath
from airflow_broadcast.cluster.job_control import stop_active_children
from airflow_broadcast.cluster.job_records import (
    get_record,
    record_view,
)
from airflow_broadcast.cluster.job_results import result_read
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.cluster.pod_logs import TAIL_BYTES, log_tails
from airflow_broadcast.cluster.reconcile_loop import LoopReason
from airflow_broadcast.cluster.worker_loop import run_on_worker
from airflow_broadcast.exceptions import JobFailedError, JobStartupTimeoutError, JobTimeoutError
from airflow_broadcast.reconcilers.kind import JobIdentity, JobKind
from airflow_broadcast.triggers.job_reconcile import JobTriggerArgs, TaskKey, drive_job
from airflow_broadcast.triggers.progress import TaskLog
from airflow_broadcast.triggers.task_output import shown_log_tail, shown_message, shown_result

DEFER_MARGIN_SECONDS = 60.0
CATCH_UP_PASSES = 3
MAX_DEFER_SECONDS = 100 * 365 * 86400.0
DEFAULT_STARTUP_TIMEOUT_SECONDS = 600.0  # long enough for an autoscaled node or a large image; see the docs
TIMEOUTS: dict[LoopReason, tuple[type[JobTimeoutError], str]] = {
    LoopReason.TIMEOUT: (JobTimeoutError, "Execution deadline passed"),
    LoopReason.STARTUP_TIMEOUT: (JobStartupTimeoutError, "Start-up timeout"),
}


def execution_deadline(context: Mapping[str, Any], execution_timeout: Any) -> float | None:
    """ti.start_date + execution_timeout as an absolute epoch (Airflow 3 does not enforce it while deferred)."""
    if execution_timeout is None:
        return None
    start = getattr(context.get("ti"), "start_date", None)
    started = start.timestamp() if start is not None else time.time()
    return float(started + execution_timeout.total_seconds())


def defer_timeout(deadlines: list[float | None], resync: float) -> float | None:
    """Seconds for defer(timeout=...): the earliest deadline plus a margin, a backstop only.

    None when there is no deadline, or when it is too far away to be one (an int64
    activeDeadlineSeconds would overflow a timedelta).
    """
    present = [d for d in deadlines if d is not None]
    if not present:
        return None
    timeout = max(1.0, min(present) - time.time()) + max(DEFER_MARGIN_SECONDS, 2 * resync)
    return timeout if timeout <= MAX_DEFER_SECONDS else None


def task_key(context: Mapping[str, Any]) -> TaskKey:
    """Which task instance defers, so that a trigger's on_kill can tell a reassignment from a kill."""
    ti = context["ti"]
    map_index = getattr(ti, "map_index", None)
    return {"dag_id": ti.dag_id, "task_id": ti.task_id, "run_id": ti.run_id,
            "map_index": -1 if map_index is None else int(map_index)}


def run_inline(args: JobTriggerArgs, log: TaskLog, *, single_pass: bool = False) -> tuple[LoopReason, str]:
    """Drive the job from the worker (deferrable=False or poke mode), as the trigger would; (outcome, message)."""

    async def drive() -> tuple[LoopReason, str]:
        outcome = await drive_job(args, await args.hook().kube_client(), log, single_pass=single_pass)
        return outcome.reason, outcome.message

    return run_on_worker(drive)


def conclude(args: JobTriggerArgs, outcome: str, message: str, log: TaskLog, *,
             log_tail_lines: int = 50, max_logged_failures: int = 5) -> JobIdentity:
    """Read the final state (and failed logs), apply TTL, and return the kind's summary or raise why not.

    A timeout (the execution deadline, or a pod past the start-up timeout) stops the job's active
    pods unless `args.on_kill_action` is `keep`.
    """
    reason = LoopReason(outcome)

    async def collect() -> JobIdentity:
        client = await args.hook().kube_client()
        kind: JobKind[Any, JobIdentity] = args.driver().kind
        raw = await get_record(client, args.namespace, args.record_name)
        if raw is None or (raw.get("metadata") or {}).get("uid") != args.uid:
            raise JobFailedError(shown_message(f"{args.kind} record {args.namespace}/{args.record_name} disappeared "
                                               f"before its result was read ({message or outcome})"))
        record = record_view(raw)
        if reason is LoopReason.FINISHED and not kind.is_finished(record.status):
            raw = await _catch_up(args, client, log, raw)
            record = record_view(raw)
        if reason in TIMEOUTS:
            error, what = TIMEOUTS[reason]
            if args.on_kill_action == "delete_active_pods":
                stopped = await stop_active_children(client, args.namespace, args.record_name, args.uid)
                log.warning("%s: deleted %d active pod(s)", what, stopped)
            raise error(shown_message(f"{args.kind} {args.namespace}/{record.job_name}: {message}"))
        if reason in (LoopReason.INVALID, LoopReason.ERROR, LoopReason.GONE):
            raise JobFailedError(shown_message(f"{args.kind} {args.namespace}/{record.job_name}: {message}"))
        summary = kind.summary(record)
        failure = kind.failure(summary)
        if failure:
            pods = kind.failed_children(summary)[:max_logged_failures]
            try:
                tails = await log_tails(client, args.namespace, pods, container=kind.log_container(record.manifest),
                                        containers=kind.failed_in_other_containers(summary), lines=log_tail_lines)
            except InvalidApiPath as exc:
                raise JobFailedError(shown_message(
                    f"{args.kind} {args.namespace}/{record.job_name}: its record's status names a failed pod that "
                    f"cannot exist, so no log was read; the record was edited outside the provider. {exc}")) from exc
            for pod, text in tails.items():
                log.error("---- last %d log lines of failed pod %s ----\n%s", log_tail_lines, pod,
                          shown_log_tail(text, log_tail_lines, TAIL_BYTES))
        await result_read(client, raw, log)
        if failure:
            raise JobFailedError(shown_message(failure))
        return shown_result(summary)

    try:
        return run_on_worker(collect)
    except ClusterApiError as exc:
        raise JobFailedError(shown_message(exc.describe())) from exc


async def _catch_up(args: JobTriggerArgs, client: KubeClient, log: TaskLog, raw: JsonDict,
                    passes: int = CATCH_UP_PASSES) -> JsonDict:
    """The trigger fired before its finishing writes and they never landed (its triggerer died): repeat the pass.

    The pass is level-triggered, so it finds the same finished job and writes what was lost.
    """
    kind = args.driver().kind
    log.info("%s %s/%s: the record is behind the finished event; repeating the finishing pass",
             args.kind, args.namespace, args.record_name)
    for _ in range(passes):
        await drive_job(args, client, log, single_pass=True)
        fresh = await get_record(client, args.namespace, args.record_name)
        if fresh is None or (fresh.get("metadata") or {}).get("uid") != args.uid:
            return raw
        raw = fresh
        if kind.is_finished(record_view(raw).status):
            break
    return raw
