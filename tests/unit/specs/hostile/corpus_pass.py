"""The pass the reconcile loop runs on a stored record, without the cluster, for tests and the figures.

`python -m benchmarks.hostile` measures with the same helpers the bound tests assert with.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from unit.specs.hostile.corpus import Kind, all_cases, edited, tf_manifest

from airflow_broadcast.cluster.job_records import record_view
from airflow_broadcast.cluster.kinds.registry import kind_for
from airflow_broadcast.reconcilers.broadcast_job.kind import BroadcastObserved
from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.reconcilers.tf_job.kind import TFObserved
from airflow_broadcast.specs.manifest_limits import MAX_VALUES, ManifestError, check_stored_manifest, count_values
from airflow_broadcast.specs.manifest_text import parse_manifest

NOW = 1_800_000_000.0


def stored_records() -> list[tuple[str, Kind, str]]:
    """(name, kind, manifest JSON) for every corpus input that decodes within the bounds.

    A pass takes the namespace from the record, not from the manifest, so the inputs whose only
    fault is `metadata.namespace` are valid there and left out.
    """
    records = []
    for case in all_cases():
        try:
            document = parse_manifest(case.build())
        except ManifestError:
            continue  # refused before a record could exist
        if case.path != "metadata.namespace":
            records.append((case.name, case.kind, json.dumps(document, sort_keys=True)))
    return records


def raw_record(manifest_text: str) -> dict[str, Any]:
    return {"metadata": {"name": "bcj-hostile", "namespace": "ns", "uid": "uid-1",
                         "labels": {"airflow-broadcast.io/job-name": "hostile"}},
            "data": {"manifest": manifest_text, "status": "{}"}}


def one_pass(kind: Kind, manifest_text: str) -> Plan:
    """What the loop does with a record each pass, minus the cluster: read it, then reconcile it."""
    check_stored_manifest(manifest_text)
    record = record_view(raw_record(manifest_text))
    observed: Any = BroadcastObserved(nodes=(), pods=()) if kind == "BroadcastJob" else TFObserved(pods=(), services=())
    return kind_for(kind).reconcile(record, observed, NOW)


def cpu_seconds(action: Callable[[], object], runs: int = 3) -> float:
    """The least CPU time of a few runs: what the pass costs, without what a busy machine adds to one run."""
    spent = []
    for _ in range(runs):
        started = time.process_time()
        action()
        spent.append(time.process_time() - started)
    return min(spent)


def env_vars(count: int) -> list[dict[str, str]]:
    return [{"name": f"VAR_{i}", "value": "v"} for i in range(count)]  # 5 values each


def largest_broadcast_job() -> dict[str, Any]:
    steps = ("spec", "template", "spec", "containers", 0, "env")
    room = MAX_VALUES - count_values(edited("BroadcastJob", (steps, [])))
    return edited("BroadcastJob", (steps, env_vars(room // 5)))


def largest_tf_job() -> dict[str, Any]:
    manifest = tf_manifest()
    replicas = manifest["spec"]["tfReplicaSpecs"].values()
    containers = [replica["template"]["spec"]["containers"][0] for replica in replicas]
    for container in containers:
        container["env"] = []
    room = MAX_VALUES - count_values(manifest)
    for container in containers:
        container["env"] = env_vars(room // 5 // len(containers))
    return manifest




def peak_bytes(action: Callable[[], object]) -> int:
    """The peak of memory allocated while `action` runs (tracemalloc)."""
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
