"""The jobs the crash runs drive: a BroadcastJob over a pool of fake nodes and a TFJob on the general nodes.

Every pod succeeds a few seconds after it starts, so status writes keep coming while pods are
created, and ttlSecondsAfterFinished 0 makes the resumed task delete the record (the `ttl` point).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_broadcast.cluster.kinds.registry import driver_for

SIM = "sim.airflow-broadcast.io"


@dataclass(frozen=True)
class CrashJob:
    """What to run (DAG and manifest), which pod slots it must fill, and when its status says it finished."""

    kind: str
    dag_id: str
    manifest: dict[str, Any]
    slots: frozenset[str]
    release: str = ""  # a pod that runs until the test ends it, once every pod exists (the TFJob's chief)

    @property
    def size(self) -> int:
        return len(self.slots)

    def finished(self) -> Callable[[Mapping[str, Any]], bool]:
        return driver_for(self.kind).kind.is_finished


def succeed_after(seconds: int) -> dict[str, str]:
    return {f"{SIM}/result": "Succeeded", f"{SIM}/after": f"{seconds}s"}


def broadcast_job(name: str, nodes: list[str], selector: dict[str, str], run_seconds: int = 4) -> CrashJob:
    manifest = {
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "BroadcastJob", "metadata": {"name": name},
        "spec": {
            "template": {"metadata": {"annotations": succeed_after(run_seconds)}, "spec": {
                "nodeSelector": dict(selector), "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}]}},
            "completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 0},
        },
    }
    return CrashJob("BroadcastJob", "crash_bcj", manifest, frozenset(nodes))


def tf_job(name: str, chief: int, ps: int, workers: int, run_seconds: int = 3,
           selector: Mapping[str, str] | None = None) -> CrashJob:
    """PS and workers succeed; the chief runs until the runner ends it once every replica has its pod, and its
    success ends the job. Had it a fixed run time, a slow takeover could outlast it, and the job would end
    (rightly, as upstream) before the last replicas were created. `selector` keeps the pods on the run's own
    nodes, out of reach of nodes that other work on the same cluster adds and deletes."""
    counts = {"Chief": chief, "PS": ps, "Worker": workers}
    placement = {"nodeSelector": dict(selector)} if selector else {}
    replicas = {kind: {"replicas": n, "restartPolicy": "Never", "template": {
        "metadata": {"annotations": {} if kind == "Chief" else succeed_after(run_seconds)},
        "spec": {**placement, "containers": [{"name": "tensorflow", "image": "kubeflow/tf-dist-mnist-test:latest",
                                              "command": ["python", "train.py"]}]}}}
                for kind, n in counts.items() if n}
    manifest = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
                "spec": {"runPolicy": {"ttlSecondsAfterFinished": 0}, "tfReplicaSpecs": replicas}}
    slots = frozenset(f"{kind.lower()}-{i}" for kind, n in counts.items() for i in range(n))
    return CrashJob("TFJob", "crash_tf", manifest, slots, release=f"{name}-chief-0" if chief else "")
