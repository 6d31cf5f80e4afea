"""A BroadcastJob's terminal state: whether it finished, its finishing condition, its deadline and TTL expiry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_broadcast.specs.broadcast_job.spec import BroadcastJobSpec
from airflow_broadcast.specs.timestamps import from_rfc3339, to_rfc3339


def job_finished(status: Mapping[str, Any]) -> str | None:
    """"Complete" or "Failed" once such a True condition exists, else None."""
    for cond in status.get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


def ttl_expiry(spec: BroadcastJobSpec, status: Mapping[str, Any]) -> float | None:
    """When a finished job's TTL expires: completionTime + ttlSecondsAfterFinished (T1, T4, T7).

    None without a TTL (T3) and for `Never` jobs, which the TTL never applies to (T8).
    """
    ttl = spec.completion_policy.ttl_seconds_after_finished
    completed = from_rfc3339(status.get("completionTime"))
    if ttl is None or completed is None or spec.completion_policy.type == "Never":
        return None
    return completed + ttl


def finish_condition(kind: str, message: str, now: float) -> dict[str, Any]:
    """A True Complete/Failed condition as finishJob writes it."""
    stamp = to_rfc3339(now)
    return {"type": kind, "status": "True", "reason": kind, "message": message,
            "lastProbeTime": stamp, "lastTransitionTime": stamp}


def deadline_left(spec: BroadcastJobSpec, status: Mapping[str, Any], now: float, *, first_pass: bool) -> float | None:
    """Seconds until the active deadline (D1/D2), or None when there is none (D5).

    The first pass measures from `now` itself, as upstream's in-memory startTime does, so
    its timer is exactly ADS (D9); later passes use the persisted (whole-second) startTime.
    """
    ads = spec.completion_policy.active_deadline_seconds
    started = now if first_pass else from_rfc3339(status.get("startTime"))
    if ads is None or started is None or spec.completion_policy.type == "Never":
        return None
    return started + ads - now


def settle_waiting(status: dict[str, Any], successes: int) -> None:
    """A finished job gives no node another attempt: each node that waited for one counts by its last result
    (`successes` of them succeeded: V18 re-runs of a new template), and `retrying` goes."""
    waiting = int(status.pop("retrying", 0))
    kept = min(waiting, successes)
    status["succeeded"] += kept
    status["failed"] += waiting - kept
