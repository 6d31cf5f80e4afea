"""Which pod changes a BroadcastJob acts on at once, and which only move counts (a pass within a second)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.bcj_builders import make_pod

from airflow_broadcast.reconcilers.broadcast_job.kind import BroadcastJobKind
from airflow_broadcast.reconcilers.tf_job.kind import TFJobKind

KIND = BroadcastJobKind()


def test_a_pending_pod_that_starts_running_only_moves_counts() -> None:
    assert KIND.lazy_child_change(make_pod("n1", "Pending"), make_pod("n1", "Running"))


def test_a_running_pod_that_changes_nothing_a_pass_reads_only_moves_counts() -> None:
    assert KIND.lazy_child_change(make_pod("n1", "Running"), make_pod("n1", "Running"))


@pytest.mark.parametrize(("before", "after", "why"), [
    (make_pod("n1", "Running"), make_pod("n1", "Succeeded", exit_code=0), "a finished pod can finish the job"),
    (make_pod("n1", "Running"), make_pod("n1", "Failed", exit_code=1), "a failed pod can fail the job"),
    (make_pod("n1", "Running", restart_policy="OnFailure"),
     make_pod("n1", "Running", restart_policy="OnFailure", restarts=1), "restarts count against the limit"),
    (make_pod("n1", "Running"), make_pod("n1", "Running", deleting=True), "a pod being deleted"),
    (make_pod("n1", "Pending"), make_pod("n1", "Pending", unschedulable="0/3 nodes are available"),
     "an unschedulable pod is reported"),
    (make_pod("n1", "Running"), replace(make_pod("n1", "Running"), waiting_reason="CrashLoopBackOff"),
     "a waiting container is shown"),
    (make_pod("n1", "Running"), make_pod("n1", "Running", owned=False), "a pod that lost its owner"),
    (make_pod("n1", "Running"), make_pod("n1", "Running", labels={"extra": "x"}), "changed labels"),
    (make_pod("n1", "Running"), make_pod("n1", "Running", spec_changes={"nodeSelector": {"a": "b"}}),
     "changed placement fields"),
])
def test_a_change_a_pass_decides_on_is_acted_on_at_once(before: object, after: object, why: str) -> None:
    assert not KIND.lazy_child_change(before, after), why


def test_a_new_or_removed_pod_is_acted_on_at_once() -> None:
    assert not KIND.lazy_child_change(None, make_pod("n1", "Running"))
    assert not KIND.lazy_child_change(make_pod("n1", "Running"), None)


def test_every_tfjob_pod_change_is_acted_on_at_once() -> None:
    """A replica that starts running can set the TFJob's Running condition."""
    assert not TFJobKind().lazy_child_change(make_pod("n1", "Pending"), make_pod("n1", "Running"))
