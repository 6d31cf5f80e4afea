"""Section E: pod lifecycle, restarts and scaling (tfjob.md §2.7)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from support.tf_builders import NOW, TFCluster, make_pod, make_record, make_service, make_spec

from airflow_broadcast.reconcilers.observed import ContainerExit, ContainerWaiting
from airflow_broadcast.reconcilers.plan import JobEvent
from airflow_broadcast.reconcilers.tf_job.kind import TFJobKind
from airflow_broadcast.reconcilers.tf_job.reconciler import TFJobOptions, reconcile_tf_job
from airflow_broadcast.reconcilers.tf_job.status import find_condition


def running_cluster(replicas: dict[str, int], policy: str = "Never", options: TFJobOptions | None = None,
                    **spec_fields: Any) -> TFCluster:
    cluster = TFCluster(make_spec(replicas=replicas, restart_policy=policy, **spec_fields), options=options)
    cluster.step()
    cluster.set_phase("Running")
    cluster.step(NOW + 1)
    return cluster


def test_E1_missing_index_gets_a_pod_and_a_service() -> None:
    cluster = running_cluster({"Worker": 3})
    del cluster.pods["mnist-worker-1"]
    del cluster.services["mnist-worker-1"]
    plan = cluster.step(NOW + 2)
    assert [p["metadata"]["name"] for p in plan.create_pods] == ["mnist-worker-1"]
    assert [s["metadata"]["name"] for s in plan.create_services] == ["mnist-worker-1"]


def test_E2_indexes_past_replicas_are_deleted() -> None:
    cluster = running_cluster({"Worker": 3})
    cluster.replace_spec(make_spec(replicas={"Worker": 1}))
    plan = cluster.step(NOW + 2)
    assert [(d.kind, d.name, d.reason) for d in plan.deletes] == [
        ("Pod", "mnist-worker-1", "scale down"), ("Pod", "mnist-worker-2", "scale down"),
        ("Service", "mnist-worker-1", "scale down"), ("Service", "mnist-worker-2", "scale down")]
    assert all(d.uid for d in plan.deletes)
    assert plan.create_pods == ()
    assert sorted(cluster.pods) == ["mnist-worker-0"]


def test_E2_terminating_pods_past_replicas_do_not_fail_the_job() -> None:
    cluster = running_cluster({"Worker": 3})
    cluster.replace_spec(make_spec(replicas={"Worker": 1}))
    cluster.set_pod("mnist-worker-2", deleting=True)
    plan = cluster.reconcile(NOW + 2)
    assert plan.status is not None
    assert plan.status["replicaStatuses"]["Worker"] == {"active": 2}
    assert not plan.finished


def test_E3_raising_replicas_creates_the_new_indexes() -> None:
    cluster = running_cluster({"Worker": 2})
    cluster.replace_spec(make_spec(replicas={"Worker": 4}))
    plan = cluster.step(NOW + 2)
    assert [p["metadata"]["name"] for p in plan.create_pods] == ["mnist-worker-2", "mnist-worker-3"]
    assert [s["metadata"]["name"] for s in plan.create_services] == ["mnist-worker-2", "mnist-worker-3"]


def test_E4_duplicate_pods_for_one_index_are_left_alone_with_a_warning() -> None:
    spec = make_spec(replicas={"Worker": 2})
    pods = [make_pod("mnist", "Worker", 0), make_pod("mnist", "Worker", 0, name="mnist-worker-0-copy"),
            make_pod("mnist", "Worker", 1)]
    plan = reconcile_tf_job(spec, make_record(spec), pods, [], NOW)
    assert plan.create_pods == () and plan.deletes == ()
    assert plan.status is not None
    assert plan.status["replicaStatuses"]["Worker"] == {"active": 1}
    assert set(plan.status["podWarnings"]) == {"mnist-worker-0", "mnist-worker-0-copy"}
    assert [e.reason for e in plan.events if e.type == "Warning"] == ["DuplicatePods", "DuplicatePods"]


@pytest.mark.parametrize("label", ["abc", "-1", "", "1.5", "\u00b2"])
def test_E5_pods_without_a_usable_index_are_ignored(label: str) -> None:
    spec = make_spec(replicas={"Worker": 1})
    odd = make_pod("mnist", "Worker", label, name="mnist-odd")
    plan = reconcile_tf_job(spec, make_record(spec), [odd], [], NOW)
    assert [p["metadata"]["name"] for p in plan.create_pods] == ["mnist-worker-0"]
    assert plan.deletes == ()


@pytest.mark.parametrize("policy", ["OnFailure", "Always"])
def test_E6_failed_pod_of_a_restartable_replica_is_deleted_and_recreated(policy: str) -> None:
    cluster = running_cluster({"Worker": 2}, policy)
    cluster.set_pod("mnist-worker-1", "Failed")
    plan = cluster.step(NOW + 2)
    assert [d.name for d in plan.deletes] == ["mnist-worker-1"]
    message = "job mnist is restarting because Worker replica(s) failed."
    assert JobEvent("Warning", "TFJobRestarting", message) in plan.events
    restarting = find_condition(cluster.status, "Restarting")
    assert restarting is not None and restarting["status"] == "True" and restarting["message"] == message
    assert find_condition(cluster.status, "Failed") is None
    plan = cluster.step(NOW + 3)
    assert [p["metadata"]["name"] for p in plan.create_pods] == ["mnist-worker-1"]
    cluster.set_phase("Running")
    cluster.step(NOW + 4)
    assert cluster.status["conditions"][-1]["type"] == "Running"
    assert find_condition(cluster.status, "Restarting") is None


@pytest.mark.parametrize("code", [128, 130, 137, 138, 139, 143])
def test_E7_exit_code_policy_restarts_on_codes_from_128(code: int) -> None:
    cluster = running_cluster({"Worker": 2}, "ExitCode")
    cluster.set_pod("mnist-worker-0", "Failed", exit_code=code)
    plan = cluster.step(NOW + 2)
    assert [d.name for d in plan.deletes] == ["mnist-worker-0"]
    assert cluster.status["conditions"][-1]["type"] == "Restarting"
    assert not plan.finished


@pytest.mark.parametrize("code", [1, 2, 127])
def test_E8_exit_code_policy_fails_the_job_on_codes_below_128(code: int) -> None:
    cluster = running_cluster({"Worker": 2}, "ExitCode")
    cluster.set_pod("mnist-worker-1", "Failed", exit_code=code, exit_reason="Error")
    plan = cluster.step(NOW + 2)
    failed = find_condition(cluster.status, "Failed")
    assert failed is not None and failed["status"] == "True" and failed["reason"] == "TFJobFailed"
    assert failed["message"] == 'job "mnist" is failing because "Worker" replica(s) failed.'
    assert plan.finished and cluster.status["completionTime"]
    assert cluster.status["failure"] == {"replicaType": "Worker", "index": 1, "pod": "mnist-worker-1",
                                         "exitCode": code, "reason": "Error", "message": failed["message"]}


def test_E8_an_exit_code_failure_records_both_failed_events_as_upstream_does() -> None:
    """Upstream's pod pass records `is failing`, then its status update `has failed` (the condition keeps the first)."""
    cluster = running_cluster({"Worker": 2}, "ExitCode")
    cluster.set_pod("mnist-worker-1", "Failed", exit_code=1, exit_reason="Error")
    plan = cluster.step(NOW + 2)
    assert [(e.reason, e.message) for e in plan.events if e.reason == "TFJobFailed"] == [
        ("TFJobFailed", 'job "mnist" is failing because "Worker" replica(s) failed.'),
        ("TFJobFailed", f"TFJob {cluster.spec.namespace}/mnist has failed because 1 Worker replica(s) failed.")]
    failed = find_condition(cluster.status, "Failed")
    assert failed is not None and failed["message"] == 'job "mnist" is failing because "Worker" replica(s) failed.'


def test_E9_exit_code_failure_without_a_terminated_state_is_retried() -> None:
    cluster = running_cluster({"Worker": 2}, "ExitCode")
    cluster.set_pod("mnist-worker-0", "Failed", waiting_reason="Evicted")
    plan = cluster.step(NOW + 2)
    assert [d.name for d in plan.deletes] == ["mnist-worker-0"]
    assert cluster.status["conditions"][-1]["type"] == "Restarting"


def test_E10_never_policy_failed_pod_is_not_restarted() -> None:
    cluster = running_cluster({"Worker": 2}, "Never")
    cluster.set_pod("mnist-worker-1", "Failed", exit_code=1)
    plan = cluster.step(NOW + 2)
    assert plan.deletes == () and plan.create_pods == ()
    assert plan.finished and find_condition(cluster.status, "Failed") is not None


def test_E11_exited_with_code_event_for_terminated_tensorflow_containers() -> None:
    cluster = running_cluster({"Worker": 2}, "ExitCode")
    cluster.set_pod("mnist-worker-1", "Failed", exit_code=137)
    plan = cluster.step(NOW + 2)
    assert JobEvent("Normal", "ExitedWithCode", "Pod: kubeflow.mnist-worker-1 exited with code 137") in plan.events


def test_E11_exited_with_code_is_recorded_once_for_a_succeeded_pod() -> None:
    cluster = running_cluster({"Worker": 2}, successPolicy="AllWorkers")
    cluster.set_pod("mnist-worker-1", "Succeeded", exit_code=0)
    first = cluster.step(NOW + 2)
    again = cluster.step(NOW + 3)
    assert JobEvent("Normal", "ExitedWithCode", "Pod: kubeflow.mnist-worker-1 exited with code 0") in first.events
    assert again.events == ()


def test_E12_replica_status_counts() -> None:
    spec = make_spec(replicas={"Worker": 6}, successPolicy="AllWorkers")
    pods = [make_pod("mnist", "Worker", 0, "Running"), make_pod("mnist", "Worker", 1, "Succeeded", exit_code=0),
            make_pod("mnist", "Worker", 2, "Failed", exit_code=1), make_pod("mnist", "Worker", 3, "Pending"),
            make_pod("mnist", "Worker", 4, "Running", deleting=True), make_pod("mnist", "Worker", 5, "Unknown")]
    plan = reconcile_tf_job(spec, make_record(spec, {"replicaStatuses": {"Worker": {}}}), pods, [], NOW,
                            TFJobOptions(compat_succeeded_then_failed=True))
    assert plan.status is not None
    assert plan.status["replicaStatuses"]["Worker"] == {"active": 1, "succeeded": 1, "failed": 2}


def test_E13_succeeded_index_is_never_recreated() -> None:
    spec = make_spec(replicas={"Worker": 2}, successPolicy="AllWorkers")
    cluster = TFCluster(spec)
    cluster.step()
    cluster.set_phase("Running")
    cluster.set_pod("mnist-worker-1", "Succeeded", exit_code=0)
    cluster.step(NOW + 1)
    assert cluster.status["succeededIndexes"] == {"Worker": [1]}
    del cluster.pods["mnist-worker-1"]
    plan = cluster.step(NOW + 2)
    assert plan.create_pods == ()
    assert cluster.status["replicaStatuses"]["Worker"] == {"active": 1, "succeeded": 1}


def test_E13_compat_flag_recreates_a_vanished_succeeded_pod() -> None:
    spec = make_spec(replicas={"Worker": 2}, successPolicy="AllWorkers")
    cluster = TFCluster(spec, options=TFJobOptions(compat_recreate_succeeded=True))
    cluster.step()
    cluster.set_phase("Running")
    cluster.set_pod("mnist-worker-1", "Succeeded", exit_code=0)
    cluster.step(NOW + 1)
    assert "succeededIndexes" not in cluster.status
    del cluster.pods["mnist-worker-1"]
    assert [p["metadata"]["name"] for p in cluster.step(NOW + 2).create_pods] == ["mnist-worker-1"]


def test_E14_abnormal_active_pods_produce_one_warning_each() -> None:
    """Upstream's reasons and words: the terminated or waiting container by name, else the latest condition."""
    spec = make_spec(replicas={"Worker": 3})
    crashed = make_pod("mnist", "Worker", 0, "Running",
                       exits=(ContainerExit("sidecar", 2, "Error", "boom"),))
    pulling = replace(make_pod("mnist", "Worker", 1, "Pending", waiting_reason="ImagePullBackOff"),
                      waiting=ContainerWaiting("tensorflow", "ImagePullBackOff", 'Back-off pulling image "tf:nope"'))
    unschedulable = replace(make_pod("mnist", "Worker", 2, "Pending", pending_message="Unschedulable: 0/3 nodes"),
                            condition_warning=("Unschedulable", "0/3 nodes are available"))
    services = [make_service("mnist", "Worker", i) for i in range(3)]
    record = make_record(spec)
    plan = reconcile_tf_job(spec, record, [crashed, pulling, unschedulable], services, NOW)
    warnings = [e for e in plan.events if e.type == "Warning"]
    assert warnings == [
        JobEvent("Warning", "Error", "Error pod mnist-worker-0 container sidecar exitCode: 2 terminated message: boom"),
        JobEvent("Warning", "ImagePullBackOff", 'Error pod mnist-worker-1 container tensorflow waiting message: '
                                                'Back-off pulling image "tf:nope"'),
        JobEvent("Warning", "Unschedulable", "Error pod mnist-worker-2 condition message: 0/3 nodes are available"),
    ]
    assert plan.status is not None and len(plan.status["podWarnings"]) == 3
    again = reconcile_tf_job(spec, make_record(spec, plan.status), [crashed, pulling, unschedulable], services,
                             NOW + 30)
    assert again.events == () and again.status is None


def test_E14_a_waiting_container_without_a_message_is_not_abnormal() -> None:
    """ContainerCreating and the like carry no message, so upstream records nothing for them."""
    spec = make_spec(replicas={"Worker": 1})
    creating = make_pod("mnist", "Worker", 0, "Pending", waiting_reason="ContainerCreating")
    plan = reconcile_tf_job(spec, make_record(spec), [creating], [make_service("mnist", "Worker", 0)], NOW)
    assert [e for e in plan.events if e.type == "Warning"] == []


def test_E14_stuck_terminating_pod_is_surfaced() -> None:
    cluster = running_cluster({"Worker": 2}, "OnFailure")
    cluster.set_pod("mnist-worker-1", deleting=True)
    plan = cluster.step(NOW + 2)
    assert "mnist-worker-1" in cluster.status["podWarnings"]
    assert any(e.reason == "PodTerminating" for e in plan.events)
    assert cluster.status["conditions"][-1]["type"] == "Restarting"
    assert not plan.finished
    assert cluster.step(NOW + 60).events == ()


def test_N10_a_replica_that_failed_in_an_init_container_names_that_container_in_the_failure() -> None:
    cluster = running_cluster({"Worker": 2}, "Never")
    pod = cluster.pods["mnist-worker-1"]
    cluster.pods["mnist-worker-1"] = replace(pod, phase="Failed", exits=(), waiting_reason="PodInitializing",
                                             init_exits=(ContainerExit("fetch-data", 3, "Error", "no data"),))
    cluster.step(NOW + 2)
    assert cluster.status["failure"] == {"replicaType": "Worker", "index": 1, "pod": "mnist-worker-1",
                                         "exitCode": 3, "reason": "Init:Error", "message": "no data",
                                         "container": "fetch-data"}
    summary = TFJobKind().summary(cluster.record)
    assert TFJobKind().failed_in_other_containers(summary) == {"mnist-worker-1": "fetch-data"}
