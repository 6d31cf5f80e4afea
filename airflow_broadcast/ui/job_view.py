"""What the pages show of a job: the one place that turns a record (and its live pods) into rows.

Pure on purpose (no I/O, no Airflow, no clock): the app passes `now`, the record as the API returns it,
and the job's pods as the shared watch cache holds them. A BroadcastJob's per-node rows come from
`status.nodes`, with the live pod's phase and restarts laid over them, so a pod's change shows before
the next status write; a TFJob's per-replica rows come from its pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from airflow_broadcast.cluster.job_records import EXPIRES_AT, KIND_LABEL, SUBMITTED_BY, record_view
from airflow_broadcast.reconcilers.observed import JobRecord, PodInfo
from airflow_broadcast.specs.tf_job.spec import LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from airflow_broadcast.specs.timestamps import from_rfc3339

STOPPED_BY = "airflow-broadcast.io/stopped-by"
PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
MAX_INELIGIBLE = 200  # a 15,000-node cluster may leave thousands out; the page lists the first ones
NODE_COLUMNS = ("node", "pod", "phase", "exitCode", "reason", "message", "restarts")
REPLICA_COLUMNS = ("type", "index", "pod", "phase", "exitCode", "restarts")


class Submitter(NamedTuple):
    """The task instance that submitted a job, from the record's `submitted-by` annotation."""

    dag_id: str
    task_id: str
    run_id: str
    map_index: int = -1


def submitter_of(value: str) -> Submitter | None:
    """`dag_id/task_id/run_id/map_index` (a run id may hold slashes); None when absent or malformed."""
    parts = value.split("/")
    if len(parts) < 4 or not all(parts[:2]):
        return None
    try:
        map_index = int(parts[-1])
    except ValueError:
        return None
    return Submitter(parts[0], parts[1], "/".join(parts[2:-1]), map_index)


def _age(stamp: str | None, now: float) -> float | None:
    when = from_rfc3339(stamp)
    return None if when is None else max(0.0, now - when)


def _deadline(kind: str, manifest: Mapping[str, Any], status: Mapping[str, Any], now: float) -> float | None:
    """Seconds left before activeDeadlineSeconds runs out, negative once passed; None without a running clock."""
    spec = manifest.get("spec") or {}
    section = (spec.get("completionPolicy") if kind == "BroadcastJob" else spec.get("runPolicy")) or {}
    seconds = section.get("activeDeadlineSeconds")
    started = from_rfc3339(status.get("startTime"))
    if seconds is None or started is None or status.get("completionTime"):
        return None
    return started + int(seconds) - now


def stopped_by(manifest: Mapping[str, Any]) -> str | None:
    """Who stopped the job from the page, and when (kept in the job's own annotations)."""
    value = ((manifest.get("metadata") or {}).get("annotations") or {}).get(STOPPED_BY)
    return str(value) if value else None


def job_phase(kind: str, status: Mapping[str, Any], stopped: str | None) -> str:
    """The phase a person reads: Stopped when stopped from the page, else the kind's own phase."""
    if kind == "BroadcastJob":
        phase = str(status.get("phase") or "")
    else:
        true = [c for c in status.get("conditions") or [] if c.get("status") == "True"]
        phase = "Failed" if any(c.get("type") == "Failed" for c in true) else (
            str(true[-1].get("type", "")) if true else "Created")
    finished = phase.lower() in ("completed", "failed", "succeeded")
    if stopped and not finished:
        return "Stopped"
    return phase or "Pending"


def counts(kind: str, status: Mapping[str, Any]) -> dict[str, Any]:
    """desired/active/succeeded/failed for a BroadcastJob; per replica type for a TFJob."""
    if kind == "BroadcastJob":
        return {key: int(status.get(key, 0)) for key in ("desired", "active", "succeeded", "failed")}
    return {rtype: {key: int(c.get(key, 0)) for key in ("active", "succeeded", "failed")}
            for rtype, c in sorted((status.get("replicaStatuses") or {}).items())}


def summary_of(kind: str, view: JobRecord, now: float, *, record: str, ttl_in: float | None,
               controller: str, stopped: str | None = None) -> dict[str, Any]:
    """One line of the jobs list, the same for a job record and a custom resource run by the cluster."""
    status = view.status
    submitter = submitter_of(view.annotations.get(SUBMITTED_BY, ""))
    return {
        "kind": kind, "namespace": view.namespace, "name": view.job_name, "record": record,
        "uid": view.uid, "phase": job_phase(kind, status, stopped), "counts": counts(kind, status),
        "age": _age(str((view.raw.get("metadata") or {}).get("creationTimestamp") or ""), now),
        "deadlineIn": _deadline(kind, view.manifest, status, now), "ttlIn": ttl_in,
        "dagId": submitter.dag_id if submitter else None, "taskId": submitter.task_id if submitter else None,
        "runId": submitter.run_id if submitter else None, "mapIndex": submitter.map_index if submitter else None,
        "stoppedBy": stopped, "controller": controller,
    }


def job_summary(raw: Mapping[str, Any], now: float) -> dict[str, Any]:
    """One line of the jobs list for a job record (Airflow is the controller)."""
    record = record_view(raw)
    kind = str(((raw.get("metadata") or {}).get("labels") or {}).get(KIND_LABEL, ""))
    expires = from_rfc3339(record.annotations.get(EXPIRES_AT))
    return summary_of(kind, record, now, record=record.name, ttl_in=None if expires is None else expires - now,
                      controller="airflow", stopped=stopped_by(record.manifest))


def matches(summary: Mapping[str, Any], filters: Mapping[str, str | None]) -> bool:
    """Every given filter (phase, kind, namespace, dag, controller) equals the job's value; case is ignored."""
    keys = {"phase": "phase", "kind": "kind", "namespace": "namespace", "dag": "dagId", "controller": "controller"}
    for name, key in keys.items():
        wanted = filters.get(name)
        if wanted and str(summary.get(key) or "").lower() != wanted.lower():
            return False
    return True


def _pod_row(pod: PodInfo) -> dict[str, Any]:
    exit_ = pod.final_exit()
    return {"pod": pod.name, "phase": "Terminating" if pod.deleting and not pod.terminal else pod.phase,
            "exitCode": exit_.exit_code if exit_ else None, "restarts": pod.restarts,
            "reason": (exit_.reason if exit_ else "") or pod.waiting_reason,
            "message": (exit_.message if exit_ else "") or pod.pending_message}


def node_rows(status: Mapping[str, Any], pods: Iterable[PodInfo],
              table: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Per node: the recorded result, with the phase and restarts of its live pod laid over it. `table` is the
    whole node table of a job whose record keeps only a capped view (its parts, read by the caller)."""
    live = {pod.name: pod for pod in pods}
    rows = []
    for node, result in ((status.get("nodes") if table is None else table) or {}).items():
        row: dict[str, Any] = {"node": node, "pod": result.get("pod", ""), "phase": result.get("phase", ""),
                               "exitCode": result.get("exitCode"), "reason": result.get("reason", ""),
                               "message": result.get("message", ""), "restarts": int(result.get("restarts", 0))}
        pod = live.pop(str(row["pod"]), None)
        if pod is not None and not (row["phase"] in ("Succeeded", "Failed") and not pod.terminal):
            row.update({k: v for k, v in _pod_row(pod).items() if v not in (None, "")})
        rows.append(row)
    known = {row["node"] for row in rows}
    rows.extend({"node": pod.node, **_pod_row(pod)} for pod in live.values() if pod.node and pod.node not in known)
    return rows


def replica_rows(pods: Iterable[PodInfo]) -> list[dict[str, Any]]:
    """Per replica (type, index): its pod's phase, exit code and restarts."""
    rows = []
    for pod in pods:
        index = pod.labels.get(LABEL_REPLICA_INDEX, "")
        rows.append({"type": pod.labels.get(LABEL_REPLICA_TYPE, ""),
                     "index": int(index) if index.isdigit() else None,
                     **{k: v for k, v in _pod_row(pod).items() if k in REPLICA_COLUMNS}})
    return rows


def _sort_key(column: str) -> Any:
    def key(row: Mapping[str, Any]) -> tuple[int, Any]:
        value = row.get(column)
        if value is None or value == "":
            return (1, "")
        return (0, value) if isinstance(value, int | float) else (0, str(value))
    return key


def page_of(rows: Sequence[dict[str, Any]], *, sort: str, descending: bool, page: int, size: int,
            columns: Sequence[str]) -> dict[str, Any]:
    """One page of the rows, sorted by `sort` (a known column, else the first); page counts from 0."""
    column = sort if sort in columns else columns[0]
    size = max(1, min(size, MAX_PAGE_SIZE))
    ordered = sorted(rows, key=_sort_key(columns[1]))  # ties keep this order (replica index, node's pod)
    ordered = sorted(ordered, key=_sort_key(column), reverse=descending)
    pages = max(1, -(-len(ordered) // size))
    page = max(0, min(page, pages - 1))
    return {"rows": ordered[page * size:(page + 1) * size], "total": len(ordered), "page": page, "pages": pages,
            "size": size, "sort": column, "descending": descending}


def conditions(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The conditions timeline, oldest transition first."""
    items = [dict(c) for c in status.get("conditions") or []]
    return sorted(items, key=lambda c: str(c.get("lastTransitionTime") or c.get("lastUpdateTime") or ""))


def job_detail(raw: Mapping[str, Any], pods: Iterable[PodInfo], now: float,
               table: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The job page of a job record without its table page."""
    return detail_of(job_summary(raw, now), record_view(raw).status, pods, table)


def detail_of(summary: Mapping[str, Any], status: Mapping[str, Any], pods: Iterable[PodInfo],
              table: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Summary, conditions, ineligible nodes, failure cause and all rows; `table` as for `node_rows`."""
    pods = list(pods)
    columns: tuple[str, ...]
    if summary["kind"] == "BroadcastJob":
        rows, columns = node_rows(status, pods, table), NODE_COLUMNS
        ineligible = sorted((status.get("ineligibleNodes") or {}).items())
        total = int(status.get("ineligibleNodesTotal") or len(ineligible))
        extra: dict[str, Any] = {"ineligibleTotal": total, "ineligibleNodes": [
            {"node": n, "reason": r} for n, r in ineligible[:MAX_INELIGIBLE]]}
    else:
        rows, columns = replica_rows(pods), REPLICA_COLUMNS
        extra = {"failure": status.get("failure")}
    return {**summary, **extra, "conditions": conditions(status), "columns": list(columns), "allRows": rows,
            "failedPods": sorted(str(r["pod"]) for r in rows if r.get("phase") == "Failed" and r.get("pod"))}
