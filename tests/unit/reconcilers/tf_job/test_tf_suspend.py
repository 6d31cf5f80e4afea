"""Section K: suspend, resume, managedBy and the Kueue queue label (tfjob.md §2.2, §2.8.7)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from support.tf_builders import NOW, TFCluster, condition_summary, env_value, make_spec

from airflow_broadcast.reconcilers.plan import JobEvent, Plan
from airflow_broadcast.reconcilers.tf_job.status import find_condition
from airflow_broadcast.specs.tf_job import parse_tf_job, to_manifest
from airflow_broadcast.specs.tf_job.spec import QUEUE_NAME_LABEL
from airflow_broadcast.specs.timestamps import to_rfc3339

REPLICAS = {"PS": 1, "Worker": 2}


def spec_with(**run_policy: Any) -> Any:
    return make_spec(replicas=REPLICAS, run_policy=run_policy, restart_policy="OnFailure")


def running(**run_policy: Any) -> TFCluster:
    cluster = TFCluster(spec_with(**run_policy))
    cluster.step()
    cluster.set_phase("Running")
    cluster.step(NOW + 1)
    return cluster


def test_K1_job_created_suspended_has_no_children_and_no_start_time() -> None:
    cluster = TFCluster(spec_with(suspend=True))
    plan = cluster.step()
    assert plan.create_pods == () and plan.create_services == ()
    assert "startTime" not in cluster.status
    suspended = find_condition(cluster.status, "Suspended")
    assert suspended is not None
    assert (suspended["status"], suspended["reason"], suspended["message"]) == (
        "True", "TFJobSuspended", "TFJob mnist is suspended.")
    assert condition_summary(cluster.status) == [("Created", "True"), ("Suspended", "True")]
    assert cluster.step(NOW + 5).status is None


def test_K2_suspending_a_running_job_deletes_children_and_keeps_start_time() -> None:
    cluster = running()
    cluster.replace_spec(spec_with(suspend=True))
    plan = cluster.step(NOW + 2)
    assert cluster.pods == {} and cluster.services == {}
    assert len(plan.deletes) == 6
    assert cluster.status["startTime"] == to_rfc3339(NOW)
    assert all("active" not in entry for entry in cluster.status["replicaStatuses"].values())
    running_condition = find_condition(cluster.status, "Running")
    assert running_condition is not None
    assert (running_condition["status"], running_condition["reason"]) == ("False", "TFJobSuspended")
    assert condition_summary(cluster.status)[-1] == ("Suspended", "True")
    assert JobEvent("Normal", "TFJobSuspended", "TFJob mnist is suspended.") in plan.events
    assert not any(e.reason == "TFJobSuspended" for e in cluster.step(NOW + 3).events)


def test_K3_resuming_resets_start_time_and_recreates_children() -> None:
    cluster = running()
    cluster.replace_spec(spec_with(suspend=True))
    cluster.step(NOW + 2)
    cluster.replace_spec(spec_with())
    plan = cluster.step(NOW + 100)
    resumed = find_condition(cluster.status, "Suspended")
    assert resumed is not None
    assert (resumed["status"], resumed["reason"], resumed["message"]) == (
        "False", "TFJobResumed", "TFJob mnist is resumed.")
    assert cluster.status["startTime"] == to_rfc3339(NOW + 100)
    assert JobEvent("Normal", "TFJobResumed", "TFJob mnist is resumed.") in plan.events
    assert len(plan.create_pods) == 3 and len(plan.create_services) == 3
    assert all(env_value(p) for p in plan.create_pods)


def test_K3_terminating_leftovers_of_the_suspended_run_are_ignored() -> None:
    cluster = running()
    leftover = cluster.pods["mnist-worker-1"]
    cluster.replace_spec(spec_with(suspend=True))
    cluster.step(NOW + 2)
    cluster.pods["mnist-worker-1"] = replace(leftover, deleting=True)
    cluster.replace_spec(spec_with())
    plan = cluster.step(NOW + 100)
    assert [p["metadata"]["name"] for p in plan.create_pods] == ["mnist-ps-0", "mnist-worker-0"]
    assert not plan.finished and find_condition(cluster.status, "Restarting") is None


def test_K4_resumed_job_runs_again() -> None:
    cluster = TFCluster(spec_with(suspend=True))
    cluster.step()
    cluster.replace_spec(spec_with())
    cluster.step(NOW + 1)
    cluster.set_phase("Running")
    cluster.step(NOW + 2)
    assert condition_summary(cluster.status) == [("Created", "True"), ("Suspended", "False"), ("Running", "True")]


def test_K5_suspended_jobs_skip_deadline_and_backoff() -> None:
    cluster = running(activeDeadlineSeconds=10, backoffLimit=0)
    cluster.set_pod("mnist-worker-0", restarts=3)
    cluster.replace_spec(spec_with(activeDeadlineSeconds=10, backoffLimit=0, suspend=True))
    plan = cluster.step(NOW + 1000)
    assert not plan.finished and plan.requeue_after is None
    assert find_condition(cluster.status, "Failed") is None


def test_K6_job_managed_by_multikueue_is_never_touched() -> None:
    for suspend in (True, False):
        cluster = TFCluster(spec_with(managedBy="kueue.x-k8s.io/multikueue", suspend=suspend))
        assert cluster.step() == Plan()
        assert cluster.status == {}


def test_K7_job_managed_by_the_training_operator_value_is_reconciled() -> None:
    for run_policy in ({}, {"managedBy": "kubeflow.org/training-operator"}):
        cluster = TFCluster(spec_with(**run_policy))
        assert len(cluster.step().create_pods) == 3


def test_K8_queue_label_passes_through_to_the_job_metadata() -> None:
    job = to_manifest(spec_with(suspend=True))
    job["metadata"]["labels"] = {QUEUE_NAME_LABEL: "team-queue"}
    spec = parse_tf_job(job)
    assert spec.labels == {QUEUE_NAME_LABEL: "team-queue"}
    assert to_manifest(spec)["metadata"]["labels"] == {QUEUE_NAME_LABEL: "team-queue"}
