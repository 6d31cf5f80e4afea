"""Get, list, update (JSON merge patch) and delete jobs, as the Kubeflow SDK does for TFJobs (checklist N3).

A job is its record (a ConfigMap, see job_records); these functions present it in the
upstream object shape (`apiVersion`, `kind`, `metadata`, `spec`, `status`), so code written
against `TrainingClient.get_job/list_jobs/update_job/delete_job` reads the same fields.
An update edits the stored manifest, which the reconcile loop re-reads on its next pass.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.cluster.api_errors import Conflict, NotFound
from airflow_broadcast.cluster.job_events import record_job_deleted
from airflow_broadcast.cluster.job_records import (
    KIND_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    get_record,
    is_record_of,
    record_name,
    record_path,
    record_view,
    records_path,
    write_record,
)
from airflow_broadcast.cluster.kinds.registry import kind_for
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.reconcilers.kind import JobKind
from airflow_broadcast.reconcilers.observed import JobRecord

PROPAGATION_POLICIES = ("Orphan", "Background", "Foreground")
UPDATE_RETRIES = 5
# Set by the API server: accepted in a patch (an object read with get_job can be sent back) but never stored.
_SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation",
                  "managedFields", "selfLink")


class JobNotFound(NotFound):
    """The job has no record in the namespace (never created, deleted, or removed by its TTL)."""

    def __init__(self, kind: str, namespace: str, name: str, *, verb: str = "GET") -> None:
        self.kind, self.namespace, self.name = kind, namespace, name
        super().__init__(404, "NotFound", f"{kind} {namespace}/{name} not found", verb=verb,
                         target=record_path(namespace, record_name(kind, name)))

    def describe(self) -> str:
        return (f"{self.kind} {self.namespace}/{self.name} not found "
                f"(no job record ConfigMap {self.namespace}/{record_name(self.kind, self.name)})")


class JobConflict(Conflict):
    """A precondition (uid, resourceVersion) did not hold, or the job kept changing during an update."""

    def __init__(self, kind: str, namespace: str, name: str, message: str, *, verb: str) -> None:
        self.kind, self.namespace, self.name = kind, namespace, name
        super().__init__(409, "Conflict", message, verb=verb,
                         target=record_path(namespace, record_name(kind, name)))

    def describe(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}: {self.api_message}"


def job_object(kind: JobKind[Any, Any], record: JobRecord) -> JsonDict:
    """The job in the upstream shape: the manifest's identity and spec, the record's metadata and status."""
    record_meta = record.raw.get("metadata") or {}
    manifest_meta = record.manifest.get("metadata") or {}
    metadata: JsonDict = {
        "name": record.job_name or str(manifest_meta.get("name", "")),
        "namespace": record.namespace,
        "labels": dict(manifest_meta.get("labels") or {}),
        "annotations": dict(manifest_meta.get("annotations") or {}),
        "uid": record.uid,
        "creationTimestamp": record_meta.get("creationTimestamp"),
        "resourceVersion": str(record_meta.get("resourceVersion", "")),
    }
    if record.deleting:
        metadata["deletionTimestamp"] = record_meta["deletionTimestamp"]
    return {
        "apiVersion": record.manifest.get("apiVersion") or kind.api_version,
        "kind": kind.name,
        "metadata": metadata,
        "spec": record.manifest.get("spec") or {},
        "status": dict(record.status),
    }


async def _read_record(client: KubeClient, kind: str, namespace: str, name: str, verb: str = "GET") -> JobRecord:
    raw = await get_record(client, namespace, record_name(kind, name))
    if raw is None or not is_record_of(raw, kind, name):  # missing, or a ConfigMap that only has the name
        raise JobNotFound(kind, namespace, name, verb=verb)
    return record_view(raw)


async def get_job(client: KubeClient, kind: str, namespace: str, name: str) -> JsonDict:
    """The job as `{apiVersion, kind, metadata, spec, status}`; JobNotFound when it does not exist."""
    job_kind = kind_for(kind)
    return job_object(job_kind, await _read_record(client, job_kind.name, namespace, name))


async def list_jobs(client: KubeClient, kind: str, namespace: str) -> list[JsonDict]:
    """Every job of `kind` in the namespace, sorted by name."""
    job_kind = kind_for(kind)
    selector = f"{MANAGED_BY_LABEL}={MANAGED_BY},{KIND_LABEL}={job_kind.name}"
    items, _ = await client.list_all(records_path(namespace), labelSelector=selector)
    jobs = [job_object(job_kind, record_view(raw)) for raw in items]
    return sorted(jobs, key=lambda job: str(job["metadata"]["name"]))


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: null deletes a key, objects merge recursively, anything else (lists too) replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result: JsonDict = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge_patch(result.get(key), value)
    return result


def _split_patch(patch: Mapping[str, Any], namespace: str, name: str) -> tuple[JsonDict, dict[str, str]]:
    """The patch to merge into the manifest, and the preconditions (uid, resourceVersion) it carries.

    `metadata.name` and `metadata.namespace` may be repeated but not changed; `status` and the
    server-set metadata fields are not part of the manifest, as `status` is not part of a TFJob's
    main resource (status subresource).
    """
    if not isinstance(patch, Mapping):
        raise ValueError(f"patch must be a mapping (a JSON merge patch), not {type(patch).__name__}")
    body: JsonDict = {k: v for k, v in patch.items() if k != "status"}
    preconditions: dict[str, str] = {}
    metadata = body.get("metadata")
    if metadata is None:
        return body, preconditions
    if not isinstance(metadata, Mapping):
        raise ValueError(f"metadata: must be an object in the patch, not {type(metadata).__name__}")
    for field, expected in (("name", name), ("namespace", namespace)):
        if field in metadata and metadata[field] != expected:
            raise ValueError(f"metadata.{field}: cannot be changed by an update "
                             f"(is {expected!r}, the patch sets {metadata[field]!r})")
    for field in ("uid", "resourceVersion"):
        if metadata.get(field):
            preconditions[field] = str(metadata[field])
    body["metadata"] = {k: v for k, v in metadata.items() if k not in ("name", "namespace", *_SERVER_FIELDS)}
    return body, preconditions


async def update_job(client: KubeClient, kind: str, namespace: str, name: str, patch: Mapping[str, Any], *,
                     retries: int = UPDATE_RETRIES) -> JsonDict:
    """Apply a JSON merge patch to the job's manifest and return the updated job.

    Nothing is written when the result is invalid (InvalidSpecError names the field paths).
    The write carries the record's resourceVersion; when the reconcile loop wrote the status
    in between, the record is read again and the patch re-applied (up to `retries` times).
    A `metadata.uid` or `metadata.resourceVersion` in the patch is a precondition, as on the API server.
    """
    job_kind = kind_for(kind)
    body, preconditions = _split_patch(patch, namespace, name)
    for _ in range(retries + 1):
        record = await _read_record(client, kind, namespace, name, verb="PATCH")
        meta = record.raw.get("metadata") or {}
        for field, wanted in preconditions.items():
            if str(meta.get(field, "")) != wanted:
                raise JobConflict(kind, namespace, name, f"precondition failed: metadata.{field} is "
                                  f"{meta.get(field)!r}, the patch expects {wanted!r}", verb="PATCH")
        new = json_merge_patch(record.manifest, body)
        job_kind.validate_update(name, new, record.manifest, namespace=namespace)
        if new == record.manifest:
            return job_object(job_kind, record)
        try:
            written = await write_record(client, record.raw, None, {}, manifest=new)
        except NotFound as exc:
            raise JobNotFound(kind, namespace, name, verb="PATCH") from exc
        except Conflict:
            continue
        return job_object(job_kind, record_view(written))
    raise JobConflict(kind, namespace, name, f"the job changed concurrently {retries + 1} times while the "
                      "update was applied; try again", verb="PATCH")


def delete_options(*, propagation_policy: str | None = None, grace_period_seconds: int | None = None,
                   preconditions_uid: str | None = None, preconditions_resource_version: str | None = None,
                   dry_run: bool = False) -> JsonDict:
    """A `meta/v1 DeleteOptions` body (the shape of the SDK's V1DeleteOptions)."""
    if propagation_policy is not None and propagation_policy not in PROPAGATION_POLICIES:
        raise ValueError(f"propagation_policy must be one of {', '.join(PROPAGATION_POLICIES)}, "
                         f"not {propagation_policy!r}")
    if grace_period_seconds is not None and grace_period_seconds < 0:
        raise ValueError(f"grace_period_seconds must be >= 0, not {grace_period_seconds}")
    body: JsonDict = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if propagation_policy is not None:
        body["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        body["gracePeriodSeconds"] = grace_period_seconds
    preconditions = {k: v for k, v in (("uid", preconditions_uid),
                                       ("resourceVersion", preconditions_resource_version)) if v}
    if preconditions:
        body["preconditions"] = preconditions
    if dry_run:
        body["dryRun"] = ["All"]
    return body


async def delete_job(client: KubeClient, kind: str, namespace: str, name: str, *,
                     propagation_policy: str | None = None, grace_period_seconds: int | None = None,
                     preconditions_uid: str | None = None, preconditions_resource_version: str | None = None,
                     dry_run: bool = False) -> JsonDict:
    """Delete the job (its record; pods and services follow by garbage collection) with DeleteOptions.

    `propagation_policy` Foreground keeps the job, with a deletionTimestamp, until its children are
    gone; Background (the API server's default for ConfigMaps) returns at once; Orphan leaves the
    children. Returns the job as it was just before the deletion. JobNotFound when it does not exist,
    JobConflict when a precondition does not hold.
    """
    job_kind = kind_for(kind)
    body = delete_options(propagation_policy=propagation_policy, grace_period_seconds=grace_period_seconds,
                          preconditions_uid=preconditions_uid,
                          preconditions_resource_version=preconditions_resource_version, dry_run=dry_run)
    record = await _read_record(client, kind, namespace, name, verb="DELETE")
    try:
        await client.request("DELETE", record_path(namespace, record_name(kind, name)), body=body)
    except NotFound as exc:
        raise JobNotFound(kind, namespace, name, verb="DELETE") from exc
    except Conflict as exc:
        raise JobConflict(kind, namespace, name, f"not deleted, a precondition failed: {exc.api_message}",
                          verb="DELETE") from exc
    if not dry_run:
        await record_job_deleted(client, record.raw)
    return job_object(job_kind, record)
