"""Create a job record, or re-attach to the one a previous try of the same task created."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_broadcast.cluster import job_metrics
from airflow_broadcast.cluster.api_errors import AlreadyExists
from airflow_broadcast.cluster.job_records import (
    SUBMITTED_BY,
    create_record,
    delete_record,
    get_record,
    is_record_of,
    new_record,
    read_status,
    record_name,
)
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.exceptions import JobConflictError


@dataclass(frozen=True)
class Submission:
    record: JsonDict
    reattached: bool

    @property
    def uid(self) -> str:
        return str(self.record["metadata"]["uid"])

    @property
    def name(self) -> str:
        return str(self.record["metadata"]["name"])


async def submit_job(client: KubeClient, kind: str, job_name: str, namespace: str, manifest: Mapping[str, Any],
                     *, submitter: str, reattach: bool, is_finished: Callable[[Mapping[str, Any]], bool],
                     annotations: Mapping[str, str] | None = None) -> Submission:
    """A running record from the same submitter is re-attached; a finished one is replaced."""
    name = record_name(kind, job_name)
    for _ in range(3):
        existing = await get_record(client, namespace, name)
        if existing is not None:
            meta = existing.get("metadata") or {}
            if not is_record_of(existing, kind, job_name):
                raise JobConflictError(
                    f"ConfigMap {namespace}/{name} exists and is not the record of {kind} {job_name}; "
                    "rename the job or delete that ConfigMap")
            if is_finished(read_status(existing)):
                await delete_record(client, namespace, name, str(meta.get("uid", "")))
            else:
                owner = (meta.get("annotations") or {}).get(SUBMITTED_BY, "")
                if reattach and owner == submitter:
                    return Submission(existing, reattached=True)
                raise JobConflictError(
                    f"{kind} {namespace}/{job_name} is already running (submitted by {owner or 'someone else'}); "
                    "wait for it, delete its record, or give this job another name")
        record = new_record(kind, job_name, namespace, manifest, {},
                            {SUBMITTED_BY: submitter, **(annotations or {})})
        try:
            created = await create_record(client, record)
        except AlreadyExists:
            continue  # a duplicate submission raced us; look again
        job_metrics.count(job_metrics.JOBS_CREATED, kind, namespace)
        return Submission(created, reattached=False)
    raise JobConflictError(f"could not create the record {namespace}/{name}: it keeps being recreated")
