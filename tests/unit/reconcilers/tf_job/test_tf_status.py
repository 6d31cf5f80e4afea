"""Section F: conditions and the success/failure rules (tfjob.md §2.8.1, §2.8.2)."""

from __future__ import annotations

from typing import Any

import pytest
from support.tf_builders import NOW, TFCluster, condition_summary, make_pod, make_record, make_spec

from airflow_broadcast.reconcilers.plan import JobEvent
from airflow_broadcast.reconcilers.tf_job.reconciler import TFJobOptions, reconcile_tf_job
from airflow_broadcast.reconcilers.tf_job.status import find_condition, set_condition
from airflow_broadcast.specs.timestamps import to_rfc3339


def started(replicas: dict[str, int], policy: str = "Never", options: TFJobOptions | None = None,
            **spec_fields: Any) -> TFCluster:
    cluster = TFCluster(make_spec(replicas=replicas, restart_policy=policy, **spec_fields), options=options)
    cluster.step()
    cluster.set_phase("Running")
    cluster.step(NOW + 1)
    return cluster


def cond(cluster: TFCluster, kind: str) -> dict[str, Any]:
    found = find_condition(cluster.status, kind)
    assert found is not None, f"no {kind} condition in {cluster.status.get('conditions')}"
    return dict(found)


def test_F1_created_condition_on_first_sight() -> None:
    cluster = TFCluster(make_spec())
    plan = cluster.step()
    assert cond(cluster, "Created") == {
        "type": "Created", "status": "True", "reason": "TFJobCreated", "message": "TFJob mnist is created.",
        "lastUpdateTime": to_rfc3339(NOW), "lastTransitionTime": to_rfc3339(NOW)}
    assert plan.status is not None


def test_F2_start_time_is_set_on_the_first_pass() -> None:
    cluster = TFCluster(make_spec())
    cluster.step()
    assert cluster.status["startTime"] == to_rfc3339(NOW)
    cluster.step(NOW + 50)
    assert cluster.status["startTime"] == to_rfc3339(NOW)


def test_F3_running_follows_the_chief() -> None:
    cluster = TFCluster(make_spec(replicas={"Chief": 1, "Worker": 2}))
    cluster.step()
    cluster.set_phase("Running", "Worker")
    cluster.step(NOW + 1)
    assert find_condition(cluster.status, "Running") is None
    cluster.set_phase("Running", "Chief")
    cluster.step(NOW + 2)
    assert cond(cluster, "Running")["message"] == "TFJob kubeflow/mnist is running."
    assert cond(cluster, "Running")["reason"] == "TFJobRunning"


def test_F4_chief_success_completes_the_job() -> None:
    cluster = started({"Chief": 1, "Worker": 2})
    cluster.set_phase("Succeeded", "Chief")
    plan = cluster.step(NOW + 2)
    message = "TFJob kubeflow/mnist successfully completed."
    assert cond(cluster, "Succeeded")["message"] == message
    assert cluster.status["completionTime"] == to_rfc3339(NOW + 2)
    assert JobEvent("Normal", "TFJobSucceeded", message) in plan.events
    assert plan.finished


def test_F5_workers_done_but_chief_running_is_still_running() -> None:
    cluster = started({"Chief": 1, "Worker": 2})
    cluster.set_phase("Succeeded", "Worker")
    plan = cluster.step(NOW + 2)
    assert not plan.finished
    assert cluster.status["conditions"][-1]["type"] == "Running"


def test_F6_without_chief_a_running_worker_means_running() -> None:
    cluster = TFCluster(make_spec(replicas={"PS": 1, "Worker": 2}))
    cluster.step()
    cluster.set_phase("Running", "PS")
    cluster.step(NOW + 1)
    assert find_condition(cluster.status, "Running") is None
    cluster.set_pod("mnist-worker-1", "Running")
    cluster.step(NOW + 2)
    assert cond(cluster, "Running")["status"] == "True"


def test_F7_worker0_success_completes_job_without_chief() -> None:
    cluster = started({"PS": 1, "Worker": 3})
    cluster.set_pod("mnist-worker-0", "Succeeded", exit_code=0)
    plan = cluster.step(NOW + 2)
    assert plan.finished and cond(cluster, "Succeeded")["status"] == "True"


def test_F7_worker0_needs_a_zero_tensorflow_exit_code() -> None:
    cluster = started({"Worker": 3})
    cluster.set_pod("mnist-worker-0", "Succeeded")
    assert not cluster.step(NOW + 2).finished


def test_F8_all_workers_succeeded_completes_the_job() -> None:
    cluster = started({"Worker": 3})
    cluster.set_phase("Succeeded", "Worker", exit_code=0)
    cluster.set_pod("mnist-worker-0", "Succeeded", exits=())
    assert cluster.step(NOW + 2).finished


def test_F9_all_workers_policy_waits_for_every_worker() -> None:
    cluster = started({"Worker": 4}, successPolicy="AllWorkers")
    cluster.set_pod("mnist-worker-0", "Succeeded", exit_code=0)
    assert not cluster.step(NOW + 2).finished
    assert cluster.status["conditions"][-1]["type"] == "Running"
    cluster.set_phase("Succeeded")
    assert cluster.step(NOW + 3).finished


@pytest.mark.parametrize("kind", ["PS", "Worker", "Chief", "Evaluator"])
def test_F10_a_failed_never_replica_fails_the_job(kind: str) -> None:
    cluster = started({"Chief": 1, "Evaluator": 1, "PS": 2, "Worker": 2})
    cluster.set_pod(f"mnist-{kind.lower()}-0", "Failed", exit_code=1, exit_reason="OOMKilled")
    plan = cluster.step(NOW + 2)
    message = f"TFJob kubeflow/mnist has failed because 1 {kind} replica(s) failed."
    assert cond(cluster, "Failed") | {"lastUpdateTime": "", "lastTransitionTime": ""} == {
        "type": "Failed", "status": "True", "reason": "TFJobFailed", "message": message,
        "lastUpdateTime": "", "lastTransitionTime": ""}
    assert cluster.status["completionTime"] == to_rfc3339(NOW + 2)
    assert cluster.status["failure"] == {"replicaType": kind, "index": 0, "pod": f"mnist-{kind.lower()}-0",
                                         "exitCode": 1, "reason": "OOMKilled", "message": message}
    assert JobEvent("Normal", "TFJobFailed", message) in plan.events


def test_F10_evicted_pod_reports_the_pod_reason() -> None:
    cluster = started({"Worker": 2})
    cluster.set_pod("mnist-worker-1", "Failed", waiting_reason="Evicted", pending_message="low on memory")
    cluster.step(NOW + 2)
    assert cluster.status["failure"]["reason"] == "Evicted"
    assert cluster.status["failure"]["message"] == "low on memory"
    assert cluster.status["failure"]["exitCode"] is None


def test_F11_ps_failure_while_chief_runs_fails_the_job() -> None:
    cluster = started({"Chief": 1, "PS": 1, "Worker": 1})
    cluster.set_pod("mnist-ps-0", "Failed", exit_code=1)
    assert cluster.step(NOW + 2).finished
    assert condition_summary(cluster.status) == [("Created", "True"), ("Running", "False"), ("Failed", "True")]


def test_F12_chief_failure_with_workers_succeeded_fails_the_job() -> None:
    cluster = started({"Chief": 1, "Worker": 2})
    cluster.set_phase("Succeeded", "Worker")
    cluster.set_pod("mnist-chief-0", "Failed", exit_code=2)
    cluster.step(NOW + 2)
    assert cond(cluster, "Failed")["message"] == "TFJob kubeflow/mnist has failed because 1 Chief replica(s) failed."


def test_F13_dynamic_workers_may_fail_but_ps_may_not() -> None:
    cluster = started({"PS": 1, "Worker": 3}, enableDynamicWorker=True)
    cluster.set_pod("mnist-worker-2", "Failed", exit_code=1)
    assert not cluster.step(NOW + 2).finished
    cluster.set_pod("mnist-ps-0", "Failed", exit_code=1)
    cluster.step(NOW + 3)
    assert cond(cluster, "Failed")["message"].endswith("because 1 PS replica(s) failed.")


def test_F14_existing_restarting_masks_restartable_failures() -> None:
    spec = make_spec(replicas={"Worker": 2}, restart_policy="OnFailure")
    status = {"conditions": [], "startTime": to_rfc3339(NOW)}
    set_condition(status, "Restarting", "True", "TFJobRestarting", "job mnist is restarting because Worker "
                  "replica(s) failed.", NOW)
    pods = [make_pod("mnist", "Worker", 0), make_pod("mnist", "Worker", 1, "Failed", deleting=True,
                                                     restart_policy="OnFailure")]
    plan = reconcile_tf_job(spec, make_record(spec, status), pods, [], NOW + 1)
    assert plan.status is not None and not plan.finished
    assert condition_summary(plan.status)[-1] == ("Restarting", "True")


def test_F14_restarting_does_not_mask_a_never_replica_failure() -> None:
    spec = make_spec(replicas={"PS": {"replicas": 1, "restartPolicy": "Never", "template": {
        "spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}, "Worker": 2}, restart_policy="OnFailure")
    status: dict[str, Any] = {"startTime": to_rfc3339(NOW)}
    set_condition(status, "Restarting", "True", "TFJobRestarting", "m", NOW)
    pods = [make_pod("mnist", "Worker", 0), make_pod("mnist", "Worker", 1), make_pod("mnist", "PS", 0, "Failed")]
    assert reconcile_tf_job(spec, make_record(spec, status), pods, [], NOW + 1).finished


def test_F15_running_is_flipped_to_false_on_completion() -> None:
    cluster = started({"Worker": 1})
    cluster.set_phase("Succeeded")
    cluster.step(NOW + 2)
    running = cond(cluster, "Running")
    assert running["status"] == "False" and running["reason"] == "TFJobRunning"
    assert running["lastTransitionTime"] == to_rfc3339(NOW + 1)


def test_F16_condition_algebra() -> None:
    status: dict[str, Any] = {}
    assert set_condition(status, "Running", "True", "TFJobRunning", "a", 1.0e9)
    assert not set_condition(status, "Running", "True", "TFJobRunning", "new message", 1.0e9 + 5)
    assert status["conditions"][0]["message"] == "a"
    assert set_condition(status, "Restarting", "True", "TFJobRestarting", "r", 1.0e9 + 10)
    assert [c["type"] for c in status["conditions"]] == ["Restarting"]
    assert set_condition(status, "Running", "True", "TFJobRunning", "a", 1.0e9 + 20)
    assert [c["type"] for c in status["conditions"]] == ["Running"]
    set_condition(status, "Suspended", "True", "TFJobSuspended", "s", 1.0e9 + 30)
    assert set_condition(status, "Running", "True", "OtherReason", "b", 1.0e9 + 40)
    running = status["conditions"][-1]
    assert running["reason"] == "OtherReason" and running["lastTransitionTime"] == to_rfc3339(1.0e9 + 20)
    assert running["lastUpdateTime"] == to_rfc3339(1.0e9 + 40)
    assert [c["type"] for c in status["conditions"]] == ["Suspended", "Running"]


def test_F17_failed_is_terminal() -> None:
    status: dict[str, Any] = {}
    set_condition(status, "Failed", "True", "TFJobFailed", "x", 1.0e9)
    assert not set_condition(status, "Running", "True", "TFJobRunning", "y", 1.0e9 + 1)
    assert not set_condition(status, "Succeeded", "True", "TFJobSucceeded", "y", 1.0e9 + 1)
    assert [c["type"] for c in status["conditions"]] == ["Failed"]


def test_F18_succeeded_is_terminal_unless_compat() -> None:
    pods = [make_pod("mnist", "Chief", 0, "Succeeded", exit_code=0), make_pod("mnist", "PS", 0, "Failed")]
    spec = make_spec(replicas={"Chief": 1, "PS": 1})
    plan = reconcile_tf_job(spec, make_record(spec), pods, [], NOW)
    assert plan.status is not None
    assert condition_summary(plan.status) == [("Created", "True"), ("Succeeded", "True")]
    compat = reconcile_tf_job(spec, make_record(spec), pods, [], NOW, TFJobOptions(compat_succeeded_then_failed=True))
    assert compat.status is not None
    assert condition_summary(compat.status) == [("Created", "True"), ("Succeeded", "True"), ("Failed", "True")]


def test_F19_active_counts_move_to_succeeded_once_finished() -> None:
    cluster = started({"PS": 1, "Worker": 3})
    cluster.set_pod("mnist-worker-0", "Succeeded", exit_code=0)
    plan = cluster.step(NOW + 2)
    assert plan.finished and plan.deletes == ()
    assert cluster.status["replicaStatuses"] == {"PS": {"succeeded": 1}, "Worker": {"succeeded": 3}}
    assert cluster.step(NOW + 3).status is None
    assert len(cluster.pods) == 4


def test_F20_status_is_written_only_when_it_changes() -> None:
    cluster = started({"Worker": 2})
    assert cluster.reconcile(NOW + 2).status is None
    cluster.set_pod("mnist-worker-1", "Pending")
    assert cluster.reconcile(NOW + 3).status is not None


def test_F21_ps_only_and_evaluator_only_jobs_never_succeed() -> None:
    for replicas in ({"PS": 2}, {"Evaluator": 1}):
        cluster = started(replicas)
        cluster.set_phase("Succeeded")
        assert not cluster.step(NOW + 2).finished


def test_F22_condition_timelines() -> None:
    normal = started({"Worker": 1})
    normal.set_phase("Succeeded")
    normal.step(NOW + 2)
    assert condition_summary(normal.status) == [("Created", "True"), ("Running", "False"), ("Succeeded", "True")]
    suspended = TFCluster(make_spec(run_policy={"suspend": True}))
    suspended.step()
    assert condition_summary(suspended.status) == [("Created", "True"), ("Suspended", "True")]
    suspended.replace_spec(make_spec())
    suspended.step(NOW + 1)
    suspended.set_phase("Running")
    suspended.step(NOW + 2)
    assert condition_summary(suspended.status) == [("Created", "True"), ("Suspended", "False"), ("Running", "True")]


def test_F4_the_finishing_pass_creates_nothing_more() -> None:
    cluster = started({"Worker": 3}, run_policy={"cleanPodPolicy": "All"})
    cluster.set_pod("mnist-worker-0", "Succeeded", exit_code=0)
    del cluster.pods["mnist-worker-2"]
    del cluster.services["mnist-worker-2"]
    plan = cluster.step(NOW + 2)
    assert plan.finished and plan.create_pods == () and plan.create_services == ()
    assert not any(e.reason.startswith("SuccessfulCreate") for e in plan.events)
    assert cluster.pods == {} and cluster.services == {}
