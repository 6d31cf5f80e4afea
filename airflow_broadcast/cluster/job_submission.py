"""Create a job record, or re-attach to the one a previous try of the same task created."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.cluster import job_metrics
from airflow_broadcast.cluster.api_errors import AlreadyExists
from airflow_broadcast.cluster.job_records import (
    SUBMISSION,
    SUBMITTED_BY,
    create_record,
    delete_record,
    get_record,
    is_record_of,
    new_record,
    record_name,
    record_view,
)
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.exceptions import JobConflictError
from airflow_broadcast.reconcilers.kind import JobKind
from airflow_broadcast.reconcilers.observed import JobRecord


async def submit_job(client: KubeClient, kind: JobKind[Any, Any], job_name: str, namespace: str,
                     manifest: Mapping[str, Any], *, submitter: str, reattach: bool,
                     annotations: Mapping[str, str] | None = None) -> tuple[JobRecord, bool]:
    """The job's record, and whether it was re-attached: a running record from the same submitter is
    re-attached; a finished one is replaced; anything else is a JobConflictError."""
    name = record_name(kind.name, job_name)
    submission = uuid.uuid4().hex
    for _ in range(3):
        existing = await get_record(client, namespace, name)
        if existing is not None:
            if not is_record_of(existing, kind.name, job_name):
                raise JobConflictError(
                    f"ConfigMap {namespace}/{name} exists and is not the record of {kind.name} {job_name}; "
                    "rename the job or delete that ConfigMap")
            record = record_view(existing)
            if record.annotations.get(SUBMISSION) == submission:
                # Our own create: the server made it, but its answer was lost and the retry met it.
                job_metrics.count(job_metrics.JOBS_CREATED, kind.name, namespace)
                return record, False
            if kind.is_finished(record.status):
                await delete_record(client, namespace, name, record.uid)
            else:
                owner = record.annotations.get(SUBMITTED_BY, "")
                if reattach and owner == submitter:
                    return record, True
                raise JobConflictError(
                    f"{kind.name} {namespace}/{job_name} is already running (submitted by {owner or 'someone else'}); "
                    "wait for it, delete its record, or give this job another name")
        body = new_record(kind.name, job_name, namespace, manifest, {},
                          {SUBMITTED_BY: submitter, SUBMISSION: submission, **(annotations or {})})
        try:
            created = await create_record(client, body)
        except AlreadyExists:
            continue  # a duplicate submission raced us; look again
        job_metrics.count(job_metrics.JOBS_CREATED, kind.name, namespace)
        return record_view(created), False
    raise JobConflictError(f"could not create the record {namespace}/{name}: it keeps being recreated")
