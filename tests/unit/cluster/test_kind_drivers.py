"""The kind registry, the drivers' snapshots of the watch caches, and the one typed view of a record."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_broadcast.cluster.informers import Informer
from airflow_broadcast.cluster.job_records import new_record, record_view
from airflow_broadcast.cluster.kinds.registry import driver_for, kind_for, options_for
from airflow_broadcast.cluster.observation import node_info, pod_info
from airflow_broadcast.cluster.reconcile_loop import LoopReason, WatchSet
from airflow_broadcast.reconcilers.broadcast_job.kind import BroadcastJobKind
from airflow_broadcast.reconcilers.broadcast_job.reconciler import BroadcastOptions
from airflow_broadcast.reconcilers.tf_job.kind import TFJobKind
from airflow_broadcast.reconcilers.tf_job.options import TFJobOptions

UID_LABEL = "airflow-broadcast.io/job-uid"


def test_the_loop_reasons_keep_the_event_strings() -> None:
    assert [r.value for r in LoopReason] == ["finished", "settled", "pending", "gone", "timeout", "startup_timeout",
                                             "invalid", "error"]
    assert LoopReason("finished") is LoopReason.FINISHED and LoopReason.ERROR == "error"


@pytest.mark.parametrize("options", [None, {"kruise_compat": True}, BroadcastOptions(kruise_compat=True)])
def test_driver_for_takes_the_dataclass_or_its_fields(options: Any) -> None:
    driver = driver_for("BroadcastJob", options)
    assert isinstance(driver.kind, BroadcastJobKind)
    assert driver.kind.options == (BroadcastOptions() if options is None else BroadcastOptions(kruise_compat=True))


def test_the_registry_refuses_unknown_kinds_switches_and_the_other_kinds_options() -> None:
    assert kind_for("TFJob", {"cluster_domain": "c"}) == TFJobKind(TFJobOptions(cluster_domain="c"))
    assert options_for("TFJob") == TFJobOptions()
    with pytest.raises(ValueError, match="unknown job kind 'PyTorchJob'; known kinds: BroadcastJob, TFJob"):
        driver_for("PyTorchJob")
    with pytest.raises(ValueError, match=r"unknown TFJobOptions switch\(es\) kruise_compat"):
        driver_for("TFJob", {"kruise_compat": True})
    with pytest.raises(TypeError, match="expected TFJobOptions"):
        driver_for("TFJob", BroadcastOptions())


def _pod(name: str, uid: str, phase: str = "Running") -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"pod-{name}", "resourceVersion": "1", "labels": {UID_LABEL: uid}},
            "spec": {"nodeName": "n1"}, "status": {"phase": phase}}


def test_observe_snapshots_the_jobs_children_so_a_thread_can_reconcile_them() -> None:
    pods = Informer(None, "/pods", pod_info, index_label=UID_LABEL)  # type: ignore[arg-type]
    nodes = Informer(None, "/nodes", node_info)  # type: ignore[arg-type]
    for obj in (_pod("a", "job-1"), _pod("b", "job-1"), _pod("c", "job-2")):
        pods.upsert(obj, notify=False)
    nodes.upsert({"metadata": {"name": "n1", "resourceVersion": "1"}}, notify=False)

    observed = driver_for("BroadcastJob").observe(WatchSet(children=pods, nodes=nodes), "job-1")
    pods.upsert({**_pod("a", "job-1", "Succeeded"), "metadata": {**_pod("a", "job-1")["metadata"],
                                                                   "resourceVersion": "2"}}, notify=False)

    assert sorted((p.name, p.phase) for p in observed.pods) == [("a", "Running"), ("b", "Running")]
    assert [n.name for n in observed.nodes] == ["n1"]
    tf_observed = driver_for("TFJob").observe(WatchSet(children=pods), "job-2")
    assert [p.name for p in tf_observed.pods] == ["c"]
    assert (list(tf_observed.services), list(tf_observed.pod_groups), dict(tf_observed.priorities)) == ([], [], {})


def test_record_view_reads_identity_manifest_status_and_flags_once() -> None:
    raw = new_record("TFJob", "mnist", "ml", {"kind": "TFJob", "spec": {"x": 1}}, {"startTime": "t"},
                     {"airflow-broadcast.io/submitted-by": "d/t/r/-1"})
    raw["metadata"].update(uid="u-1", deletionTimestamp="2026-01-01T00:00:00Z")
    record = record_view(raw)
    assert (record.name, record.namespace, record.uid, record.job_name) == ("tfjob-mnist", "ml", "u-1", "mnist")
    assert record.manifest == {"kind": "TFJob", "spec": {"x": 1}} and record.status == {"startTime": "t"}
    assert record.annotations == {"airflow-broadcast.io/submitted-by": "d/t/r/-1"} and record.deleting
    assert record.owner_reference == {"apiVersion": "v1", "kind": "ConfigMap", "name": "tfjob-mnist", "uid": "u-1",
                                      "controller": True, "blockOwnerDeletion": True}
    assert record.raw is raw and json.loads(raw["data"]["status"]) == record.status
