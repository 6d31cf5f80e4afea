"""Informers filled by hand (no client, no watch): the caches the visibility features read, in unit tests."""

from __future__ import annotations

from dataclasses import replace
from itertools import count
from typing import Any

from airflow_broadcast.cluster.informers import Informer
from airflow_broadcast.cluster.observation import pod_info
from airflow_broadcast.reconcilers.observed import PodInfo
from airflow_broadcast.specs.timestamps import to_rfc3339
from support.tf_builders import UID, make_pod

UID_LABEL = "airflow-broadcast.io/job-uid"
_versions = count(1)


def version() -> str:
    """The next resourceVersion: every hand-made object is newer than the last."""
    return str(next(_versions))


def pods_informer() -> Informer[PodInfo]:
    return Informer(None, "/pods", pod_info, index_label=UID_LABEL)  # type: ignore[arg-type]


def pod_object(pod: PodInfo, **status: Any) -> dict[str, Any]:
    """A raw pod the pods informer turns back into `pod` (name, uid, labels, node, phase, creation time)."""
    return {"metadata": {"name": pod.name, "uid": pod.uid, "labels": dict(pod.labels), "resourceVersion": version(),
                         "creationTimestamp": to_rfc3339(pod.created_at)},
            "spec": {"nodeName": pod.node}, "status": {"phase": pod.phase, **status}}


def job_pod(name: str, uid: str, phase: str = "Pending", *, owner: str = UID, labels: dict[str, str] | None = None
            ) -> PodInfo:
    """A TFJob worker pod of the record `owner` (its job-uid label), as the pods informer holds it."""
    pod = make_pod("mnist", "Worker", 0, phase, uid=uid, name=name)
    return replace(pod, labels={UID_LABEL: owner, **(labels or {})})
