"""Completion (checklist G: C1-C11) of the pure BroadcastJob pass."""

from __future__ import annotations

from typing import Any

import pytest
from support.bcj_builders import (
    NOW,
    BCJCluster,
    conditions,
    created_nodes,
    events_of,
    make_node,
    make_nodes,
    make_pod,
    make_record,
    make_spec,
    reasons,
    started_status,
)

from airflow_broadcast.reconcilers.broadcast_job.reconciler import reconcile_broadcast_job
from airflow_broadcast.reconcilers.observed import PodInfo
from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.specs.broadcast_job.spec import BroadcastJobSpec
from airflow_broadcast.specs.timestamps import to_rfc3339

DONE: dict[str, dict[str, Any]] = {
    "succeeded": {"phase": "Succeeded"},
    "failed": {"phase": "Failed"},
    "terminating": {"phase": "Running", "deleting": True},
}


def pass_over(spec: BroadcastJobSpec, pods: list[PodInfo], nodes: int = 3) -> Plan:
    return reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(nodes), pods, NOW)


@pytest.mark.parametrize("mix", [
    ("succeeded", "succeeded", "succeeded"),
    ("succeeded", "failed", "terminating"),
    ("terminating", "terminating", "terminating"),
])
def test_C1_always_job_completes_when_every_desired_node_is_done(mix: tuple[str, ...]) -> None:
    spec = make_spec(failure="Continue")
    pods = [make_pod(f"node-0{i}", spec=spec, **DONE[kind]) for i, kind in enumerate(mix)]
    plan = pass_over(spec, pods)
    assert plan.status is not None and plan.status["phase"] == "completed"
    assert plan.finished


@pytest.mark.parametrize("last", ["Running", "Pending", None])
def test_C1_not_complete_while_a_desired_node_is_running_pending_or_empty(last: str | None) -> None:
    spec = make_spec(failure="Continue", parallelism=0)
    pods = [make_pod("node-00", "Succeeded", spec=spec), make_pod("node-01", "Succeeded", spec=spec)]
    if last is not None:
        pods.append(make_pod("node-02", last, spec=spec))
    plan = pass_over(spec, pods)
    assert plan.status is not None and plan.status["phase"] == "running"
    assert conditions(plan.status) == []
    assert not plan.finished


def test_C2_completion_sets_phase_condition_time_and_event() -> None:
    spec = make_spec(failure="Continue")
    pods = [make_pod("node-00", "Succeeded", spec=spec), make_pod("node-01", "Succeeded", spec=spec),
            make_pod("node-02", "Failed", spec=spec)]
    plan = pass_over(spec, pods)
    assert plan.status is not None
    assert plan.status["phase"] == "completed"
    assert plan.status["completionTime"] == to_rfc3339(NOW)
    [cond] = plan.status["conditions"]
    assert cond == {"type": "Complete", "status": "True", "reason": "Complete",
                    "message": "Job completed, 2 pods succeeded, 1 pods failed",
                    "lastProbeTime": to_rfc3339(NOW), "lastTransitionTime": to_rfc3339(NOW)}
    assert [(e.type, e.reason, e.message) for e in plan.events] == [
        ("Normal", "JobComplete", "Job ops/bcj is completed, 2 pods succeeded, 1 pods failed")]


def test_C3_nodes_filled_in_a_pass_complete_only_in_a_later_pass() -> None:
    spec = make_spec()
    nodes = make_nodes(2)
    cluster = BCJCluster(spec, nodes)
    first = cluster.step()
    assert created_nodes(first) == ["node-00", "node-01"]
    cluster.set_phase("Succeeded", ["node-00"])
    cluster.remove_pod("node-01")  # create observed only for node-00; node-01 re-filled below
    second = cluster.step()
    assert created_nodes(second) == ["node-01"]
    assert cluster.status["phase"] == "running"
    cluster.set_phase("Succeeded")
    third = cluster.step()
    assert "JobComplete" in reasons(third)
    assert cluster.status["phase"] == "completed"


def test_C4_zero_eligible_nodes_never_completes() -> None:
    spec = make_spec(pod_spec={"nodeSelector": {"role": "none"}})
    cluster = BCJCluster(spec, make_nodes(3))
    for _ in range(3):
        plan = cluster.step(advance=3600)
        assert not plan.finished
    assert (cluster.status["phase"], cluster.status["desired"]) == ("running", 0)
    assert conditions(cluster.status) == []


def test_C5_never_job_never_completes_and_serves_new_nodes() -> None:
    spec = make_spec(completion="Never")
    cluster = BCJCluster(spec, make_nodes(2))
    cluster.step()
    cluster.set_phase("Succeeded")
    plan = cluster.step()
    assert not plan.finished and plan.events == ()
    assert cluster.status["phase"] == "running"
    cluster.nodes["node-99"] = make_node("node-99")
    plan = cluster.step(advance=86400)
    assert created_nodes(plan) == ["node-99"]
    assert conditions(cluster.status) == []


def test_C6_continue_with_failed_pods_ends_complete_not_failed() -> None:
    spec = make_spec(failure="Continue")
    pods = [make_pod("node-00", "Failed", spec=spec), make_pod("node-01", "Failed", spec=spec),
            make_pod("node-02", "Succeeded", spec=spec)]
    plan = pass_over(spec, pods)
    assert plan.status is not None
    assert conditions(plan.status) == [("Complete", "True", "Complete")]
    assert plan.status["conditions"][0]["message"] == "Job completed, 1 pods succeeded, 2 pods failed"


def test_C7_pods_on_deleted_or_unmapped_nodes_do_not_block_completion() -> None:
    spec = make_spec()
    unmapped_affinity = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                "values": ["x", "y"]}]}]}}}}
    pods = [make_pod("node-00", "Succeeded", spec=spec), make_pod("gone", "Running", spec=spec),
            make_pod("node-00", "Running", spec=spec, name="bcj-unmapped", spec_changes=unmapped_affinity)]
    assert pods[2].node == ""
    plan = reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(1), pods, NOW)
    assert plan.status is not None
    assert plan.status["phase"] == "completed"
    assert plan.status["active"] == 2


def test_C8_restart_failed_pod_still_running_blocks_completion() -> None:
    spec = make_spec(failure="Continue", restart_policy="OnFailure")
    pods = [make_pod("node-00", "Succeeded", spec=spec), make_pod("node-01", "Running", spec=spec, restarts=1)]
    plan = reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(2), pods, NOW)
    assert plan.status is not None
    assert plan.status["failed"] == 1
    assert plan.status["phase"] == "running"
    assert not plan.finished


def test_C9_empty_completion_type_behaves_like_always() -> None:
    spec = make_spec(completion="")
    assert spec.completion_policy.type == "Always"
    done = pass_over(spec, [make_pod(f"node-0{i}", "Succeeded", spec=spec) for i in range(3)])
    assert done.status is not None and done.status["phase"] == "completed"
    failed = pass_over(spec, [make_pod("node-00", "Failed", spec=spec)])
    assert failed.status is not None and failed.status["phase"] == "failed"


def test_C10_finished_always_job_ignores_new_nodes_and_node_changes() -> None:
    spec = make_spec()
    cluster = BCJCluster(spec, make_nodes(2))
    cluster.step()
    cluster.set_phase("Succeeded")
    assert cluster.step().finished
    cluster.nodes["node-99"] = make_node("node-99")
    cluster.nodes["node-00"] = make_node("node-00", unschedulable=True)
    cluster.nodes["node-01"] = make_node("node-01", taints=[("dedicated", "x", "NoSchedule")])
    plan = cluster.step()
    assert (plan.create_pods, plan.deletes, plan.status, plan.events) == ((), (), None, ())


def test_C11_conditions_are_appended_once() -> None:
    spec = make_spec()
    cluster = BCJCluster(spec, make_nodes(2))
    cluster.step()
    cluster.set_phase("Succeeded")
    for _ in range(4):
        cluster.step()
    assert conditions(cluster.status) == [("Complete", "True", "Complete")]
    assert len(events_of(cluster.plans[1], "JobComplete")) == 1
    assert all(not p.events for p in cluster.plans[2:])


def test_C11_never_job_failed_by_failfast_gets_one_condition() -> None:
    spec = make_spec(completion="Never")
    cluster = BCJCluster(spec, make_nodes(2))
    cluster.step()
    cluster.set_phase("Failed", ["node-00"])
    for _ in range(3):
        cluster.step()
    assert conditions(cluster.status) == [("Failed", "True", "Failed")]
