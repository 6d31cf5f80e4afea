"""Section L: gang scheduling with Volcano or scheduler-plugins PodGroups (tfjob.md §2.8.8)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from support.tf_builders import NOW, UID, TFCluster, container, make_spec, replica

from airflow_broadcast.reconcilers.plan import JobEvent
from airflow_broadcast.reconcilers.tf_job.gang_scheduling import (
    CUSTOM_SCHEDULER_MESSAGE,
    POD_GROUP_LABEL,
    TERMINATED_MESSAGE,
    VOLCANO_GROUP_ANNOTATION,
    VOLCANO_TASK_ANNOTATION,
    format_quantity,
    gang_scheduler,
)
from airflow_broadcast.reconcilers.tf_job.reconciler import TFJobOptions
from airflow_broadcast.reconcilers.tf_job.status import find_condition
from airflow_broadcast.specs.field_errors import InvalidSpecError
from airflow_broadcast.specs.timestamps import to_rfc3339

VOLCANO = TFJobOptions(gang_scheduler="volcano")
PLUGINS = TFJobOptions(gang_scheduler="scheduler-plugins")


def resources(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if requests is not None:
        body["requests"] = requests
    if limits is not None:
        body["limits"] = limits
    return {"resources": body}


def gang_job(options: TFJobOptions, *, scheduling: dict[str, Any] | None = None,
             replicas: dict[str, Any] | None = None, **fields: Any) -> TFCluster:
    spec = make_spec(replicas=replicas or {"PS": 1, "Worker": 2},
                     run_policy={"schedulingPolicy": scheduling} if scheduling is not None else None, **fields)
    return TFCluster(spec, options=options)


def pod_group(cluster: TFCluster) -> dict[str, Any]:
    plan = cluster.reconcile()
    assert len(plan.create_objects) == 1, plan.create_objects
    return plan.create_objects[0]


@pytest.mark.parametrize(("options", "api_version"), [(VOLCANO, "scheduling.volcano.sh/v1beta1"),
                                                      (PLUGINS, "scheduling.x-k8s.io/v1alpha1")])
def test_L1_pod_group_named_after_the_job_owned_by_it_with_its_annotations(options: TFJobOptions,
                                                                           api_version: str) -> None:
    spec = make_spec(replicas={"PS": 1, "Worker": 2})
    spec = replace(spec, annotations={"team": "ml"})
    group = pod_group(TFCluster(spec, options=options))
    assert (group["apiVersion"], group["kind"]) == (api_version, "PodGroup")
    assert (group["metadata"]["name"], group["metadata"]["namespace"]) == ("mnist", "kubeflow")
    assert group["metadata"]["annotations"] == {"team": "ml"}
    assert group["metadata"]["ownerReferences"][0]["uid"] == UID
    assert group["metadata"]["ownerReferences"][0]["controller"] is True
    assert group["spec"]["minMember"] == 3, "Σ replicas"


def test_L1_min_member_is_min_available_when_given() -> None:
    assert pod_group(gang_job(PLUGINS, scheduling={"minAvailable": 2}))["spec"]["minMember"] == 2


def test_L1_the_pod_group_is_created_once_then_left_alone() -> None:
    cluster = gang_job(PLUGINS)
    assert len(cluster.step().create_objects) == 1
    assert cluster.step(NOW + 1).create_objects == ()
    assert set(cluster.pod_groups) == {"mnist"}


def test_L2_volcano_queue_defaults_to_default_and_takes_the_priority_class() -> None:
    assert pod_group(gang_job(VOLCANO))["spec"]["queue"] == "default"
    group = pod_group(gang_job(VOLCANO, scheduling={"queue": "research", "priorityClass": "high",
                                                    "scheduleTimeoutSeconds": 30}))
    assert (group["spec"]["queue"], group["spec"]["priorityClassName"]) == ("research", "high")
    assert "scheduleTimeoutSeconds" not in group["spec"], "a scheduler-plugins field"


def test_L2_scheduler_plugins_takes_the_schedule_timeout_and_no_queue() -> None:
    group = pod_group(gang_job(PLUGINS, scheduling={"queue": "research", "priorityClass": "high",
                                                    "scheduleTimeoutSeconds": 30}))
    assert group["spec"]["scheduleTimeoutSeconds"] == 30
    assert "queue" not in group["spec"] and "priorityClassName" not in group["spec"]


def test_L3_given_min_resources_are_used_as_they_are() -> None:
    group = pod_group(gang_job(PLUGINS, scheduling={"minResources": {"cpu": "5", "nvidia.com/gpu": 2}}))
    assert group["spec"]["minResources"] == {"cpu": "5", "nvidia.com/gpu": 2}


def test_L3_min_resources_sum_the_first_min_member_pods_by_priority() -> None:
    """minAvailable 3: the two high-priority workers, then one PS; limits count when requests are missing."""
    cluster = gang_job(PLUGINS, scheduling={"minAvailable": 3}, replicas={
        "PS": replica(2, containers=[{**container(), **resources(limits={"cpu": "500m", "memory": "1Gi"})}]),
        "Worker": replica(2, containers=[{**container(), **resources({"cpu": "2", "nvidia.com/gpu": "1"},
                                                                     {"cpu": "4", "nvidia.com/gpu": "1"})}],
                          priorityClassName="high"),
    })
    cluster.priorities = {"high": 1000}
    assert pod_group(cluster)["spec"]["minResources"] == {"cpu": "4500m", "memory": "1073741824",
                                                          "nvidia.com/gpu": "2"}


def test_L3_an_unknown_priority_class_counts_as_zero_and_ties_keep_the_spec_order() -> None:
    cluster = gang_job(VOLCANO, scheduling={"minAvailable": 1}, replicas={
        "PS": replica(1, containers=[{**container(), **resources({"cpu": "1"})}], priorityClassName="missing"),
        "Worker": replica(1, containers=[{**container(), **resources({"cpu": "3"})}]),
    })
    assert pod_group(cluster)["spec"]["minResources"] == {"cpu": "1"}


def test_L3_quantities_are_written_whole_or_in_milli_units() -> None:
    from fractions import Fraction

    assert [format_quantity(Fraction(v)) for v in ("3", "1.5", "0.0005")] == ["3", "1500m", "1m"]


def test_L4_volcano_creates_no_pod_until_the_pod_group_is_admitted() -> None:
    cluster = gang_job(VOLCANO)
    first = cluster.step()
    assert first.create_pods == () and first.create_services == ()
    assert first.status is not None and first.status["lastReconcileTime"] == to_rfc3339(NOW)
    for phase in ("", "Pending"):
        cluster.pod_groups["mnist"] = replace(cluster.pod_groups["mnist"], phase=phase)
        waiting = cluster.step(NOW + 5)
        assert waiting.create_pods == ()
        assert waiting.status is None, "nothing new to write within a minute (M3)"
    assert cluster.step(NOW + 61).status["lastReconcileTime"] == to_rfc3339(NOW + 61)
    cluster.pod_groups["mnist"] = replace(cluster.pod_groups["mnist"], phase="Inqueue")
    admitted = cluster.step(NOW + 62)
    assert len(admitted.create_pods) == 3 and len(admitted.create_services) == 3


def test_L4_scheduler_plugins_does_not_wait_for_the_pod_group() -> None:
    plan = gang_job(PLUGINS).step()
    assert len(plan.create_objects) == 1 and len(plan.create_pods) == 3


def test_L5_volcano_pods_get_its_scheduler_and_group_annotations() -> None:
    cluster = gang_job(VOLCANO)
    cluster.step()
    cluster.pod_groups["mnist"] = replace(cluster.pod_groups["mnist"], phase="Running")
    pods = {p["metadata"]["name"]: p for p in cluster.step(NOW + 1).create_pods}
    worker = pods["mnist-worker-1"]
    assert worker["spec"]["schedulerName"] == "volcano"
    assert worker["metadata"]["annotations"][VOLCANO_GROUP_ANNOTATION] == "mnist"
    assert pods["mnist-ps-0"]["metadata"]["annotations"][VOLCANO_TASK_ANNOTATION] == "ps"
    assert worker["metadata"]["annotations"][VOLCANO_TASK_ANNOTATION] == "worker"


def test_L5_scheduler_plugins_pods_get_the_pod_group_label_and_scheduler_name() -> None:
    cluster = gang_job(TFJobOptions(gang_scheduler="scheduler-plugins", gang_scheduler_name="coscheduler"))
    pods = cluster.step().create_pods
    assert {p["metadata"]["labels"][POD_GROUP_LABEL] for p in pods} == {"mnist"}
    assert {p["spec"]["schedulerName"] for p in pods} == {"coscheduler"}


def test_L5_without_gang_scheduling_pods_and_plan_are_untouched() -> None:
    plan = gang_job(TFJobOptions()).step()
    assert plan.create_objects == ()
    assert all("schedulerName" not in p["spec"] and POD_GROUP_LABEL not in p["metadata"]["labels"]
               for p in plan.create_pods)


def test_L6_a_custom_scheduler_is_kept_with_a_warning() -> None:
    cluster = gang_job(PLUGINS, replicas={"PS": replica(1, schedulerName="my-scheduler"), "Worker": 1})
    plan = cluster.step()
    pods = {p["metadata"]["name"]: p for p in plan.create_pods}
    assert pods["mnist-ps-0"]["spec"]["schedulerName"] == "my-scheduler", "not overwritten"
    assert pods["mnist-worker-0"]["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
    assert JobEvent("Warning", "SetPodTemplateSchedulerName", CUSTOM_SCHEDULER_MESSAGE) in plan.events
    assert not [e for e in cluster.step(NOW + 1).events if e.reason == "SetPodTemplateSchedulerName"], \
        "only when pods are created"


def terminated(plan: Any) -> tuple[list[tuple[str, str]], list[str]]:
    events = [(e.reason, e.message) for e in plan.events if "PodGroup" in e.reason or e.reason == "JobTerminated"]
    return events, [d.name for d in plan.deletes if d.kind == "PodGroup"]


# SuccessfulDeletePodGroup follows from the executor, once the delete has happened.
TERMINATION = [("JobTerminated", TERMINATED_MESSAGE)]


def test_L7_the_pod_group_is_deleted_when_the_job_succeeds() -> None:
    cluster = gang_job(PLUGINS)
    cluster.step()
    cluster.set_phase("Succeeded")
    plan = cluster.step(NOW + 1)
    assert find_condition(plan.status or {}, "Succeeded") is not None
    assert terminated(plan) == (TERMINATION, ["mnist"])
    assert plan.deletes[-1].api_version == "scheduling.x-k8s.io/v1alpha1"
    cluster.apply(plan)
    assert terminated(cluster.step(NOW + 2)) == ([], []), "once"


def test_L7_the_pod_group_is_deleted_on_suspend_and_recreated_on_resume() -> None:
    cluster = gang_job(PLUGINS)
    cluster.step()
    cluster.replace_spec(make_spec(replicas={"PS": 1, "Worker": 2}, run_policy={"suspend": True}))
    assert terminated(cluster.step(NOW + 1)) == (TERMINATION, ["mnist"])
    assert cluster.pod_groups == {}
    cluster.replace_spec(make_spec(replicas={"PS": 1, "Worker": 2}, run_policy={"suspend": False}))
    assert len(cluster.step(NOW + 2).create_objects) == 1


@pytest.mark.parametrize("run_policy", [{"backoffLimit": 0}, {"activeDeadlineSeconds": 5}])
def test_L7_I5_the_pod_group_is_deleted_on_backoff_or_deadline_failure(run_policy: dict[str, Any]) -> None:
    cluster = TFCluster(make_spec(replicas={"Worker": 2}, restart_policy="OnFailure", run_policy=run_policy),
                        options=PLUGINS)
    cluster.step()
    cluster.set_phase("Running")
    cluster.step(NOW + 1)
    if "backoffLimit" in run_policy:
        cluster.set_pod("mnist-worker-0", "Failed", exit_code=1)
    plan = cluster.step(NOW + 10)
    assert find_condition(plan.status or {}, "Failed") is not None
    assert terminated(plan) == (TERMINATION, ["mnist"])


def test_L1_unknown_gang_scheduler_and_bad_scheduling_policy_are_refused() -> None:
    with pytest.raises(ValueError, match="gang_scheduler must be one of volcano, scheduler-plugins"):
        gang_scheduler("kube-batch")
    with pytest.raises(InvalidSpecError) as raised:
        make_spec(run_policy={"schedulingPolicy": {"minAvailable": -1, "queue": 3, "minResources": {"cpu": [1]}}})
    message = str(raised.value)
    for expected in ("spec.runPolicy.schedulingPolicy.minAvailable: Invalid value: -1",
                     "spec.runPolicy.schedulingPolicy.queue: Invalid value: 3: must be a string",
                     "spec.runPolicy.schedulingPolicy.minResources[cpu]: Invalid value"):
        assert expected in message, message
