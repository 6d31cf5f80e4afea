"""spec.paused (checklist K: Z1-Z6) in the pure BroadcastJob pass."""

from __future__ import annotations

import pytest
from support.bcj_builders import (
    MODES,
    NOW,
    BCJCluster,
    conditions,
    created_nodes,
    make_node,
    make_nodes,
    make_pod,
    make_record,
    make_spec,
    reasons,
    started_status,
)

from airflow_broadcast.reconcilers.broadcast_job.reconciler import reconcile_broadcast_job


@pytest.mark.parametrize("mode", list(MODES))
def test_Z1_pausing_a_running_job_refreshes_counts_and_touches_nothing(mode: str) -> None:
    spec = make_spec(paused=True, pod_spec={"nodeSelector": {"role": "w"}})
    w = {"role": "w"}
    nodes = [make_node("node-00", labels=w), make_node("node-01"), make_node("node-02", labels=w),
             make_node("node-03", labels=w)]
    pods = [make_pod("node-00", "Running", spec=spec), make_pod("node-01", "Running", spec=spec),  # misfit
            make_pod("node-02", "Failed", spec=spec)]                                             # FailFast
    record = make_record(started_status(active=7, desired=9))
    plan = reconcile_broadcast_job(spec, record, nodes, pods, NOW, MODES[mode])
    assert plan.status is not None
    assert plan.status["phase"] == "paused"
    assert (plan.status["active"], plan.status["failed"], plan.status["desired"]) == (2, 1, 3)
    assert (plan.create_pods, plan.deletes, plan.events) == ((), (), ())
    assert conditions(plan.status) == []


def test_Z2_job_created_paused_gets_start_time_and_phase_paused_and_no_pods() -> None:
    plan = reconcile_broadcast_job(make_spec(paused=True), make_record(), make_nodes(3), [], NOW)
    assert plan.status is not None
    assert plan.status["startTime"] is not None and plan.status["phase"] == "paused"
    assert plan.create_pods == ()


def test_Z3_running_pods_keep_running_while_paused() -> None:
    cluster = BCJCluster(make_spec(), make_nodes(3))
    cluster.step()
    cluster.set_phase("Running")
    cluster.spec = make_spec(paused=True)
    for _ in range(3):
        plan = cluster.step(advance=600)
        assert plan.deletes == ()
    assert len(cluster.pods) == 3
    assert cluster.status["active"] == 3


def test_Z4_unpausing_emits_continue_and_creates_in_the_same_pass() -> None:
    cluster = BCJCluster(make_spec(paused=True), make_nodes(3))
    cluster.step()
    assert cluster.status["phase"] == "paused"
    cluster.spec = make_spec(paused=False)
    plan = cluster.step()
    assert [(e.type, e.reason, e.message) for e in plan.events] == [
        ("Normal", "Continue", "continue to process job")]
    assert created_nodes(plan) == ["node-00", "node-01", "node-02"]
    assert cluster.status["phase"] == "running"


@pytest.mark.parametrize("completion", ["Never", "Always"])
def test_Z5_pausing_a_failed_job_has_no_effect(completion: str) -> None:
    cluster = BCJCluster(make_spec(completion=completion), make_nodes(2))
    cluster.step()
    cluster.set_phase("Failed", ["node-00"])
    cluster.step()
    assert cluster.status["phase"] == "failed"
    cluster.spec = make_spec(completion=completion, paused=True)
    plan = cluster.step()
    assert cluster.status["phase"] == "failed"
    assert plan.events == ()


def test_Z6_paused_always_job_never_completes_while_paused() -> None:
    cluster = BCJCluster(make_spec(), make_nodes(2))
    cluster.step()
    cluster.set_phase("Succeeded")
    cluster.spec = make_spec(paused=True)
    for _ in range(3):
        plan = cluster.step()
        assert not plan.finished
    assert cluster.status["phase"] == "paused"
    assert conditions(cluster.status) == []
    cluster.spec = make_spec(paused=False)
    assert reasons(cluster.step()) == ["Continue", "JobComplete"]
