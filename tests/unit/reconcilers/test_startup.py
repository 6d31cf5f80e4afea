"""The start-up timeout decision: which pod has been Pending too long, counted from its own creation."""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.tf_builders import make_pod

from airflow_broadcast.reconcilers.observed import PodInfo
from airflow_broadcast.reconcilers.startup import StartupStall, check_startup, starting_cause

NOW = 1_800_000_000.0


def pod(index: int, phase: str = "Pending", age: float = 0.0, **changes: object) -> PodInfo:
    return replace(make_pod("mnist", "Worker", index, phase, created_at=NOW - age), **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [None, 0, 0.0])
def test_no_timeout_checks_nothing(timeout: float | None) -> None:
    result = check_startup([pod(0, age=10_000)], NOW, timeout)
    assert result.stall is None and result.next_check is None


def test_a_young_pending_pod_sets_the_next_check_at_its_creation_plus_the_timeout() -> None:
    result = check_startup([pod(0, age=30), pod(1, age=50)], NOW, 120)
    assert result.stall is None
    assert result.next_check == NOW - 50 + 120  # the oldest starting pod crosses first


def test_the_oldest_overdue_pod_is_named_with_its_node_cause_and_the_count_of_others() -> None:
    pods = [pod(0, age=200, waiting_reason="ImagePullBackOff", node="gpu-7"),
            pod(1, age=300, pending_message="Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.", node=""),
            pod(2, age=60)]
    stall = check_startup(pods, NOW, 120).stall
    assert stall == StartupStall(pod="mnist-worker-1", node="", seconds=300.0,
                                 cause="Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.", others=1)
    text = stall.describe(120)
    assert text.startswith("pod mnist-worker-1 (not scheduled to a node) has been starting for 300 s, "
                           "longer than startup_timeout_seconds=120: Unschedulable: 0/3 nodes")
    assert text.endswith("; 1 more pod(s) are past the start-up timeout too")


def test_a_pod_exactly_at_the_timeout_is_not_overdue_yet() -> None:
    result = check_startup([pod(0, age=120)], NOW, 120)
    assert result.stall is None and result.next_check == NOW


@pytest.mark.parametrize("other", [
    pod(0, "Running", age=900), pod(0, "Succeeded", age=900), pod(0, "Failed", age=900),
    pod(0, age=900, deleting=True), pod(0, age=900, created_at=0.0),
])
def test_started_finished_deleting_or_undated_pods_never_stall(other: PodInfo) -> None:
    result = check_startup([other], NOW, 120)
    assert result == check_startup([], NOW, 120)
    assert result.stall is None and result.next_check is None


def test_a_pod_without_any_status_yet_counts_as_starting() -> None:
    stall = check_startup([pod(0, phase="", age=500, node="")], NOW, 120).stall
    assert stall is not None and stall.cause == "Pending: not scheduled yet"


@pytest.mark.parametrize(("changes", "cause"), [
    ({"waiting_reason": "ErrImagePull", "pending_message": ""}, "ErrImagePull"),
    ({"waiting_reason": "", "pending_message": "Unschedulable: node(s) had untolerated taint"},
     "Unschedulable: node(s) had untolerated taint"),
    ({"waiting_reason": "", "pending_message": "", "node": "n1"}, "Pending"),
])
def test_the_cause_is_the_waiting_reason_else_the_schedulers_message(changes: dict[str, str], cause: str) -> None:
    assert starting_cause(pod(0, **changes)) == cause


def test_a_stall_survives_a_restart_because_it_counts_from_the_creation_timestamp() -> None:
    pods = [pod(0, age=100)]
    assert check_startup(pods, NOW, 120).stall is None
    later = check_startup(pods, NOW + 21, 120).stall  # a new trigger 21 s later reads the same pod
    assert later is not None and later.seconds == 121
