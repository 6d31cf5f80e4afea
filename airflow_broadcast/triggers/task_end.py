"""Ending a successful task in the triggerer itself (`finish_in_triggerer=True`), without a worker slot.

Resuming on a worker costs seconds: the event waits for the triggerer's next sync, the scheduler's
next loop, an executor slot and a fresh task process. A job that succeeded needs none of that: its
result is the kind's summary, and the only resume-time work is marking the record read (or deleting
it when its TTL has passed). Airflow ends the task from a `TaskSuccessEvent` and pushes its XComs.
Anything else (a failure, a timeout, an error) still resumes on the worker, which reads failed pods'
logs and raises the task's error. Opt-in, because a task ended this way runs no `execute_complete`
and no worker-side task listeners.
"""

from __future__ import annotations

import logging
from typing import Any

from airflow.triggers.base import TaskSuccessEvent

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.job_records import get_record, record_view
from airflow_broadcast.cluster.job_results import result_read
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.reconcile_loop import LoopOutcome, LoopReason
from airflow_broadcast.reconcilers.kind import JobKind
from airflow_broadcast.triggers.task_output import shown_result

SUCCESS_REASONS = (LoopReason.FINISHED, LoopReason.SETTLED)


async def success_event(client: KubeClient, kind: JobKind[Any, Any], namespace: str, record_name: str, uid: str,
                        outcome: LoopOutcome, log: logging.Logger | Any) -> TaskSuccessEvent | None:
    """The event that ends the task with the job's summary as its XCom, or None to resume on the worker."""
    if outcome.reason not in SUCCESS_REASONS or outcome.record is None:
        return None
    if kind.failure(kind.summary(outcome.record)):
        return None
    try:
        raw = await get_record(client, namespace, record_name)
        if raw is None or (raw.get("metadata") or {}).get("uid") != uid:
            return None  # the worker reports the vanished record
        summary = kind.summary(record_view(raw))
        if kind.failure(summary):
            return None
        await result_read(client, raw, log)
    except ClusterApiError as exc:
        log.info("could not settle the result here (%s); the task resumes on a worker", exc.describe())
        return None
    log.info("%s %s/%s succeeded; the task ends in the triggerer", kind.name, namespace, record_name)
    return TaskSuccessEvent(xcoms={"return_value": shown_result(summary)})
