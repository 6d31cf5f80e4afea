"""Per-node retries (F15): a node whose pod failed runs again after a backoff, until its retries are used up.

With `failurePolicy.backoffLimitPerNode: n` a node gets n + 1 attempts. A failed pod with attempts left
is `retrying`: it counts neither as failed (so FailFast, Pause and the budget wait) nor as done (so the
job does not complete), and once its backoff has passed the pass deletes it; the node, now without a
pod, gets the next attempt (P12). The backoff doubles from 10 s up to 6 minutes, as the Kubernetes Job
controller's, and runs from the moment the pod's containers ended.
"""

from __future__ import annotations

from collections.abc import Iterable

from airflow_broadcast.reconcilers.broadcast_job.pods import attempt_of
from airflow_broadcast.reconcilers.observed import PodInfo

BACKOFF_BASE_SECONDS = 10.0
BACKOFF_MAX_SECONDS = 360.0
RETRY_REASON = "NodeRetry"


def backoff_seconds(attempt: int) -> float:
    """The wait after a node's `attempt`-th failure: 10 s, 20 s, 40 s, ... at most 6 minutes."""
    return min(BACKOFF_BASE_SECONDS * (1 << min(max(attempt, 1) - 1, 16)), BACKOFF_MAX_SECONDS)


def failed_at(pod: PodInfo) -> float:
    """When the pod's last container ended; its creation when none says (an evicted pod)."""
    return max((e.finished_at for e in pod.exits), default=0.0) or pod.created_at


def due_retries(pods: Iterable[PodInfo], now: float) -> tuple[list[PodInfo], float | None]:
    """The retrying pods whose backoff has passed (to delete now), and the seconds until the next one is due."""
    due: list[PodInfo] = []
    wait: float | None = None
    for pod in pods:
        if pod.deleting:
            continue  # deleted already: the node is re-run once the pod is gone
        left = failed_at(pod) + backoff_seconds(attempt_of(pod)) - now
        if left <= 0:
            due.append(pod)
        else:
            wait = left if wait is None else min(wait, left)
    return due, wait
