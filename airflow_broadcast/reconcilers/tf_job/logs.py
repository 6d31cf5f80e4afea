"""Whose log tells a TFJob's story: the chief's (or master's), else worker 0's, as the Kubeflow SDK reads it."""

from __future__ import annotations

from collections.abc import Sequence

from airflow_broadcast.reconcilers.observed import PodInfo
from airflow_broadcast.reconcilers.tf_job.children import replica_index
from airflow_broadcast.specs.tf_job.spec import LABEL_JOB_ROLE


def primary_pod(pods: Sequence[PodInfo]) -> PodInfo | None:
    """The live pod labelled `job-role: master` (a Chief/Master, else worker 0, C3); the newest one of the
    lowest index when a replica was re-created."""
    masters = [p for p in pods if p.labels.get(LABEL_JOB_ROLE) == "master" and not p.deleting]
    return min(masters, key=lambda p: (replica_index(p.labels) or 0, -p.created_at, p.name), default=None)
