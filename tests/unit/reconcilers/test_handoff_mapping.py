"""Hand-off mode, pure part: an upstream custom resource's status read through each kind's own summary and
failure rules, the signs of a controller acting, and the choice of controller."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_broadcast.reconcilers.broadcast_job.kind import BroadcastJobKind
from airflow_broadcast.reconcilers.handoff import (
    check_controller,
    check_probe_seconds,
    controller_acting,
    decide,
    foreign_manager,
    resource_view,
    settled_upstream,
)
from airflow_broadcast.reconcilers.tf_job.kind import TFJobKind

META = {"name": "job", "namespace": "ns", "uid": "u-1", "annotations": {"a": "b"}}


def resource(kind: str, status: dict[str, Any], spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "x/v1", "kind": kind, "metadata": META, "spec": spec or {}, "status": status}


def kruise_status(phase: str, succeeded: int, failed: int, condition: str) -> dict[str, Any]:
    return {"phase": phase, "desired": 2, "active": 0, "succeeded": succeeded, "failed": failed,
            "startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:01:00Z",
            "conditions": [{"type": condition, "status": "True", "message": "done"}]}


def test_resource_view_presents_the_custom_resource_as_a_record() -> None:
    view = resource_view(resource("TFJob", {"conditions": []}, {"runPolicy": {}}))

    assert (view.name, view.job_name, view.namespace, view.uid) == ("job", "job", "ns", "u-1")
    assert view.manifest["spec"] == {"runPolicy": {}} and "status" not in view.manifest
    assert view.annotations == {"a": "b"} and not view.deleting


def test_a_completed_kruise_job_maps_to_the_broadcast_job_summary() -> None:
    kind = BroadcastJobKind()
    summary = kind.summary(resource_view(resource("BroadcastJob", kruise_status("completed", 2, 0, "Complete"))))

    assert summary["record"] == "job" and summary["uid"] == "u-1"
    assert (summary["phase"], summary["desired"], summary["succeeded"], summary["failed"]) == ("completed", 2, 2, 0)
    assert summary["nodes"] == {} and summary["failedNodes"] == []  # Kruise keeps no per-node table
    assert kind.failure(summary) is None


def test_a_failed_kruise_job_fails_with_the_counts() -> None:
    kind = BroadcastJobKind()
    summary = kind.summary(resource_view(resource("BroadcastJob", kruise_status("failed", 1, 1, "Failed"))))

    assert kind.failure(summary) == "BroadcastJob ns/job failed: done (1 succeeded, 1 failed of 2 desired)."


def test_a_training_operator_status_maps_to_the_tfjob_summary_and_failure() -> None:
    kind = TFJobKind()
    status = {"conditions": [{"type": "Created", "status": "True"}, {"type": "Failed", "status": "True",
                                                                     "message": "TFJob ns/job has failed"}],
              "replicaStatuses": {"Worker": {"failed": 1, "active": 1}}}
    summary = kind.summary(resource_view(resource("TFJob", status)))

    assert summary["phase"] == "Failed"
    assert summary["replicaStatuses"]["Worker"]["failed"] == 1
    assert kind.failure(summary) == "TFJob ns/job failed: TFJob ns/job has failed."


@pytest.mark.parametrize(("kind", "status", "acting"), [
    ("BroadcastJob", {}, False),
    ("BroadcastJob", {"phase": "running"}, True),
    ("BroadcastJob", {"desired": 3}, True),
    ("TFJob", {}, False),
    ("TFJob", {"replicaStatuses": {}}, False),
    ("TFJob", {"conditions": [{"type": "Created", "status": "True"}]}, True),
])
def test_a_controller_acts_once_it_wrote_the_status(kind: Any, status: dict[str, Any], acting: bool) -> None:
    assert controller_acting(kind, status) is acting


def test_a_kruise_never_job_settles_when_every_desired_pod_is_done() -> None:
    never = {"completionPolicy": {"type": "Never"}}
    running = {"phase": "running", "desired": 2, "succeeded": 1, "failed": 1, "active": 0}

    assert settled_upstream("BroadcastJob", resource_view(resource("BroadcastJob", running, never)))
    assert not settled_upstream("BroadcastJob", resource_view(resource("BroadcastJob", {**running, "active": 1},
                                                                        never)))
    assert not settled_upstream("BroadcastJob", resource_view(resource("BroadcastJob", running)))


def test_only_another_manager_named_by_managed_by_is_foreign() -> None:
    def tf(managed_by: str | None) -> dict[str, Any]:
        return {"spec": {"runPolicy": {"managedBy": managed_by} if managed_by else {}}}

    assert foreign_manager("TFJob", tf(None)) is None
    assert foreign_manager("TFJob", tf("kubeflow.org/training-operator")) is None
    assert foreign_manager("TFJob", tf("kueue.x-k8s.io/multikueue")) == "kueue.x-k8s.io/multikueue"
    assert foreign_manager("BroadcastJob", tf("kueue.x-k8s.io/multikueue")) is None


def test_explicit_modes_are_taken_as_asked() -> None:
    assert decide("airflow", "TFJob").controller == "airflow"
    assert decide("cluster", "TFJob", crd_served=False).controller == "cluster"


@pytest.mark.parametrize(("served", "acting", "manager", "expected", "said"), [
    (False, None, None, "airflow", "the TFJob CRD (kubeflow.org/v1) is not served"),
    (True, False, None, "airflow", "no controller wrote the TFJob resource's status in time"),
    (True, True, None, "cluster", "the TFJob CRD is served and its controller acts"),
    (False, None, "kueue.x-k8s.io/multikueue", "cluster", "runPolicy.managedBy names kueue.x-k8s.io/multikueue"),
])
def test_auto_hands_off_only_to_a_served_crd_whose_controller_acts(
        served: bool, acting: bool | None, manager: str | None, expected: str, said: str) -> None:
    decision = decide("auto", "TFJob", crd_served=served, acting=acting, manager=manager)

    assert decision.controller == expected
    assert said in decision.reason


def test_bad_modes_and_probe_times_are_refused() -> None:
    assert check_controller("auto") == "auto"
    with pytest.raises(ValueError, match="controller must be one of 'airflow', 'cluster', 'auto', not 'kruise'"):
        check_controller("kruise")
    with pytest.raises(ValueError, match="handoff_probe_seconds must be > 0"):
        check_probe_seconds(0)
