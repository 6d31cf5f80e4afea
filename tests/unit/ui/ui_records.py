"""Job records, hand-off custom resources and pods as the UI reads them from the cluster, for its unit tests."""

from __future__ import annotations

import json
from typing import Any

from airflow_broadcast.cluster.job_records import SUBMITTED_BY, new_record
from airflow_broadcast.cluster.observation import pod_info
from airflow_broadcast.reconcilers.handoff import RESOURCES
from airflow_broadcast.reconcilers.observed import RECORD_UID_LABEL, PodInfo

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
SECRET = "ui-secret-5d1e77"


def stamp(epoch: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def record(kind: str, name: str, status: dict[str, Any], *, namespace: str = "ns1", dag: str = "etl",
           manifest: dict[str, Any] | None = None, annotations: dict[str, str] | None = None,
           created: float = NOW - 90) -> dict[str, Any]:
    """A record as the API returns it, submitted by `dag`'s task `run` in run `manual__1`."""
    raw = new_record(kind, name, namespace, manifest or {"metadata": {"name": name}, "spec": {}}, status,
                     {"airflow-broadcast.io/submitted-by": f"{dag}/run/manual__1/-1", **(annotations or {})})
    raw["metadata"].update({"uid": f"uid-{name}", "creationTimestamp": stamp(created), "resourceVersion": "7"})
    raw["data"]["status"] = json.dumps(status)
    return raw


def resource(kind: str, name: str, status: dict[str, Any], *, namespace: str = "ns1", dag: str | None = "etl",
             spec: dict[str, Any] | None = None, created: float = NOW - 60) -> dict[str, Any]:
    """A custom resource left to the cluster's controller, as the API returns it; `dag=None`: not Airflow's."""
    api_version = RESOURCES[kind][0]  # type: ignore[index]
    annotations = {SUBMITTED_BY: f"{dag}/run/manual__1/-1"} if dag else {}
    return {"apiVersion": api_version, "kind": kind, "spec": spec or {}, "status": status,
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "annotations": annotations,
                         "creationTimestamp": stamp(created), "resourceVersion": "9"}}


def pod(name: str, phase: str, *, uid: str = "uid-job", node: str = "", labels: dict[str, str] | None = None,
        restarts: int = 0, exit_code: int | None = None, reason: str = "", owner: str = "ConfigMap",
        pinned: str = "") -> PodInfo:
    """A pod of the job (its controller's `uid`), through the same transform as the watch cache. `pinned`: not yet
    bound, but pinned to that node by a matchFields term, as Kruise pins a BroadcastJob's pods."""
    state: dict[str, Any] = {"running": {}}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "reason": reason}}
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [pinned]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    return pod_info({
        "metadata": {"name": name, "uid": f"pod-{name}", "labels": {RECORD_UID_LABEL: uid, **(labels or {})},
                     "ownerReferences": [{"uid": uid, "kind": owner, "name": "r", "controller": True}]},
        "spec": {"nodeName": node, "restartPolicy": "Never", "containers": [{"name": "main"}],
                 **({"affinity": affinity} if pinned else {})},
        "status": {"phase": phase, "containerStatuses": [{"name": "main", "restartCount": restarts,
                                                          "state": state}]},
    })
