"""Failure policy and restart limit (checklist H: F1-F14) of the pure BroadcastJob pass.

[F] items and the upstream quirks behind `kruise_compat` are tested in both modes.
"""

from __future__ import annotations

import pytest
from support.bcj_builders import (
    COMPAT,
    FIXED,
    MODES,
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
    simulate,
    started_status,
    status_of,
    unchecked,
)

from airflow_broadcast.reconcilers.broadcast_job.reconciler import (
    PAUSED_BY_POLICY,
    BroadcastOptions,
    reconcile_broadcast_job,
)
from airflow_broadcast.reconcilers.observed import PodInfo
from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.specs.broadcast_job.spec import BroadcastJobSpec
from airflow_broadcast.specs.timestamps import to_rfc3339

FAILFAST_MESSAGE = "failure policy is FailurePolicyTypeFailFast and failed pod is found"


def pass_over(spec: BroadcastJobSpec, pods: list[PodInfo], nodes: int = 4,
              options: BroadcastOptions = FIXED) -> Plan:
    return reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(nodes), pods, NOW, options)


def counts(plan: Plan) -> tuple[int, int, int]:
    assert plan.status is not None
    return plan.status["active"], plan.status["succeeded"], plan.status["failed"]


@pytest.mark.parametrize(("restart_policy", "restarts", "failed"), [
    ("OnFailure", 1, True),
    ("Never", 5, False),
    ("Always", 5, False),   # only reachable for pods edited by hand: still not restart-failed
])
def test_F1_restart_limit_applies_only_to_onfailure_pods(restart_policy: str, restarts: int, failed: bool) -> None:
    spec = make_spec(failure="Continue", restart_policy="OnFailure")
    pod = make_pod("node-00", "Running", spec=spec, restart_policy=restart_policy, restarts=restarts)
    assert counts(pass_over(spec, [pod], nodes=1)) == ((0, 0, 1) if failed else (1, 0, 0))


@pytest.mark.parametrize(("init", "regular", "failed"), [(2, 2, True), (2, 1, False), (0, 4, True), (3, 0, False)])
def test_F2_restarts_are_summed_over_init_and_regular_containers_of_one_pod(
        init: int, regular: int, failed: bool) -> None:
    spec = make_spec(failure="Continue", restart_policy="OnFailure", restart_limit=3)
    pods = [make_pod("node-00", "Running", spec=spec, init_restarts=init, restarts=regular),
            make_pod("node-01", "Running", spec=spec, restarts=3)]  # another pod's restarts never add up
    assert status_of(pass_over(spec, pods, nodes=2))["failed"] == int(failed)


def test_F3_default_restart_limit_zero_fails_on_the_first_restart() -> None:
    spec = make_spec(failure="Continue", restart_policy="OnFailure")
    assert spec.failure_policy.restart_limit == 0
    assert counts(pass_over(spec, [make_pod("node-00", spec=spec, restarts=1)], nodes=1)) == (0, 0, 1)
    assert counts(pass_over(spec, [make_pod("node-00", spec=spec, restarts=0)], nodes=1)) == (1, 0, 0)


@pytest.mark.parametrize("mode", list(MODES))
def test_F4_failfast_fails_the_job_in_the_same_pass(mode: str) -> None:
    spec = make_spec()
    assert spec.failure_policy.type == "FailFast"
    plan = pass_over(spec, [make_pod("node-00", "Failed", spec=spec)], options=MODES[mode])
    assert plan.status is not None
    assert plan.status["phase"] == "failed"
    assert plan.status["completionTime"] == to_rfc3339(NOW)
    [cond] = plan.status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "Failed", "True", "Failed", FAILFAST_MESSAGE)
    assert plan.status["failureReason"] == "FailedPodFound"
    assert plan.finished


@pytest.mark.parametrize("mode", list(MODES))
def test_F5_failfast_deletes_every_active_pod_and_creates_nothing(mode: str) -> None:
    spec = make_spec()
    pods = [make_pod("node-00", "Failed", spec=spec), make_pod("node-01", "Running", spec=spec),
            make_pod("node-02", "Pending", spec=spec), make_pod("node-03", "Succeeded", spec=spec)]
    plan = pass_over(spec, pods, nodes=6, options=MODES[mode])
    assert sorted(d.name for d in plan.deletes) == sorted([pods[1].name, pods[2].name])
    assert all(d.kind == "Pod" and d.uid for d in plan.deletes)
    assert counts(plan) == (0, 1, 1 + 2)
    assert plan.create_pods == ()


def test_F6_fixed_failfast_event_is_emitted_once_with_final_counts() -> None:
    spec = make_spec()
    pods = [make_pod("node-00", "Failed", spec=spec), make_pod("node-01", "Running", spec=spec),
            make_pod("node-02", "Succeeded", spec=spec)]
    plan = pass_over(spec, pods, options=FIXED)
    assert [(e.type, e.message) for e in events_of(plan, "failed pod is found")] == [
        ("Warning", FAILFAST_MESSAGE + ": 1 pods succeeded, 2 pods failed")]
    assert plan.status is not None and plan.status["failureReason"] == "FailedPodFound"


def test_F6_compat_failfast_event_is_emitted_twice_before_and_after_deletions() -> None:
    spec = make_spec()
    pods = [make_pod("node-00", "Failed", spec=spec), make_pod("node-01", "Running", spec=spec),
            make_pod("node-02", "Succeeded", spec=spec)]
    plan = pass_over(spec, pods, options=COMPAT)
    assert [(e.type, e.reason, e.message) for e in plan.events] == [
        ("Warning", "failed pod is found", FAILFAST_MESSAGE + ": 1 pods succeeded, 1 pods failed"),
        ("Warning", "failed pod is found", FAILFAST_MESSAGE + ": 1 pods succeeded, 2 pods failed"),
    ]


@pytest.mark.parametrize("mode", list(MODES))
def test_F7_failfast_does_not_delete_restart_failed_running_pods(mode: str) -> None:
    spec = make_spec(restart_policy="OnFailure")
    flapping = make_pod("node-00", "Running", spec=spec, restarts=1)
    running = make_pod("node-01", "Running", spec=spec)
    plan = pass_over(spec, [flapping, running], options=MODES[mode])
    assert [d.name for d in plan.deletes] == [running.name]
    assert plan.status is not None and plan.status["phase"] == "failed"


def test_F8_continue_counts_failures_and_keeps_creating() -> None:
    spec = make_spec(failure="Continue")
    plan = pass_over(spec, [make_pod("node-00", "Failed", spec=spec)], nodes=3)
    assert counts(plan) == (0, 0, 1)
    assert created_nodes(plan) == ["node-01", "node-02"]
    assert plan.status is not None and plan.status["phase"] == "running"
    assert plan.events == ()


@pytest.mark.parametrize("mode", list(MODES))
def test_F9_pause_policy_pauses_without_creating_or_deleting(mode: str) -> None:
    spec = make_spec(failure="Pause", pod_spec={"nodeSelector": {"role": "w"}})
    w = {"role": "w"}
    nodes = [make_node("node-00", labels=w), make_node("node-01", labels=w), make_node("node-02"),
             make_node("node-03", labels=w)]
    pods = [make_pod("node-00", "Failed", spec=spec), make_pod("node-01", "Running", spec=spec),
            make_pod("node-02", "Running", spec=spec)]  # a misfit: not deleted while paused
    plan = reconcile_broadcast_job(spec, make_record(started_status()), nodes, pods, NOW, MODES[mode])
    assert [(e.type, e.reason, e.message) for e in plan.events] == [
        ("Warning", "Paused", "job is paused, due to failed pod")]
    assert plan.status is not None and plan.status["phase"] == "paused"
    assert (plan.create_pods, plan.deletes) == ((), ())
    assert counts(plan) == (2, 0, 1)
    assert not plan.finished


def pause_scenario(options: BroadcastOptions) -> BCJCluster:
    spec = make_spec(failure="Pause")
    cluster = BCJCluster(spec, make_nodes(3), options=options)
    cluster.step()
    cluster.set_phase("Failed", ["node-00"])
    return cluster


def test_F10_fixed_pause_is_persisted_and_does_not_flap() -> None:
    cluster = pause_scenario(FIXED)
    first = cluster.step()
    assert reasons(first) == ["Paused"]
    assert first.record_annotations == {PAUSED_BY_POLICY: "true"}
    assert cluster.record.annotations[PAUSED_BY_POLICY] == "true"
    for _ in range(3):
        plan = cluster.step()
        assert plan.events == ()
        assert (plan.create_pods, plan.deletes) == ((), ())
        assert cluster.status["phase"] == "paused"
    assert cluster.record.annotations[PAUSED_BY_POLICY] == "true"


def test_F10_fixed_pause_survives_spec_unpause_while_failed_pods_remain() -> None:
    cluster = pause_scenario(FIXED)
    cluster.step()
    cluster.spec = make_spec(failure="Pause", paused=True)
    cluster.step()
    cluster.spec = make_spec(failure="Pause", paused=False)
    plan = cluster.step()
    assert plan.events == ()
    assert cluster.status["phase"] == "paused"


def test_F10_compat_pause_is_not_persisted_and_flaps_every_pass() -> None:
    cluster = pause_scenario(COMPAT)
    assert reasons(cluster.step()) == ["Paused"]
    for _ in range(3):
        plan = cluster.step()
        assert [(e.type, e.reason) for e in plan.events] == [("Normal", "Continue"), ("Warning", "Paused")]
        assert plan.record_annotations == {}
        assert cluster.status["phase"] == "paused"
        assert plan.create_pods == ()
    assert PAUSED_BY_POLICY not in cluster.record.annotations


@pytest.mark.parametrize("mode", list(MODES))
def test_F11_deleting_the_failed_pods_resumes_the_job_and_reruns_those_nodes(mode: str) -> None:
    cluster = pause_scenario(MODES[mode])
    cluster.step()
    cluster.step()
    cluster.remove_pod("node-00")
    plan = cluster.step()
    assert reasons(plan) == ["Continue"]
    assert created_nodes(plan) == ["node-00"]
    assert cluster.status["phase"] == "running"
    assert PAUSED_BY_POLICY not in cluster.record.annotations
    if mode == "fixed":
        assert plan.record_annotations == {PAUSED_BY_POLICY: None}


def test_F11_fixed_changing_the_policy_also_resumes() -> None:
    cluster = pause_scenario(FIXED)
    cluster.step()
    cluster.spec = make_spec(failure="Continue")
    plan = cluster.step()
    assert reasons(plan) == ["Continue"]
    assert cluster.status["phase"] == "running"
    assert plan.record_annotations == {PAUSED_BY_POLICY: None}


@pytest.mark.parametrize("mode", list(MODES))
def test_F12_never_job_failfast_fails_and_serves_no_new_nodes(mode: str) -> None:
    spec = make_spec(completion="Never")
    cluster = BCJCluster(spec, make_nodes(2), options=MODES[mode])
    cluster.step()
    cluster.set_phase("Failed", ["node-00"])
    cluster.set_phase("Succeeded", ["node-01"])
    plan = cluster.step()
    assert plan.finished
    assert cluster.status["phase"] == "failed"
    assert conditions(cluster.status) == [("Failed", "True", "Failed")]
    cluster.nodes["node-99"] = make_node("node-99")
    cluster.remove_pod("node-00")
    later = cluster.step()
    assert (later.create_pods, later.deletes, later.events) == ((), (), ())
    assert later.status is not None  # counts are still refreshed (RC13)
    assert (later.status["succeeded"], later.status["failed"]) == (1, 0)
    assert cluster.status["phase"] == "failed"


def test_F13_unknown_failure_policy_behaves_like_continue() -> None:
    spec = unchecked(make_spec(), failure_type="Retry")
    plan = pass_over(spec, [make_pod("node-00", "Failed", spec=spec)], nodes=3, options=COMPAT)
    assert plan.status is not None and plan.status["phase"] == "running"
    assert created_nodes(plan) == ["node-01", "node-02"]
    assert plan.events == ()


@pytest.mark.parametrize("policy", ["Continue", "Pause", "FailFast"])
def test_F14_deleting_a_failed_pod_of_an_unfinished_job_reruns_its_node(policy: str) -> None:
    """FailFast: the failed pod was removed before any pass saw it, so the job is unfinished."""
    spec = make_spec(failure=policy)
    record = make_record(started_status(desired=2, active=1))
    pods = [make_pod("node-01", "Running", spec=spec)]
    if policy == "Pause":
        record = simulate(reconcile_broadcast_job(spec, record, make_nodes(2),
                                                  [*pods, make_pod("node-00", "Failed", spec=spec)], NOW), record)
    plan = reconcile_broadcast_job(spec, record, make_nodes(2), pods, NOW + 1)
    assert created_nodes(plan) == ["node-00"]
