"""The durable job record: a labelled ConfigMap that holds the manifest and the status and owns the children.

Like Helm's release records it needs only namespace-scoped RBAC, survives
triggerer restarts, lists with `kubectl get cm -l airflow-broadcast.io/kind`,
and deleting it garbage-collects every child through ownerReferences. Writes
carry the resourceVersion (optimistic concurrency).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.cluster.api_errors import ClusterApiError, NotFound
from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.cluster.informers import Informer
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.reconcilers import expiry
from airflow_broadcast.reconcilers.json_keys import SHARE_BELOW_CHARS, shared_keys
from airflow_broadcast.reconcilers.json_text import JsonText
from airflow_broadcast.reconcilers.observed import JobRecord

log = logging.getLogger(__name__)

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "airflow-broadcast"
KIND_LABEL = "airflow-broadcast.io/kind"
JOB_LABEL = "airflow-broadcast.io/job-name"
PHASE_LABEL = "airflow-broadcast.io/phase"  # the job's phase, for `-L` columns and `-l` selection (A12)
PROGRESS_LABEL = "airflow-broadcast.io/done-of-desired"  # BroadcastJob: "<succeeded+failed>-of-<desired>"
EXPIRES_AT = expiry.EXPIRES_AT  # stamped by the pass that finishes the job
RESULT_READ = "airflow-broadcast.io/result-read"
SUBMITTED_BY = "airflow-broadcast.io/submitted-by"
SUBMISSION = "airflow-broadcast.io/submission"  # one submit call: its create may be retried after a lost answer
RECORD_PREFIX = {"BroadcastJob": "bcj", "TFJob": "tfjob"}


def status_labels(status: Mapping[str, Any]) -> dict[str, str]:
    """The record labels that mirror its status, so kubectl shows and selects them as a CRD's columns would.

    The phase is a BroadcastJob's `status.phase`, else the type of a TFJob's newest True condition,
    in lower case; a status without either has no phase label yet.
    """
    labels: dict[str, str] = {}
    phase = status.get("phase")
    if not phase:
        true = [c for c in status.get("conditions") or [] if isinstance(c, Mapping) and c.get("status") == "True"]
        phase = true[-1].get("type") if true else None
    if isinstance(phase, str) and phase.isalnum():
        labels[PHASE_LABEL] = phase.lower()
    if isinstance(status.get("desired"), int):
        done = int(status.get("succeeded") or 0) + int(status.get("failed") or 0)
        labels[PROGRESS_LABEL] = f"{done}-of-{status['desired']}"
    return labels


def record_name(kind: str, job_name: str) -> str:
    return f"{RECORD_PREFIX[kind]}-{job_name}"


def records_path(namespace: str) -> str:
    return api_path("v1", "configmaps", namespace=namespace)


def record_path(namespace: str, name: str) -> str:
    return api_path("v1", "configmaps", namespace=namespace, name=name)


def manifest_text(manifest: Mapping[str, Any]) -> str:
    """The stored form of a manifest; one read from a record is stored as it was."""
    return manifest.text if isinstance(manifest, JsonText) else json.dumps(manifest, sort_keys=True)


def new_record(kind: str, job_name: str, namespace: str, manifest: Mapping[str, Any],
               status: Mapping[str, Any], annotations: Mapping[str, str]) -> JsonDict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": record_name(kind, job_name),
            "namespace": namespace,
            "labels": {MANAGED_BY_LABEL: MANAGED_BY, KIND_LABEL: kind, JOB_LABEL: job_name},
            "annotations": dict(annotations),
        },
        "data": {"manifest": manifest_text(manifest), "status": json.dumps(status, sort_keys=True)},
    }


def is_record_of(raw: Mapping[str, Any], kind: str, job_name: str) -> bool:
    labels = (raw.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(KIND_LABEL) == kind and labels.get(JOB_LABEL) == job_name)


def read_manifest(raw: Mapping[str, Any]) -> JsonDict:
    data: JsonDict = json.loads((raw.get("data") or {}).get("manifest") or "{}")
    return data


def read_status(raw: Mapping[str, Any]) -> JsonDict:
    """The status as parsed; a pass's view of it lives for that pass only, so its keys are not shared."""
    data: JsonDict = json.loads((raw.get("data") or {}).get("status") or "{}")
    return data


def record_view(raw: Mapping[str, Any]) -> JobRecord:
    """The one typed view of a record, read once per version: identity, manifest, status, flags, and the raw object."""
    meta = raw.get("metadata") or {}
    name, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
    return JobRecord(
        name=name,
        namespace=str(meta.get("namespace", "")),
        uid=uid,
        owner_reference={"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid,
                         "controller": True, "blockOwnerDeletion": True},
        status=read_status(raw),
        annotations=dict(meta.get("annotations") or {}),
        deleting=bool(meta.get("deletionTimestamp")),
        job_name=str((meta.get("labels") or {}).get(JOB_LABEL, "")),
        manifest=JsonText(str((raw.get("data") or {}).get("manifest") or "")),
        raw=raw,
    )


def view_worth_keeping(raw: Mapping[str, Any]) -> bool:
    """Keep a record's typed view between passes only when its status is large: a small one is parsed
    again in microseconds, and 1,000 idle jobs would hold a parsed copy each (about 4 KB)."""
    return len((raw.get("data") or {}).get("status") or "") >= SHARE_BELOW_CHARS


async def create_record(client: KubeClient, record: Mapping[str, Any]) -> JsonDict:
    namespace = record["metadata"]["namespace"]
    return await client.create(records_path(namespace), record)


def cached_record(obj: JsonDict) -> JsonDict:
    """A record as the watch cache keeps it: without field-ownership bookkeeping, which an update that
    omits it leaves as the server has it, and with the keys every record repeats shared (its manifest
    and status stay the strings they are)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    for key in ("apiVersion", "kind"):
        if isinstance(obj.get(key), str):
            obj[key] = sys.intern(obj[key])
    shared: JsonDict = shared_keys(obj)
    return shared


async def get_record(client: KubeClient, namespace: str, name: str) -> JsonDict | None:
    try:
        return await client.get(record_path(namespace, name))
    except NotFound:
        return None


async def current_record(client: KubeClient, namespace: str, name: str, uid: str) -> JsonDict | None:
    """The record as the cluster has it now; None when it is gone or was re-created under another uid."""
    fresh = await get_record(client, namespace, name)
    if fresh is None or (fresh.get("metadata") or {}).get("uid") != uid:
        return None
    return fresh


async def write_record(client: KubeClient, raw: Mapping[str, Any], status: Mapping[str, Any] | None,
                       annotations: Mapping[str, str | None], *, manifest: Mapping[str, Any] | None = None) -> JsonDict:
    """PUT the record with its resourceVersion (and a new manifest, if given); a concurrent writer gets a Conflict."""
    updated: JsonDict = json.loads(json.dumps(raw))
    meta = updated.setdefault("metadata", {})
    current = dict(meta.get("annotations") or {})
    for key, value in annotations.items():
        if value is None:
            current.pop(key, None)
        else:
            current[key] = value
    meta["annotations"] = current
    if status is not None:
        updated.setdefault("data", {})["status"] = json.dumps(status, sort_keys=True)
        meta["labels"] = {**(meta.get("labels") or {}), **status_labels(status)}
    if manifest is not None:
        updated.setdefault("data", {})["manifest"] = manifest_text(manifest)
    return await client.replace(record_path(meta["namespace"], meta["name"]), updated)


async def delete_record(client: KubeClient, namespace: str, name: str, uid: str = "") -> bool:
    """Delete the record (children follow by GC). False when it was already gone."""
    try:
        await client.delete(record_path(namespace, name), propagation="Background", preconditions_uid=uid or None)
    except NotFound:
        return False
    return True


async def record_in_cluster(client: KubeClient, records: Informer[JsonDict], namespace: str, record_name: str,
                            uid: str) -> bool:
    """The cache lacks the job's record: whether the cluster has it (then it is cached now) or it is gone.

    A trigger may start before the shared watch has delivered a record created a moment ago; a GET
    tells that apart from a deleted one. A failed GET counts as present: the caller looks again.
    """
    try:
        fresh = await current_record(client, namespace, record_name, uid)
    except ClusterApiError as exc:
        log.warning("could not read job record %s/%s: %s", namespace, record_name, exc.describe())
        await asyncio.sleep(1.0)
        return True
    if fresh is None:
        return False
    records.upsert(fresh, notify=False)  # the cache's own transform strips and shares
    return True


async def refresh_record(client: KubeClient, records: Informer[JsonDict], namespace: str, record_name: str) -> bool:
    """M5: a status write lost to another writer (409): GET the record now instead of trusting the cache.

    The next pass recomputes from the fresh version, so the other writer's changes are kept
    and nothing depends on how far behind the watch is. False when the GET itself failed.
    """
    log.info("job record %s/%s changed under us (409 on the status write); re-reading it", namespace, record_name)
    try:
        fresh = await get_record(client, namespace, record_name)
    except ClusterApiError as exc:
        log.warning("could not re-read job record %s/%s: %s", namespace, record_name, exc.describe())
        return False
    if fresh is None:
        records.remove(record_name)
    else:
        records.upsert(fresh, notify=False)
    return True
