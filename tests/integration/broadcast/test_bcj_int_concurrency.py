"""Checklist M (X1, X5, X6) and P10: two reconcile loops on one job, and creates that find the pod already there."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from bcj_cluster import KIND, bcj, condition, events, job_pods, owned_pod, pods_by_node, reasons

from airflow_broadcast.reconcilers.broadcast_job.pods import pod_name_for

pytestmark = pytest.mark.cluster


def drive_concurrently(engine: Any, submission: Any, copies: int, **drive: Any) -> list[Any]:
    """Run `copies` reconcile loops on the same record at once, each in its own thread and event loop."""
    outcomes: list[Any] = []
    errors: list[BaseException] = []
    start = threading.Barrier(copies)

    def run() -> None:
        start.wait()
        try:
            outcomes.append(engine.drive(submission, KIND, **drive))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(copies)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    return outcomes


def test_X5_X1_P10_two_loops_on_one_job_create_one_pod_per_node_and_finish_once(
        engine: Any, node_factory: Any, namespace: str) -> None:
    nodes = node_factory(4, labels={"pool": namespace})
    submission = engine.submit(bcj("x5", namespace, after="1s"))

    outcomes = drive_concurrently(engine, submission, 2)

    assert [o.reason for o in outcomes] == ["finished", "finished"]
    by_node = pods_by_node(engine, "x5")
    assert sorted(by_node) == sorted(nodes)
    assert all(len(pods) == 1 for pods in by_node.values())
    status = engine.status(KIND, "x5")
    assert (status["phase"], status["desired"], status["succeeded"], status["failed"]) == ("completed", 4, 4, 0)
    assert len(status["conditions"]) == 1
    assert condition(status, "Complete")["message"] == "Job completed, 4 pods succeeded, 0 pods failed"
    assert "FailedCreate" not in reasons(engine, "x5")
    assert "DuplicatePodCreatedOnSameNode" not in reasons(engine, "x5")


def test_X6_a_create_that_finds_its_own_pod_already_there_adopts_it(
        engine: Any, node_factory: Any, namespace: str, core_api: Any) -> None:
    (node,) = node_factory(1, labels={"pool": namespace})
    submission = engine.submit(bcj("x6", namespace, result=None))
    name = pod_name_for("x6", submission.uid, node)
    # created by "another loop" and not yet seen by this one (no index label, so its watch misses it)
    early = core_api.create_namespaced_pod(namespace, owned_pod(namespace, "x6", submission.uid, node, name,
                                                               labels=False, result=None))

    engine.drive(submission, KIND, single_pass=True)

    assert "FailedCreate" not in reasons(engine, "x6")
    assert core_api.read_namespaced_pod(name, namespace).metadata.uid == early.metadata.uid
    assert engine.status(KIND, "x6")["active"] == 1


def test_X6_E1_an_adopted_pod_is_not_reported_as_created_again(
        engine: Any, node_factory: Any, namespace: str, core_api: Any) -> None:
    (node,) = node_factory(1, labels={"pool": namespace})
    submission = engine.submit(bcj("x6e", namespace, result=None))
    name = pod_name_for("x6e", submission.uid, node)
    core_api.create_namespaced_pod(namespace, owned_pod(namespace, "x6e", submission.uid, node, name,
                                                       labels=False, result=None))

    engine.drive(submission, KIND, single_pass=True)

    assert reasons(engine, "x6e") == []


def test_X6_R10_a_create_blocked_by_a_foreign_pod_of_the_same_name_is_a_failed_create(
        engine: Any, node_factory: Any, namespace: str, core_api: Any) -> None:
    (node,) = node_factory(1, labels={"pool": namespace})
    submission = engine.submit(bcj("x6f", namespace, result=None))
    name = pod_name_for("x6f", submission.uid, node)
    core_api.create_namespaced_pod(namespace, owned_pod(namespace, "x6f", submission.uid, node, name,
                                                       labels=False, owner=False, result=None))

    engine.drive(submission, KIND, single_pass=True)

    assert engine.status(KIND, "x6f")["active"] == 0
    assert job_pods(engine, "x6f") == []
    failed = [(t, m) for t, r, m in events(engine, "x6f") if r == "FailedCreate"]
    assert len(failed) == 1
    assert failed[0][0] == "Warning"
    assert failed[0][1].startswith("Error creating: ") and "already exists" in failed[0][1]
