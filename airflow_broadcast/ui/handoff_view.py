"""What the pages show of a job left to the cluster's controller (`controller="cluster"`): its custom resource
and the pods that controller made, in the shape of a job record's line and rows.

Pure, as job_view: the app passes `now`, the resource as the API returns it and the pods the watch cache holds.
Kruise keeps no per-node table, so a BroadcastJob's rows are its pods, one per node it is pinned to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow_broadcast.cluster.job_records import SUBMITTED_BY
from airflow_broadcast.reconcilers.handoff import RESOURCES, resource_view
from airflow_broadcast.reconcilers.kind import KindName, spec_section
from airflow_broadcast.reconcilers.observed import PodInfo
from airflow_broadcast.specs.broadcast_job.spec import JOB_UID_LABEL
from airflow_broadcast.specs.tf_job.spec import LABEL_JOB_NAME
from airflow_broadcast.specs.timestamps import from_rfc3339
from airflow_broadcast.ui.job_view import detail_of, summary_of

RESOURCE_MARK = "~"  # no Kubernetes name starts with it: a resource's id never collides with a record's name
RUN_BY: dict[KindName, str] = {"BroadcastJob": "OpenKruise", "TFJob": "training-operator"}
POLICY_SECTION: dict[KindName, str] = {"BroadcastJob": "completionPolicy", "TFJob": "runPolicy"}
KINDS_BY_PLURAL: dict[str, KindName] = {plural: kind for kind, (_, plural) in RESOURCES.items()}


def resource_id(kind: KindName, name: str) -> str:
    """The id the page's URLs use for a custom resource: `~broadcastjobs.<name>`, `~tfjobs.<name>`."""
    return f"{RESOURCE_MARK}{RESOURCES[kind][1]}.{name}"


def parse_resource_id(record: str) -> tuple[KindName, str] | None:
    """(kind, name) of a resource id; None for a record's name or anything malformed."""
    if not record.startswith(RESOURCE_MARK):
        return None
    plural, dot, name = record[len(RESOURCE_MARK):].partition(".")
    kind = KINDS_BY_PLURAL.get(plural)
    return (kind, name) if kind is not None and dot and name else None


def kind_of(raw: Mapping[str, Any]) -> KindName:
    """The resource's kind (ValueError for one the page does not know)."""
    kind = raw.get("kind")
    for known in RESOURCES:
        if kind == known:
            return known
    raise ValueError(f"not a custom resource the page shows: kind {kind!r}")


def submitted_by_airflow(raw: Mapping[str, Any]) -> bool:
    """Airflow's resources carry the submitter annotation; others are someone else's and not shown."""
    return bool(((raw.get("metadata") or {}).get("annotations") or {}).get(SUBMITTED_BY))


def ttl_in(kind: KindName, manifest: Mapping[str, Any], status: Mapping[str, Any], now: float) -> float | None:
    """Seconds left before the controller deletes the finished resource (`ttlSecondsAfterFinished` after
    completionTime); None while it runs or without a TTL."""
    seconds = spec_section(manifest, POLICY_SECTION[kind]).get("ttlSecondsAfterFinished")
    finished = from_rfc3339(status.get("completionTime"))
    if seconds is None or finished is None:
        return None
    return finished + int(seconds) - now


def resource_summary(raw: Mapping[str, Any], now: float) -> dict[str, Any]:
    """One line of the jobs list, as a record's, with `controller: cluster`."""
    kind = kind_of(raw)
    view = resource_view(raw)
    return summary_of(kind, view, now, record=resource_id(kind, view.name),
                      ttl_in=ttl_in(kind, view.manifest, view.status, now), controller="cluster")


def resource_detail(raw: Mapping[str, Any], pods: Iterable[PodInfo], now: float) -> dict[str, Any]:
    """The job page without its table page; the rows are the controller's pods (no recorded node table)."""
    summary = resource_summary(raw, now)
    detail = detail_of(summary, resource_view(raw).status, pods, table={})
    return {**detail, "runBy": RUN_BY[summary["kind"]]}


def pod_index(kind: KindName, name: str, uid: str) -> tuple[str, str]:
    """The label the controller sets on every pod of a job, and its value for this job."""
    return (JOB_UID_LABEL, uid) if kind == "BroadcastJob" else (LABEL_JOB_NAME, name)


def owned_pods(pods: Iterable[PodInfo], uid: str) -> list[PodInfo]:
    """Only the pods whose controller is the resource: labels alone are no proof (a job of the same name)."""
    return [pod for pod in pods if pod.owner_uid == uid]
