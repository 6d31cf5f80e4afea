"""Counters in the shape of training-operator's Prometheus metrics, sent to whatever sinks are installed.

The cluster layer knows no Airflow, so it only counts; the Airflow side installs a
sink that forwards to `airflow.stats.Stats` (see hooks/metrics.py). Names follow
upstream without the `training_operator_` prefix and `_total` suffix, tagged with
`job_namespace` and `framework` as upstream labels them (M8).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from airflow_broadcast.reconcilers.plan import JobEvent

log = logging.getLogger(__name__)

JOBS_CREATED = "jobs_created"
JOBS_DELETED = "jobs_deleted"
JOBS_SUCCESSFUL = "jobs_successful"
JOBS_FAILED = "jobs_failed"
JOBS_RESTARTED = "jobs_restarted"
CREATED_PODS = "created_pods"
DELETED_PODS = "deleted_pods"
SERVICE_CREATED = "succeeded_service_creation"
SERVICE_FAILED = "failed_service_creation"
CREATED_POD_GROUPS = "created_pod_groups"
DELETED_POD_GROUPS = "deleted_pod_groups"

FRAMEWORK = {"TFJob": "tensorflow", "BroadcastJob": "broadcastjob"}

# Job-level transitions per kind, counted from the events of a pass whose record write succeeded.
JOB_EVENT_METRICS: dict[str, dict[str, str]] = {
    "TFJob": {"TFJobSucceeded": JOBS_SUCCESSFUL, "TFJobFailed": JOBS_FAILED, "TFJobRestarting": JOBS_RESTARTED},
    "BroadcastJob": {"JobComplete": JOBS_SUCCESSFUL, "failed pod is found": JOBS_FAILED,
                     "DeadlineExceeded": JOBS_FAILED},
}

MetricSink = Callable[[str, int, Mapping[str, str]], None]
_sinks: list[MetricSink] = []


def add_sink(sink: MetricSink) -> None:
    """Install a sink once (installing the same one again is a no-op)."""
    if sink not in _sinks:
        _sinks.append(sink)


def remove_sink(sink: MetricSink) -> None:
    if sink in _sinks:
        _sinks.remove(sink)


def count(metric: str, kind: str, namespace: str, amount: int = 1) -> None:
    """Add `amount` to `metric` for a job of `kind` in `namespace`; a failing sink never fails the job."""
    if amount <= 0:
        return
    tags = {"job_namespace": namespace, "framework": FRAMEWORK.get(kind, kind.lower())}
    log.debug("metric %s +%d %s", metric, amount, tags)
    for sink in list(_sinks):
        try:
            sink(metric, amount, tags)
        except Exception:  # a metrics backend must not break reconciliation
            log.warning("metric sink %r failed for %s", sink, metric, exc_info=True)


def count_job_events(kind: str, namespace: str, events: Iterable[JobEvent]) -> None:
    """Count the job-level transitions among a pass's events."""
    metrics = JOB_EVENT_METRICS.get(kind, {})
    for event in events:
        metric = metrics.get(event.reason)
        if metric is not None:
            count(metric, kind, namespace)
