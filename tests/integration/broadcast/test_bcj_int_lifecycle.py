"""Checklist L (L1-L10): nodes joining, leaving and changing, and pods deleted behind the job's back."""

from __future__ import annotations

from typing import Any

import pytest
from bcj_cluster import (
    ATTEMPT_ANNOTATION,
    KIND,
    bcj,
    condition,
    delete_pod_now,
    events,
    pods_by_node,
    reasons,
    wait_pod_phase,
    wait_status,
)
from support.waits import wait_until

from airflow_broadcast.reconcilers.broadcast_job.pods import pod_name_for

pytestmark = pytest.mark.cluster

AFFINITY = "node(s) didn't match Pod's node affinity/selector"
UNSCHEDULABLE = "node(s) were unschedulable"
CORDON_TAINT = "node(s) had taint {node.kubernetes.io/unschedulable: }, that the pod didn't tolerate"


def live_pod_on(engine: Any, job: str, node: str) -> Any:
    pods = [p for p in pods_by_node(engine, job).get(node, []) if not p.metadata.deletion_timestamp]
    return pods[0] if pods else None


def test_L1_a_node_joining_an_unfinished_job_gets_a_pod(
        engine: Any, node_factory: Any, namespace: str, loops: Any) -> None:
    (first,) = node_factory(1, labels={"pool": namespace})
    loops(engine.submit(bcj("l1", namespace, result=None)))
    wait_until(lambda: live_pod_on(engine, "l1", first), what="first pod")

    (joined,) = node_factory(1, labels={"pool": namespace})

    wait_until(lambda: live_pod_on(engine, "l1", joined), what="pod on the joined node")
    assert wait_status(engine, "l1", lambda s: s["active"] == 2)["desired"] == 2


def test_L4_S8_a_deleted_node_loses_no_pod_and_its_pod_still_counts(
        engine: Any, node_factory: Any, namespace: str, core_api: Any, loops: Any) -> None:
    gone, kept = sorted(node_factory(2, labels={"pool": namespace}))
    loops(engine.submit(bcj("l4", namespace, result=None)))
    wait_status(engine, "l4", lambda s: s["active"] == 2, what="both pods active")
    pod = live_pod_on(engine, "l4", gone)

    core_api.delete_node(gone)

    status = wait_status(engine, "l4", lambda s: s["desired"] == 1, what="the node left desired")
    assert status["active"] == 2  # S8: the pod on the missing node still counts
    assert gone not in status["nodes"]
    assert "SuccessfulDelete" not in reasons(engine, "l4")
    still = core_api.read_namespaced_pod(pod.metadata.name, namespace)
    assert still.metadata.uid == pod.metadata.uid and still.metadata.deletion_timestamp is None
    assert live_pod_on(engine, "l4", kept) is not None


def cordon(core_api: Any, node: str) -> tuple[str, ...]:
    core_api.patch_node(node, {"spec": {"unschedulable": True}})
    return (UNSCHEDULABLE, CORDON_TAINT)


def add_taint(core_api: Any, node: str) -> tuple[str, ...]:
    core_api.patch_node(node, {"spec": {"taints": [{"key": "maint", "value": "now", "effect": "NoSchedule"}]}})
    return ("node(s) had taint {maint: now}, that the pod didn't tolerate",)


def drop_label(core_api: Any, node: str) -> tuple[str, ...]:
    core_api.patch_node(node, {"metadata": {"labels": {"pool": None}}})
    return (AFFINITY,)


def shrink(core_api: Any, node: str) -> tuple[str, ...]:
    core_api.patch_node_status(node, {"status": {"allocatable": {"cpu": "500m"}}})
    return ("Insufficient cpu",)


@pytest.mark.parametrize("change", [cordon, add_taint, drop_label, shrink], ids=lambda f: f.__name__)
def test_L5_a_node_turning_ineligible_loses_its_succeeded_pod(
        engine: Any, node_factory: Any, namespace: str, core_api: Any, change: Any) -> None:
    changed, other = sorted(node_factory(2, labels={"pool": namespace}))
    containers = [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]
    submission = engine.submit(bcj("l5", namespace, pod_spec={"containers": containers}))
    engine.drive(submission, KIND, single_pass=True)
    pod = wait_pod_phase(engine, "l5", changed, "Succeeded")
    wait_pod_phase(engine, "l5", other, "Succeeded")

    expected = change(core_api, changed)
    outcome = engine.drive(submission, KIND, single_pass=True)

    # the Succeeded pod is deleted and counted failed in that pass; the other node completes the job
    assert outcome.reason == "finished"
    status = engine.status(KIND, "l5")
    assert (status["desired"], status["succeeded"], status["failed"]) == (1, 2, 1)
    assert status["ineligibleNodes"][changed] in expected
    assert condition(status, "Complete")["message"] == "Job completed, 2 pods succeeded, 1 pods failed"
    assert ("Normal", "SuccessfulDelete", f"Delete pod: {pod.metadata.name}") in events(engine, "l5")
    wait_until(lambda: changed not in pods_by_node(engine, "l5"), what="succeeded pod deleted")


def test_L5_L10_a_running_loop_deletes_the_pod_of_a_node_tainted_under_it(
        engine: Any, node_factory: Any, namespace: str, core_api: Any, loops: Any) -> None:
    tainted, other = sorted(node_factory(2, labels={"pool": namespace}))
    submission = engine.submit(bcj("l5b", namespace, result=None))
    loops(submission)
    wait_status(engine, "l5b", lambda s: s["active"] == 2, what="both pods active")
    pod_name = pod_name_for("l5b", submission.uid, tainted)

    add_taint(core_api, tainted)

    messages = wait_until(lambda: [m for _, r, m in events(engine, "l5b") if r == "SuccessfulDelete"],
                          what="pod deleted")
    assert messages == [f"Delete pod: {pod_name}"]
    status = wait_status(engine, "l5b", lambda s: s["desired"] == 1, what="node left desired")
    assert tainted in status["ineligibleNodes"]
    wait_until(lambda: tainted not in pods_by_node(engine, "l5b"), what="pod gone")
    assert live_pod_on(engine, "l5b", other) is not None


def untaint(core_api: Any, node: str) -> None:
    core_api.patch_node(node, {"spec": {"taints": None}})


def uncordon(core_api: Any, node: str) -> None:
    core_api.patch_node(node, {"spec": {"unschedulable": False}})


def add_label(core_api: Any, node: str, pool: str) -> None:
    core_api.patch_node(node, {"metadata": {"labels": {"pool": pool}}})


@pytest.mark.parametrize("fix", ["untaint", "uncordon", "add_label"])
def test_L6_a_node_turning_eligible_gets_a_pod(
        engine: Any, node_factory: Any, namespace: str, core_api: Any, loops: Any, fix: str) -> None:
    (ready,) = node_factory(1, labels={"pool": namespace})
    if fix == "untaint":
        (late,) = node_factory(1, labels={"pool": namespace},
                               taints=[{"key": "maint", "value": "now", "effect": "NoSchedule"}])
    elif fix == "uncordon":
        (late,) = node_factory(1, labels={"pool": namespace}, unschedulable=True)
    else:
        (late,) = node_factory(1, labels={"other": namespace})
    loops(engine.submit(bcj("l6", namespace, result=None)))
    wait_until(lambda: live_pod_on(engine, "l6", ready), what="first pod")
    assert late not in pods_by_node(engine, "l6")

    if fix == "untaint":
        untaint(core_api, late)
    elif fix == "uncordon":
        uncordon(core_api, late)
    else:
        add_label(core_api, late, namespace)

    wait_until(lambda: live_pod_on(engine, "l6", late), what="pod on the node that became eligible")
    assert wait_status(engine, "l6", lambda s: s["desired"] == 2)["active"] == 2


def test_L8_L10_a_pod_deleted_by_hand_is_created_again(
        engine: Any, node_factory: Any, namespace: str, core_api: Any, loops: Any) -> None:
    """A second node's pod keeps running, so the job stays unfinished while the first node has no pod; the
    deletion has no grace period (see delete_pod_now), and S7 tests a graceful one."""
    node, other = node_factory(2, labels={"pool": namespace})
    loops(engine.submit(bcj("l8", namespace, result=None)))
    pod = wait_until(lambda: live_pod_on(engine, "l8", node), what="pod")
    wait_until(lambda: live_pod_on(engine, "l8", other), what="the other node's pod")
    wait_status(engine, "l8", lambda s: all(s["nodes"].get(n, {}).get("phase") == "Running" for n in (node, other)),
                what="pods recorded")

    delete_pod_now(core_api, pod.metadata.name, namespace)

    again = wait_until(lambda: next((p for p in pods_by_node(engine, "l8").get(node, [])
                                     if p.metadata.uid != pod.metadata.uid), None), what="pod created again")
    assert again.metadata.name == pod.metadata.name  # the same deterministic name, a new object
    assert again.metadata.annotations[ATTEMPT_ANNOTATION] == "2"
    assert "SuccessfulDelete" not in reasons(engine, "l8")


def test_L12_a_succeeded_pod_deleted_by_hand_is_not_run_again(
        engine: Any, node_factory: Any, namespace: str, core_api: Any) -> None:
    """The node's recorded success outlives its pod, so PodGC or a cleanup does not re-run it."""
    (node,) = node_factory(1, labels={"pool": namespace})
    submission = engine.submit(bcj("l12", namespace, completionPolicy={"type": "Never"}))
    engine.drive(submission, KIND, single_pass=True)
    pod = wait_pod_phase(engine, "l12", node, "Succeeded")
    engine.drive(submission, KIND, single_pass=True)
    assert engine.status(KIND, "l12")["nodes"][node]["phase"] == "Succeeded"

    core_api.delete_namespaced_pod(pod.metadata.name, namespace)
    wait_until(lambda: not pods_by_node(engine, "l12").get(node), what="pod gone")
    engine.drive(submission, KIND, single_pass=True)

    assert pods_by_node(engine, "l12").get(node) is None
    status = engine.status(KIND, "l12")
    assert (status["succeeded"], status["active"], status["desired"]) == (1, 0, 1)
    assert status["nodes"][node]["pod"] == pod.metadata.name
    assert [m for _, r, m in events(engine, "l12") if r == "SuccessfulCreate"] == [f"Created pod: {pod.metadata.name}"]
