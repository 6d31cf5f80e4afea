"""Status accounting (checklist F: S1-S8, S10, S11) of the pure BroadcastJob pass."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from support.bcj_builders import (
    COMPAT,
    FIXED,
    NOW,
    BCJCluster,
    make_node,
    make_nodes,
    make_pod,
    make_record,
    make_spec,
    simulate,
    started_status,
)

from airflow_broadcast.reconcilers.broadcast_job.node_eligibility import REASON_AFFINITY, REASON_UNSCHEDULABLE
from airflow_broadcast.reconcilers.broadcast_job.reconciler import reconcile_broadcast_job
from airflow_broadcast.reconcilers.observed import ContainerExit
from airflow_broadcast.specs.timestamps import to_rfc3339


def test_S1_start_time_is_set_on_the_first_pass_and_never_changes() -> None:
    spec = make_spec(parallelism=1)
    record = make_record()
    first = reconcile_broadcast_job(spec, record, make_nodes(2), [], NOW)
    assert first.status is not None and first.status["startTime"] == to_rfc3339(NOW)
    record = simulate(first, record)
    for later in (NOW + 30, NOW + 3600):
        plan = reconcile_broadcast_job(spec, record, make_nodes(2), [make_pod("node-00", spec=spec)], later)
        status = plan.status if plan.status is not None else record.status
        assert status["startTime"] == to_rfc3339(NOW)
        record = simulate(plan, record)


@pytest.mark.parametrize(("paused", "phase"), [(False, "running"), (True, "paused")])
def test_S2_empty_phase_becomes_running_or_paused_on_the_first_pass(paused: bool, phase: str) -> None:
    plan = reconcile_broadcast_job(make_spec(paused=paused), make_record(), make_nodes(1), [], NOW)
    assert plan.status is not None and plan.status["phase"] == phase


def test_S2_phase_is_running_even_with_no_eligible_node() -> None:
    plan = reconcile_broadcast_job(make_spec(), make_record({"phase": ""}), [], [], NOW)
    assert plan.status is not None and plan.status["phase"] == "running"


def test_S3_succeeded_counts_succeeded_pods_including_terminating_ones() -> None:
    spec = make_spec(completion="Never")
    pods = [make_pod("node-00", "Succeeded", spec=spec), make_pod("node-01", "Succeeded", spec=spec, deleting=True),
            make_pod("node-02", "Running", spec=spec)]
    plan = reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(3), pods, NOW)
    assert plan.status is not None and plan.status["succeeded"] == 2


def test_S4_failed_counts_failed_restart_failed_and_deleted_pods() -> None:
    spec = make_spec(failure="Continue", restart_policy="OnFailure", restart_limit=1,
                     pod_spec={"nodeSelector": {"role": "w"}})
    nodes = [make_node(f"node-0{i}", labels={"role": "w"}) for i in range(3)] + [make_node("node-03")]
    pods = [
        make_pod("node-00", "Failed", spec=spec),
        make_pod("node-01", "Running", spec=spec, restarts=2),    # restart-failed, still running
        make_pod("node-02", "Failed", spec=spec, deleting=True),  # Failed even while terminating
        make_pod("node-03", "Succeeded", spec=spec),              # node lost its label: deleted (Q5)
    ]
    plan = reconcile_broadcast_job(spec, make_record(started_status()), nodes, pods, NOW)
    assert [d.name for d in plan.deletes] == [pods[3].name]
    assert plan.status is not None
    assert (plan.status["failed"], plan.status["succeeded"]) == (4, 1)


def test_S5_active_is_live_pods_plus_creates_minus_deletes() -> None:
    spec = make_spec(failure="Continue")
    nodes = [make_node("node-00"), make_node("node-01", unschedulable=True), make_node("node-02"),
             make_node("node-03")]
    pods = [make_pod("node-00", "Running", spec=spec), make_pod("node-01", "Running", spec=spec),
            make_pod("node-09", "Pending", spec=spec)]  # on a node that is gone: still active
    record = make_record(started_status())
    plan = reconcile_broadcast_job(spec, record, nodes, pods, NOW)
    assert [d.name for d in plan.deletes] == [pods[1].name]
    assert plan.status is not None and plan.status["active"] == 3 - 1
    assert simulate(plan, record).status["active"] == 3 - 1 + 2


def test_S6_desired_counts_fitting_pods_terminating_misfits_and_fitting_empty_nodes() -> None:
    spec = make_spec(failure="Continue", pod_spec={"nodeSelector": {"role": "w"}})
    w = {"role": "w"}
    nodes = [make_node("a", labels=w), make_node("b"), make_node("c"), make_node("d", labels=w), make_node("e")]
    pods = [make_pod("a", "Running", spec=spec), make_pod("b", "Running", spec=spec, deleting=True),
            make_pod("c", "Running", spec=spec)]
    plan = reconcile_broadcast_job(spec, make_record(started_status()), nodes, pods, NOW)
    assert plan.status is not None and plan.status["desired"] == 3
    assert sorted(plan.status["nodes"]) == ["a", "b", "d"]
    assert plan.status["nodes"]["d"]["phase"] == "Pending", "the pod created this pass is listed at once"
    assert sorted(plan.status["ineligibleNodes"]) == ["c", "e"]
    assert [d.name for d in plan.deletes] == [pods[2].name]


def test_S7_terminating_non_terminal_pod_is_counted_nowhere() -> None:
    spec = make_spec()
    pods = [make_pod("node-00", "Running", spec=spec, deleting=True),
            make_pod("node-01", "Pending", spec=spec, deleting=True)]
    plan = reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(2), pods, NOW)
    assert plan.status is not None
    assert (plan.status["active"], plan.status["succeeded"], plan.status["failed"]) == (0, 0, 0)
    assert plan.status["desired"] == 2


def test_S8_pods_on_deleted_nodes_still_count() -> None:
    spec = make_spec(failure="Continue")
    pods = [make_pod("gone-1", "Running", spec=spec), make_pod("gone-2", "Succeeded", spec=spec),
            make_pod("gone-3", "Failed", spec=spec)]
    plan = reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(1), pods, NOW)
    assert plan.status is not None
    assert (plan.status["active"], plan.status["succeeded"], plan.status["failed"]) == (1, 1, 1)
    assert plan.status["desired"] == 1
    assert plan.deletes == ()


@pytest.mark.parametrize("kind", ["Complete", "Failed"])
def test_S10_finished_always_job_status_is_never_written_again(kind: str) -> None:
    spec = make_spec()
    status: dict[str, Any] = started_status(phase="completed" if kind == "Complete" else "failed", succeeded=1)
    status["completionTime"] = to_rfc3339(NOW - 5)
    status["conditions"] = [{"type": kind, "status": "True", "reason": kind}]
    pods = [make_pod("node-00", "Failed", spec=spec), make_pod("node-01", "Running", spec=spec)]
    plan = reconcile_broadcast_job(spec, make_record(status), make_nodes(3), pods, NOW)
    assert plan.status is None
    assert plan.finished
    assert (plan.create_pods, plan.deletes, plan.events) == ((), (), ())


def test_S11_per_node_results_and_ineligibility_reasons() -> None:
    spec = make_spec(failure="Continue", pod_spec={"nodeSelector": {"role": "w"}})
    w = {"role": "w"}
    nodes = [make_node("n-ok", labels=w), make_node("n-bad", labels=w), make_node("n-run", labels=w),
             make_node("n-wait", labels=w), make_node("n-plain"), make_node("n-cordon", labels=w, unschedulable=True)]
    pods = [make_pod("n-ok", "Succeeded", spec=spec), make_pod("n-bad", "Failed", spec=spec, exit_code=3),
            make_pod("n-run", "Running", spec=spec, restarts=1),
            make_pod("n-wait", "Pending", spec=spec, waiting_reason="ImagePullBackOff")]
    plan = reconcile_broadcast_job(spec, make_record(started_status()), nodes, pods, NOW)
    assert plan.status is not None
    results = plan.status["nodes"]
    assert results["n-ok"]["pod"] == pods[0].name
    assert (results["n-ok"]["phase"], results["n-ok"]["exitCode"]) == ("Succeeded", 0)
    assert (results["n-bad"]["phase"], results["n-bad"]["exitCode"], results["n-bad"]["reason"]) == (
        "Failed", 3, "Error")
    assert (results["n-run"]["phase"], results["n-run"]["restarts"]) == ("Running", 1)
    assert "exitCode" not in results["n-run"]
    assert (results["n-wait"]["phase"], results["n-wait"]["reason"]) == ("Pending", "ImagePullBackOff")
    assert plan.status["ineligibleNodes"] == {"n-plain": REASON_AFFINITY, "n-cordon": REASON_UNSCHEDULABLE}


@pytest.mark.parametrize("compat", [False, True])
def test_S11_a_node_keeps_its_terminal_result_after_its_pod_is_gone(compat: bool) -> None:
    """Kept as the node's result (L12), or, with kruise_compat, as `previous` beside the re-run."""
    cluster = BCJCluster(make_spec(completion="Never"), make_nodes(2), options=COMPAT if compat else FIXED)
    cluster.step()
    cluster.set_phase("Succeeded")
    cluster.step()
    pod_name = cluster.pod_on("node-00").name
    cluster.remove_pod("node-00")     # PodGC or a user removes the succeeded pod
    cluster.step()
    result = cluster.status["nodes"]["node-00"]
    kept = result["previous"] if compat else result
    assert (kept["phase"], kept["pod"]) == ("Succeeded", pod_name)




def test_S11_a_pod_that_failed_in_an_init_container_reports_its_exit_as_kubectl_does() -> None:
    spec = make_spec(failure="Continue")
    failed = replace(make_pod("node-00", "Failed", spec=spec), exits=(), waiting_reason="PodInitializing",
                     init_exits=(ContainerExit("check", 4, "Error", "disk not mounted"),))
    plan = reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(1), [failed], NOW)
    assert plan.status is not None
    row = plan.status["nodes"]["node-00"]
    assert (row["phase"], row["exitCode"], row["reason"], row["message"], row["container"]) == (
        "Failed", 4, "Init:Error", "disk not mounted", "check")
