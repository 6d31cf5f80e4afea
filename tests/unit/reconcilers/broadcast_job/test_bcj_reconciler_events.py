"""Job events the pure pass emits (checklist N: E4-E10): type, reason and exact message.

E1-E3 (SuccessfulCreate, FailedCreate, SuccessfulDelete) are per-child events the
executor records; they are not part of a plan.
"""

from __future__ import annotations

import pytest
from support.bcj_builders import (
    COMPAT,
    FIXED,
    MODES,
    NOW,
    BCJCluster,
    make_nodes,
    make_pod,
    make_record,
    make_spec,
    started_status,
)

from airflow_broadcast.reconcilers.broadcast_job.reconciler import BroadcastOptions, reconcile_broadcast_job
from airflow_broadcast.reconcilers.observed import PodInfo
from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.specs.broadcast_job.spec import BroadcastJobSpec


def triples(plan: Plan) -> list[tuple[str, str, str]]:
    return [(e.type, e.reason, e.message) for e in plan.events]


def one_pass(spec: BroadcastJobSpec, pods: list[PodInfo], nodes: int = 3,
             options: BroadcastOptions = FIXED, phase: str = "running") -> Plan:
    return reconcile_broadcast_job(spec, make_record(started_status(phase=phase)), make_nodes(nodes), pods, NOW,
                                   options)


@pytest.mark.parametrize("mode", list(MODES))
def test_E4_too_many_active_pods(mode: str) -> None:
    spec = make_spec(parallelism="50%")
    pods = [make_pod("node-00", spec=spec), make_pod("node-01", spec=spec), make_pod("node-02", spec=spec)]
    plan = one_pass(spec, pods, nodes=4, options=MODES[mode])
    assert triples(plan) == [("Warning", "TooManyActivePods", "Number of active pods exceed parallelism limit")]


@pytest.mark.parametrize("mode", list(MODES))
def test_E5_duplicate_pod_created_on_same_node(mode: str) -> None:
    spec = make_spec(completion="Never")
    pods = [make_pod("node-00", spec=spec), make_pod("node-00", spec=spec, name="bcj-x", uid="u-x"),
            make_pod("node-00", spec=spec, name="bcj-y", uid="u-y")]
    plan = one_pass(spec, pods, nodes=1, options=MODES[mode])
    assert triples(plan) == [
        ("Warning", "DuplicatePodCreatedOnSameNode", "Duplicated pod bcj-x found on same node node-00"),
        ("Warning", "DuplicatePodCreatedOnSameNode", "Duplicated pod bcj-y found on same node node-00"),
    ]


@pytest.mark.parametrize("mode", list(MODES))
def test_E6_continue_on_unpause(mode: str) -> None:
    plan = one_pass(make_spec(), [], options=MODES[mode], phase="paused")
    assert triples(plan) == [("Normal", "Continue", "continue to process job")]


@pytest.mark.parametrize("mode", list(MODES))
def test_E7_paused_by_failure_policy(mode: str) -> None:
    spec = make_spec(failure="Pause")
    plan = one_pass(spec, [make_pod("node-00", "Failed", spec=spec)], options=MODES[mode])
    assert triples(plan) == [("Warning", "Paused", "job is paused, due to failed pod")]


@pytest.mark.parametrize(("options", "counts"), [(FIXED, ["1 pods succeeded, 3 pods failed"]),
                                                 (COMPAT, ["1 pods succeeded, 1 pods failed",
                                                           "1 pods succeeded, 3 pods failed"])])
def test_E8_failed_pod_is_found_once_fixed_twice_compat(options: BroadcastOptions, counts: list[str]) -> None:
    spec = make_spec()
    pods = [make_pod("node-00", "Failed", spec=spec), make_pod("node-01", "Succeeded", spec=spec),
            make_pod("node-02", spec=spec), make_pod("node-03", spec=spec)]
    plan = one_pass(spec, pods, nodes=4, options=options)
    prefix = "failure policy is FailurePolicyTypeFailFast and failed pod is found: "
    assert triples(plan) == [("Warning", "failed pod is found", prefix + c) for c in counts]


@pytest.mark.parametrize("mode", list(MODES))
def test_E9_deadline_exceeded(mode: str) -> None:
    spec = make_spec(ads=5)
    plan = one_pass(spec, [make_pod("node-00", spec=spec), make_pod("node-01", "Succeeded", spec=spec)],
                    options=MODES[mode])
    assert triples(plan) == [("Warning", "DeadlineExceeded",
                              "Job ops/bcj was active longer than specified deadline: 1 pods succeeded, 1 pods failed")]


@pytest.mark.parametrize("mode", list(MODES))
def test_E10_job_complete(mode: str) -> None:
    cluster = BCJCluster(make_spec(failure="Continue"), make_nodes(3), options=MODES[mode])
    cluster.step()
    cluster.set_phase("Succeeded", ["node-00", "node-01"])
    cluster.set_phase("Failed", ["node-02"])
    plan = cluster.step()
    assert triples(plan) == [("Normal", "JobComplete", "Job ops/bcj is completed, 2 pods succeeded, 1 pods failed")]


def test_E10_no_job_events_on_an_uneventful_pass() -> None:
    cluster = BCJCluster(make_spec(), make_nodes(3))
    cluster.step()
    cluster.set_phase("Running")
    for _ in range(3):
        assert cluster.step().events == ()
