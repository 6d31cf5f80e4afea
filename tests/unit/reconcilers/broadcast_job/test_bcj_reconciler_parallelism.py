"""Parallelism and creation (checklist E: R1-R6, R9, R10-R16) at the level of one pure pass.

The executor does the slow-start batching, the 409/404 idempotence and the error
handling (R6 batches, R7, R8, R9's execution); these tests pin what the plan hands it.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from support.bcj_builders import (
    COMPAT,
    FIXED,
    MODES,
    NOW,
    BCJCluster,
    created_nodes,
    make_node,
    make_nodes,
    make_pod,
    make_record,
    make_spec,
    reasons,
    simulate,
    started_status,
    unchecked,
)

from airflow_broadcast.reconcilers.broadcast_job.reconciler import (
    INVALID_PARALLELISM,
    PARALLELISM_RETRY_SECONDS,
    BroadcastOptions,
    reconcile_broadcast_job,
)
from airflow_broadcast.reconcilers.observed import NodeInfo, PodInfo
from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.specs.broadcast_job.spec import DEFAULT_PARALLELISM, BroadcastJobSpec


def one_pass(spec: BroadcastJobSpec, nodes: list[NodeInfo], pods: list[PodInfo] | None = None,
             options: BroadcastOptions = FIXED, status: dict[str, object] | None = None) -> Plan:
    record = make_record(started_status() if status is None else status)
    return reconcile_broadcast_job(spec, record, nodes, pods or [], NOW, options)


def running_on(nodes: list[NodeInfo], count: int, spec: BroadcastJobSpec) -> list[PodInfo]:
    return [make_pod(n.name, "Running", spec=spec) for n in nodes[:count]]


@pytest.mark.parametrize(("parallelism", "active", "nodes", "expected"), [
    (2, 0, 5, 2),
    (3, 1, 5, 2),
    (10, 2, 5, 3),
    (1, 1, 5, 0),
    (4, 0, 3, 3),
])
def test_R1_int_parallelism_creates_min_of_free_slots_and_empty_eligible_nodes(
        parallelism: int, active: int, nodes: int, expected: int) -> None:
    spec = make_spec(parallelism=parallelism)
    cluster_nodes = make_nodes(nodes)
    plan = one_pass(spec, cluster_nodes, running_on(cluster_nodes, active, spec))
    assert len(created_nodes(plan)) == expected
    assert set(created_nodes(plan)).isdisjoint(n.name for n in cluster_nodes[:active])


@pytest.mark.parametrize(("parallelism", "nodes", "succeeded", "expected"), [
    ("40%", 5, 0, 2),
    ("50%", 10, 0, 5),
    ("33%", 10, 0, 4),      # rounded up
    ("150%", 10, 0, 10),    # above 100%: capped only by the empty nodes
    ("50%", 10, 4, 5),      # Q14: percent of all desired nodes, finished ones included
    ("10%", 10, 9, 1),
])
def test_R2_percent_parallelism_is_ceil_of_percent_of_desired(
        parallelism: str, nodes: int, succeeded: int, expected: int) -> None:
    spec = make_spec(parallelism=parallelism)
    cluster_nodes = make_nodes(nodes)
    pods = [make_pod(n.name, "Succeeded", spec=spec) for n in cluster_nodes[:succeeded]]
    plan = one_pass(spec, cluster_nodes, pods)
    assert plan.status is not None and plan.status["desired"] == nodes
    assert len(created_nodes(plan)) == expected


def test_R3_absent_parallelism_is_unlimited() -> None:
    spec = make_spec()
    assert spec.parallelism == DEFAULT_PARALLELISM == 2147483647
    nodes = make_nodes(7)
    plan = one_pass(spec, nodes)
    assert created_nodes(plan) == [n.name for n in nodes]


@pytest.mark.parametrize("parallelism", [0, "0%"])
def test_R4_zero_parallelism_holds_without_event(parallelism: int | str) -> None:
    plan = one_pass(make_spec(parallelism=parallelism), make_nodes(3))
    assert plan.create_pods == () or plan.create_limit == 0
    assert created_nodes(plan) == []
    assert plan.events == ()
    assert plan.status is not None and plan.status["phase"] == "running"


def test_R4_zero_parallelism_with_active_pods_is_R5() -> None:
    spec = make_spec(parallelism=0)
    nodes = make_nodes(3)
    plan = one_pass(spec, nodes, running_on(nodes, 1, spec))
    assert reasons(plan) == ["TooManyActivePods"]
    assert created_nodes(plan) == []


def test_R5_more_active_than_parallelism_warns_and_neither_creates_nor_deletes() -> None:
    spec = make_spec(parallelism=2)
    nodes = make_nodes(5)
    plan = one_pass(spec, nodes, running_on(nodes, 3, spec))
    assert [(e.type, e.reason, e.message) for e in plan.events] == [
        ("Warning", "TooManyActivePods", "Number of active pods exceed parallelism limit")]
    assert created_nodes(plan) == []
    assert plan.deletes == ()
    assert plan.status is not None and plan.status["active"] == 3


def test_R5_active_equal_to_parallelism_does_nothing_and_no_event() -> None:
    spec = make_spec(parallelism=2)
    nodes = make_nodes(5)
    plan = one_pass(spec, nodes, running_on(nodes, 2, spec))
    assert plan.events == ()
    assert created_nodes(plan) == []


def test_R5_no_warning_when_no_eligible_node_is_empty() -> None:
    """reconcilePods only runs when some eligible node has no pod."""
    spec = make_spec(parallelism=1)
    nodes = make_nodes(3)
    plan = one_pass(spec, nodes, running_on(nodes, 3, spec))
    assert plan.events == ()


def test_R6_plan_hands_every_create_to_the_slow_start_executor() -> None:
    """The pass plans all 10 creates at once; the executor cuts them into 1, 2, 4, 3."""
    nodes = make_nodes(10)
    plan = one_pass(make_spec(), nodes)
    assert len(plan.create_pods) == 10
    assert plan.create_limit == 10
    assert plan.active_counts == "created"
    assert created_nodes(plan) == sorted(n.name for n in nodes)


@pytest.mark.parametrize(("mode", "counts"), [("fixed", "created"), ("compat", "attempted")])
def test_R9_planned_creates_are_not_in_active_and_the_plan_says_which_executed_ones_are(
        mode: str, counts: str) -> None:
    """Pure part of R9: the status carries observed pods only, and the plan names the creates the
    executor adds to `active` once it knows them: successes (fixed) or every create sent (compat)."""
    spec = make_spec(parallelism=3)
    nodes = make_nodes(5)
    pods = running_on(nodes, 1, spec)
    plan = one_pass(spec, nodes, pods, options=MODES[mode])
    assert plan.status is not None and plan.status["active"] == 1
    assert plan.active_counts == counts
    assert len(created_nodes(plan)) == 2
    record = make_record(started_status())
    failed_both = simulate(plan, record, created=0).status["active"]
    assert failed_both == (1 if mode == "fixed" else 3)
    assert simulate(plan, record, created=1).status["active"] == (2 if mode == "fixed" else 3)
    other = one_pass(spec, nodes, pods, options=COMPAT if mode == "fixed" else FIXED)
    assert replace(other, active_counts=counts) == plan, "the modes differ in the rule only"


def test_R10_pass_leaves_per_child_events_to_the_executor() -> None:
    """SuccessfulCreate / FailedCreate / SuccessfulDelete are recorded per child by the executor."""
    spec = make_spec(pod_spec={"nodeSelector": {"role": "w"}})
    nodes = [make_node("node-00", labels={"role": "w"}), make_node("node-01", labels={"role": "w"}),
             make_node("node-02")]
    misfit = make_pod("node-02", "Running", spec=spec)  # its node lost the label
    plan = one_pass(spec, nodes, [misfit])
    assert plan.deletes and plan.create_pods
    assert not {"SuccessfulCreate", "FailedCreate", "SuccessfulDelete"} & set(reasons(plan))


def test_R11_no_creation_while_the_job_is_being_deleted() -> None:
    spec = make_spec()
    record = make_record(started_status(), deleting=True)
    plan = reconcile_broadcast_job(spec, record, make_nodes(3), [], NOW)
    assert created_nodes(plan) == []
    assert plan.status is not None and plan.status["desired"] == 3


def test_R12_no_creation_when_paused() -> None:
    plan = one_pass(make_spec(paused=True), make_nodes(3))
    assert plan.create_pods == ()


def test_R12_no_creation_in_phase_failed() -> None:
    spec = make_spec(completion="Never")
    status = started_status(phase="failed", failed=1)
    status["conditions"] = [{"type": "Failed", "status": "True"}]
    plan = one_pass(spec, make_nodes(3), [], status=status)
    assert plan.create_pods == ()


def test_R12_no_creation_when_the_job_fails_in_this_pass() -> None:
    spec = make_spec()
    nodes = make_nodes(4)
    plan = one_pass(spec, nodes, [make_pod("node-00", "Failed", spec=spec)])
    assert plan.status is not None and plan.status["phase"] == "failed"
    assert plan.create_pods == ()


def test_R12_no_creation_when_paused_by_policy() -> None:
    spec = make_spec(failure="Pause")
    plan = one_pass(spec, make_nodes(4), [make_pod("node-00", "Failed", spec=spec)])
    assert plan.create_pods == ()


@pytest.mark.parametrize("mode", ["fixed", "compat"])
def test_R13_parallelism_string_without_percent_creates_nothing_but_writes_counts(mode: str) -> None:
    spec = unchecked(make_spec(), parallelism="5")
    nodes = make_nodes(3)
    plan = one_pass(spec, nodes, [make_pod("node-00", "Running", spec=spec)], options=MODES[mode])
    assert created_nodes(plan) == []
    assert plan.status is not None
    assert (plan.status["desired"], plan.status["active"]) == (3, 1)


@pytest.mark.parametrize("mode", ["fixed", "compat"])
def test_R13_a_malformed_parallelism_is_an_error_the_pass_reports_and_retries(mode: str) -> None:
    """Upstream's reconcilePods returns the error, which is logged and requeued: here a Warning on the job
    names the field, the value and the fault, and the plan asks for a pass again soon."""
    spec = unchecked(make_spec(), parallelism="5")
    plan = one_pass(spec, make_nodes(3), options=MODES[mode])
    assert [(e.type, e.reason) for e in plan.events] == [("Warning", INVALID_PARALLELISM)]
    message = plan.events[0].message
    assert message.startswith('spec.parallelism: Invalid value: "5": a string must be a percentage such as "50%"')
    assert plan.requeue_after == PARALLELISM_RETRY_SECONDS
    assert created_nodes(plan) == [] and plan.finished is False


@pytest.mark.parametrize(("parallelism", "fault"), [("abc%", "a percentage must be"), ("", "a string must be")])
def test_R13_other_malformed_strings_are_reported_the_same_way(parallelism: str, fault: str) -> None:
    plan = one_pass(unchecked(make_spec(), parallelism=parallelism), make_nodes(2))
    assert reasons(plan) == [INVALID_PARALLELISM]
    assert plan.events[0].message.startswith(f'spec.parallelism: Invalid value: "{parallelism}": {fault}')
    assert plan.requeue_after == PARALLELISM_RETRY_SECONDS


def test_R13_the_retry_does_not_postpone_an_earlier_timer() -> None:
    """A deadline closer than the retry keeps its own time (the plan takes the earliest)."""
    spec = unchecked(make_spec(ads=15), parallelism="5")
    plan = one_pass(spec, make_nodes(2), status=started_status(start=NOW - 10))
    assert plan.requeue_after == pytest.approx(5.0)
    assert reasons(plan) == [INVALID_PARALLELISM]
    far = one_pass(unchecked(make_spec(ads=3600), parallelism="5"), make_nodes(2))
    assert far.requeue_after == PARALLELISM_RETRY_SECONDS


@pytest.mark.parametrize("parallelism", [2, "50%", 0])
def test_R13_a_valid_parallelism_gets_no_retry_and_no_error(parallelism: int | str) -> None:
    plan = one_pass(make_spec(parallelism=parallelism), make_nodes(3))
    assert plan.requeue_after is None
    assert INVALID_PARALLELISM not in reasons(plan)


def test_R14_active_for_parallelism_includes_pods_on_missing_nodes_only_live_ones() -> None:
    spec = make_spec(parallelism=3)
    nodes = make_nodes(5)
    pods = [
        make_pod("gone-node", "Running", spec=spec),                   # counts: node deleted
        make_pod("node-00", "Pending", spec=spec),                     # counts
        make_pod("node-01", "Running", spec=spec, deleting=True),      # terminating: does not count
        make_pod("node-02", "Succeeded", spec=spec),                   # terminal: does not count
    ]
    plan = one_pass(spec, nodes, pods)
    assert plan.status is not None and plan.status["active"] == 2
    assert created_nodes(plan) == ["node-03"]


def test_R15_restart_failed_running_pods_free_their_slot() -> None:
    spec = make_spec(parallelism=1, failure="Continue", restart_policy="OnFailure", restart_limit=2)
    nodes = make_nodes(3)
    flapping = make_pod("node-00", "Running", spec=spec, restarts=3)
    plan = one_pass(spec, nodes, [flapping])
    assert plan.status is not None and (plan.status["active"], plan.status["failed"]) == (0, 1)
    assert created_nodes(plan) == ["node-01"]


def test_R16_creation_order_is_by_node_name_whatever_the_list_order() -> None:
    nodes = make_nodes(12)
    shuffled = list(nodes)
    random.Random(7).shuffle(shuffled)
    spec = make_spec(parallelism=5)
    plan = one_pass(spec, shuffled)
    assert created_nodes(plan) == [n.name for n in nodes[:5]]
    assert one_pass(spec, list(reversed(shuffled))) == plan


def test_R1_multi_pass_parallelism_fills_slots_as_pods_finish() -> None:
    cluster = BCJCluster(make_spec(parallelism=2), make_nodes(5))
    assert created_nodes(cluster.step()) == ["node-00", "node-01"]
    assert cluster.status["active"] == 2
    assert created_nodes(cluster.step()) == []
    cluster.set_phase("Succeeded", ["node-00"])
    assert created_nodes(cluster.step()) == ["node-02"]
    assert cluster.status["active"] == 2
