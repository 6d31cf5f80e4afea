"""At submission: warn when a job has a TTL but no TTL janitor runs in its namespace, so its record would stay.

The check reads the janitor's Lease (`cluster/janitor_lease.py`) with the task's own connection: a
worker cannot see which triggers run. It never fails the task; an unreadable lease is a warning too.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.janitor_lease import LEASE_NAME, read_lease
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.reconcilers.kind import ParsedJob

TTL_SECTIONS = ("completionPolicy", "runPolicy")  # BroadcastJob, TFJob


def ttl_seconds(manifest: Mapping[str, Any]) -> int | None:
    """`ttlSecondsAfterFinished` of a BroadcastJob or TFJob manifest, None when it has none."""
    spec = manifest.get("spec") or {}
    for section in TTL_SECTIONS:
        ttl = (spec.get(section) or {}).get("ttlSecondsAfterFinished")
        if ttl is not None:
            return int(ttl)
    return None


def _enable_hint(namespace: str) -> str:
    return (f"To clean up on time, run the janitor: a DAG file with `from airflow_broadcast.janitor import "
            f"ttl_janitor_dag` and `dag = ttl_janitor_dag(namespaces=[\"{namespace}\"])` (see docs/ttl.md)")


async def ttl_janitor_warnings(client: KubeClient, job: ParsedJob, now: float | None = None) -> list[str]:
    """[] when the job has no TTL (or TTL 0: the task that reads the result deletes it) or a janitor runs."""
    ttl = ttl_seconds(job.manifest)
    if not ttl:
        return []
    namespace = job.namespace
    stays = (f"after its ttlSecondsAfterFinished ({ttl} s) this job's record and pods stay until a task of this "
             f"provider starts in {namespace} or JobCleanupOperator sweeps it")
    try:
        lease = await read_lease(client, namespace)
    except ClusterApiError as exc:
        return [f"Cannot tell whether a TTL janitor runs in namespace {namespace}: reading its Lease {LEASE_NAME} "
                f"failed ({exc.describe()}). If none runs, {stays}. {_enable_hint(namespace)}"]
    if lease is None:
        return [f"No TTL janitor runs in namespace {namespace} (no Lease {LEASE_NAME}): {stays}. "
                f"{_enable_hint(namespace)}"]
    now = time.time() if now is None else now
    if lease.expired(now):
        age = lease.age(now)
        when = "never" if age is None else f"{age:.0f} s ago"
        return [f"The TTL janitor of namespace {namespace} is not running: its Lease {LEASE_NAME} was last renewed "
                f"{when} by {lease.holder or 'nobody'}. Is its DAG paused, or the triggerer down? Until it runs, "
                f"{stays}. {_enable_hint(namespace)}"]
    return []
