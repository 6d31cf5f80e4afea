"""Sections G-J: cleanPodPolicy, TTL, activeDeadlineSeconds and backoffLimit (tfjob.md §2.8.3-§2.8.6)."""

from __future__ import annotations

from typing import Any

import pytest
from support.tf_builders import NOW, TFCluster, make_pod, make_record, make_service, make_spec

from airflow_broadcast.reconcilers.expiry import EXPIRES_AT
from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.reconcilers.tf_job.reconciler import TFJobOptions, reconcile_tf_job
from airflow_broadcast.reconcilers.tf_job.status import find_condition
from airflow_broadcast.specs.timestamps import from_rfc3339, to_rfc3339

BACKOFF = "Job mnist has failed because it has reached the specified backoff limit"
DEADLINE = "Job mnist has failed because it was active longer than specified deadline"


def started(replicas: dict[str, int], policy: str = "Never", *, run_policy: dict[str, Any] | None = None,
            options: TFJobOptions | None = None, **spec_fields: Any) -> TFCluster:
    spec = make_spec(replicas=replicas, restart_policy=policy, run_policy=run_policy, **spec_fields)
    cluster = TFCluster(spec, options=options)
    cluster.step()
    cluster.set_phase("Running")
    cluster.step(NOW + 1)
    return cluster


def finishing_pass(policy: str) -> tuple[TFCluster, Plan]:
    """PS running, worker-1 pending, worker-2 failed (dynamic workers), then worker-0 succeeds."""
    cluster = started({"PS": 1, "Worker": 3}, run_policy={"cleanPodPolicy": policy}, enableDynamicWorker=True)
    cluster.set_pod("mnist-worker-1", "Pending")
    cluster.set_pod("mnist-worker-2", "Failed", exit_code=1)
    cluster.set_pod("mnist-worker-0", "Succeeded", exit_code=0)
    plan = cluster.reconcile(NOW + 2)
    assert plan.finished
    return cluster, plan


def test_G1_all_deletes_every_pod_and_service() -> None:
    cluster, plan = finishing_pass("All")
    assert sorted((d.kind, d.name) for d in plan.deletes) == sorted(
        [(k, f"mnist-{n}") for k in ("Pod", "Service") for n in ("ps-0", "worker-0", "worker-1", "worker-2")])
    cluster.apply(plan)
    assert cluster.pods == {} and cluster.services == {}


def test_G2_running_deletes_running_and_pending_pods_with_their_services() -> None:
    cluster, plan = finishing_pass("Running")
    assert sorted((d.kind, d.name) for d in plan.deletes) == [
        ("Pod", "mnist-ps-0"), ("Pod", "mnist-worker-1"), ("Service", "mnist-ps-0"), ("Service", "mnist-worker-1")]
    cluster.apply(plan)
    assert sorted(cluster.pods) == ["mnist-worker-0", "mnist-worker-2"]
    assert cluster.step(NOW + 3).deletes == ()


def test_G3_none_keeps_everything() -> None:
    cluster, plan = finishing_pass("None")
    assert plan.deletes == ()
    cluster.apply(plan)
    assert cluster.step(NOW + 3).deletes == ()
    assert len(cluster.pods) == 4


def test_G4_unknown_policy_behaves_like_all() -> None:
    spec = make_spec(replicas={"Worker": 2}, run_policy={"cleanPodPolicy": "Everything"}, strict=False)
    status = {"conditions": [{"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded", "message": "m",
                              "lastUpdateTime": to_rfc3339(NOW), "lastTransitionTime": to_rfc3339(NOW)}],
              "completionTime": to_rfc3339(NOW)}
    pods = [make_pod("mnist", "Worker", 0, "Succeeded"), make_pod("mnist", "Worker", 1, "Running")]
    plan = reconcile_tf_job(spec, make_record(spec, status), pods, [make_service("mnist", "Worker", 0)], NOW)
    assert sorted((d.kind, d.name) for d in plan.deletes) == [
        ("Pod", "mnist-worker-0"), ("Pod", "mnist-worker-1"), ("Service", "mnist-worker-0")]


def test_G5_cleanup_repeats_idempotently_and_skips_terminating_children() -> None:
    cluster, finishing = finishing_pass("All")
    cluster.apply(Plan(status=finishing.status))
    first = cluster.reconcile(NOW + 3)
    assert first.deletes == finishing.deletes and first.status is None
    assert cluster.reconcile(NOW + 3).deletes == first.deletes
    cluster.set_pod("mnist-ps-0", deleting=True)
    assert "mnist-ps-0" not in [d.name for d in cluster.reconcile(NOW + 4).deletes if d.kind == "Pod"]
    cluster.apply(first)
    again = cluster.step(NOW + 5)
    assert again.deletes == () and again.status is None


@pytest.mark.parametrize(("compat", "deleted"), [(False, set()), (True, {"mnist-worker-0", "mnist-worker-1"})])
def test_G6_backoff_failure_respects_clean_pod_policy(compat: bool, deleted: set[str]) -> None:
    cluster = started({"Worker": 2}, "OnFailure", run_policy={"backoffLimit": 1},
                      options=TFJobOptions(compat_cleanup_ignores_policy_on_failure=compat))
    cluster.set_pod("mnist-worker-0", restarts=1)
    plan = cluster.step(NOW + 2)
    assert cond_message(cluster, "Failed") == BACKOFF
    assert {d.name for d in plan.deletes if d.kind == "Pod"} == deleted


def cond_message(cluster: TFCluster, kind: str) -> str:
    found = find_condition(cluster.status, kind)
    assert found is not None
    return str(found["message"])


def test_G7_suspend_deletes_everything_regardless_of_policy() -> None:
    cluster = started({"PS": 1, "Worker": 2}, run_policy={"cleanPodPolicy": "None"})
    cluster.replace_spec(make_spec(replicas={"PS": 1, "Worker": 2},
                                   run_policy={"cleanPodPolicy": "None", "suspend": True}))
    plan = cluster.step(NOW + 2)
    assert len([d for d in plan.deletes if d.kind == "Pod"]) == 3
    assert len([d for d in plan.deletes if d.kind == "Service"]) == 3
    assert cluster.pods == {} and cluster.services == {}


def test_G8_the_pass_plans_the_deletes_and_leaves_their_events_to_the_executor() -> None:
    """`SuccessfulDeletePod` / `SuccessfulDeleteService` are recorded by the executor once a delete happened."""
    plan = finishing_pass("All")[1]
    assert {("Pod", "mnist-ps-0"), ("Service", "mnist-ps-0")} <= {(d.kind, d.name) for d in plan.deletes}
    assert not [e for e in plan.events if e.reason.startswith("SuccessfulDelete")]


def succeeded_cluster(ttl: int | None, **run_policy: Any) -> TFCluster:
    cluster = started({"Worker": 1}, run_policy={"ttlSecondsAfterFinished": ttl, **run_policy})
    cluster.set_phase("Succeeded")
    assert cluster.step(NOW + 10).finished
    return cluster


def expiry_of(cluster: TFCluster) -> float | None:
    return from_rfc3339(cluster.record.annotations.get(EXPIRES_AT))


def test_H1_without_ttl_the_job_never_expires() -> None:
    cluster = succeeded_cluster(None)
    plan = cluster.step(NOW + 10**7)
    assert expiry_of(cluster) is None
    assert not plan.changes_cluster and plan.requeue_after is None


def test_H2_the_finishing_pass_stamps_the_expiry_and_no_pass_deletes_the_job() -> None:
    """Deleting the record, and the `SuccessfulDeleteJob` event, are left to the task that reads the
    result and to the sweeper: a pass never plans them, before or after the expiry."""
    cluster = succeeded_cluster(60)
    assert expiry_of(cluster) == from_rfc3339(cluster.status["completionTime"]) + 60
    for later in (NOW + 69, NOW + 71, NOW + 10**6):
        plan = cluster.step(later)
        assert plan.finished and not plan.changes_cluster and plan.events == ()


def test_H3_the_expiry_is_an_instant_on_the_record_not_a_timer() -> None:
    cluster = succeeded_cluster(60)
    assert cluster.status["completionTime"] == to_rfc3339(NOW + 10)
    assert cluster.record.annotations[EXPIRES_AT] == to_rfc3339(NOW + 70)
    assert cluster.reconcile(NOW + 40.5).requeue_after is None


def test_H4_ttl_zero_expires_at_completion() -> None:
    cluster = started({"Worker": 1}, run_policy={"ttlSecondsAfterFinished": 0})
    cluster.set_phase("Succeeded")
    finishing = cluster.step(NOW + 10)
    assert finishing.finished and finishing.status is not None
    assert finishing.record_annotations == {EXPIRES_AT: finishing.status["completionTime"]}


def test_H5_missing_completion_time_is_backfilled_from_the_condition() -> None:
    spec = make_spec(run_policy={"ttlSecondsAfterFinished": 100})
    status = {"conditions": [{"type": "Failed", "status": "True", "reason": "TFJobFailed", "message": "m",
                              "lastUpdateTime": to_rfc3339(NOW), "lastTransitionTime": to_rfc3339(NOW)}]}
    plan = reconcile_tf_job(spec, make_record(spec, status), [], [], NOW + 30)
    assert plan.status is not None and plan.status["completionTime"] == to_rfc3339(NOW)
    assert plan.record_annotations == {EXPIRES_AT: to_rfc3339(NOW + 100)}


def test_H6_a_suspended_finished_job_does_not_expire() -> None:
    cluster = succeeded_cluster(5)
    assert expiry_of(cluster) is not None
    cluster.replace_spec(make_spec(replicas={"Worker": 1}, run_policy={"ttlSecondsAfterFinished": 5, "suspend": True}))
    plan = cluster.step(NOW + 1000)
    assert plan.record_annotations == {EXPIRES_AT: None} and expiry_of(cluster) is None
    assert plan.requeue_after is None and plan.events == ()


def test_I1_deadline_fails_the_job() -> None:
    cluster = started({"Worker": 2}, run_policy={"activeDeadlineSeconds": 100, "cleanPodPolicy": "Running"})
    assert not cluster.step(NOW + 99).finished
    plan = cluster.step(NOW + 100)
    assert plan.finished and cond_message(cluster, "Failed") == DEADLINE
    assert cluster.status["completionTime"] == to_rfc3339(NOW + 100)
    assert cluster.status["failure"]["reason"] == "DeadlineExceeded"


def test_I2_zero_deadline_fails_right_after_start_time_is_set() -> None:
    cluster = TFCluster(make_spec(run_policy={"activeDeadlineSeconds": 0}))
    first = cluster.step(NOW + 0.4)
    assert not first.finished and first.requeue_after == 0
    assert cluster.step(NOW + 0.5).finished


def test_I3_deadline_wakes_the_trigger_on_time() -> None:
    cluster = TFCluster(make_spec(run_policy={"activeDeadlineSeconds": 300}))
    assert cluster.step().requeue_after == 300
    cluster.set_phase("Running")
    assert cluster.step(NOW + 120).requeue_after == 180
    assert cluster.step(NOW + 300).finished


def test_I4_resume_restarts_the_deadline_clock() -> None:
    spec = make_spec(run_policy={"activeDeadlineSeconds": 100})
    cluster = started({"Worker": 1}, run_policy={"activeDeadlineSeconds": 100})
    cluster.replace_spec(make_spec(run_policy={"activeDeadlineSeconds": 100, "suspend": True}))
    cluster.step(NOW + 50)
    cluster.replace_spec(spec)
    plan = cluster.step(NOW + 500)
    assert not plan.finished and plan.requeue_after == 100
    assert cluster.status["startTime"] == to_rfc3339(NOW + 500)


def test_I5_deadline_failure_cleans_up_per_policy() -> None:
    cluster = started({"PS": 1, "Worker": 2}, run_policy={"activeDeadlineSeconds": 10, "cleanPodPolicy": "All"})
    plan = cluster.step(NOW + 20)
    assert plan.finished
    assert len(plan.deletes) == 6 and cluster.pods == {}


def test_J1_container_restarts_reach_the_backoff_limit() -> None:
    cluster = started({"Worker": 3}, "OnFailure", run_policy={"backoffLimit": 3})
    cluster.set_pod("mnist-worker-0", restarts=2)
    assert not cluster.step(NOW + 2).finished
    cluster.set_pod("mnist-worker-1", restarts=1)
    assert cluster.step(NOW + 3).finished
    assert cond_message(cluster, "Failed") == BACKOFF
    assert cluster.status["failure"]["pod"] == "mnist-worker-0"


def test_J2_zero_backoff_limit_fails_on_the_first_restart() -> None:
    cluster = started({"Worker": 2}, "OnFailure", run_policy={"backoffLimit": 0})
    cluster.set_pod("mnist-worker-1", restarts=1)
    assert cluster.step(NOW + 2).finished


def test_J3_never_replicas_are_not_counted() -> None:
    cluster = started({"Worker": 2}, "Never", run_policy={"backoffLimit": 1})
    cluster.set_pod("mnist-worker-1", restarts=5)
    assert not cluster.step(NOW + 2).finished


def test_J4_zero_limit_and_a_new_failed_pod_fails_the_job() -> None:
    cluster = started({"Worker": 2}, "OnFailure", run_policy={"backoffLimit": 0})
    cluster.set_pod("mnist-worker-1", "Failed")
    plan = cluster.step(NOW + 2)
    assert plan.finished and cond_message(cluster, "Failed") == BACKOFF


def test_J5_without_a_limit_restarts_are_unlimited() -> None:
    cluster = started({"Worker": 2}, "OnFailure")
    cluster.set_pod("mnist-worker-1", restarts=1000)
    assert not cluster.step(NOW + 2).finished


@pytest.mark.parametrize(("compat", "fails"), [(False, True), (True, False)])
def test_J6_exit_code_restarts_count_toward_the_limit(compat: bool, fails: bool) -> None:
    cluster = started({"Worker": 2}, "ExitCode", run_policy={"backoffLimit": 2},
                      options=TFJobOptions(compat_exitcode_ignores_backoff=compat))
    for attempt in range(2):
        cluster.set_pod("mnist-worker-1", "Failed", exit_code=137)
        cluster.step(NOW + 10 * attempt + 2)
        cluster.step(NOW + 10 * attempt + 3)
        cluster.set_phase("Running")
    assert cluster.status["controllerRestarts"] == {"Worker": 2}
    assert cluster.step(NOW + 50).finished is fails


def test_J6_a_stale_view_of_a_restarted_pod_is_counted_once() -> None:
    cluster = started({"Worker": 2}, "ExitCode", run_policy={"backoffLimit": 5})
    cluster.set_pod("mnist-worker-1", "Failed", exit_code=137)
    first = cluster.reconcile(NOW + 2)
    cluster.apply(Plan(status=first.status))
    second = cluster.reconcile(NOW + 3)
    assert [d.name for d in second.deletes] == ["mnist-worker-1"]
    assert second.status is None
    assert not any(e.reason == "TFJobRestarting" for e in second.events)


def test_J7_restart_sum_reaches_limit_and_all_policy_cleans_everything() -> None:
    replicas = {"PS": {"replicas": 2, "restartPolicy": "Never",
                       "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}},
                "Worker": {"replicas": 4, "restartPolicy": "OnFailure",
                           "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}}
    spec = make_spec(replicas=replicas, run_policy={"backoffLimit": 4, "cleanPodPolicy": "All"})
    cluster = TFCluster(spec)
    cluster.step()
    cluster.set_phase("Running")
    cluster.set_phase("Running", "Worker", restarts=1)
    plan = cluster.step(NOW + 1)
    assert plan.finished and cond_message(cluster, "Failed") == BACKOFF
    assert cluster.pods == {} and cluster.services == {}


def test_J1_backoff_failure_summary_names_the_most_restarted_pod() -> None:
    cluster = started({"Worker": 2}, "OnFailure", run_policy={"backoffLimit": 2})
    cluster.set_pod("mnist-worker-1", restarts=2)
    cluster.step(NOW + 2)
    assert cluster.status["failure"] == {"replicaType": "Worker", "index": 1, "pod": "mnist-worker-1",
                                         "exitCode": None, "reason": "BackoffLimitExceeded", "message": BACKOFF}
