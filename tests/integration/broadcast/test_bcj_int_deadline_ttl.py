"""Checklist I (D1-D10) and J (T1-T7): the active deadline and TTL after finishing, on the real cluster."""

from __future__ import annotations

import time
from typing import Any

import pytest
from bcj_cluster import KIND, bcj, condition, events, job_pods, pause_until, reasons, wait_pod_phase
from support.waits import wait_until

from airflow_broadcast.cluster.job_records import EXPIRES_AT, RESULT_READ
from airflow_broadcast.cluster.ttl_sweeper import UNREAD_GRACE_SECONDS, sweep_expired_records
from airflow_broadcast.specs.timestamps import from_rfc3339, to_rfc3339

pytestmark = pytest.mark.cluster

FAILFAST = "failure policy is FailurePolicyTypeFailFast and failed pod is found"


def deadline_message(namespace: str, job: str) -> str:
    return f"Job {namespace}/{job} was active longer than specified deadline"


def deadline_at(engine: Any, job: str, ads: int) -> float:
    """When the deadline passes: persisted startTime + activeDeadlineSeconds (D1/D2)."""
    started = from_rfc3339(engine.status(KIND, job)["startTime"])
    assert started is not None
    return started + ads


def sweep(engine: Any, now: float) -> list[str]:
    return engine.run_async(lambda kube: sweep_expired_records(kube, engine.namespace, now=now))


# ---- active deadline ------------------------------------------------------------------------

def test_D3_D8_D9_deadline_fires_by_itself_while_pods_run_forever(
        engine: Any, node_factory: Any, namespace: str, loops: Any) -> None:
    node_factory(2, labels={"pool": namespace})
    manifest = bcj("d3", namespace, result=None, completionPolicy={"type": "Always", "activeDeadlineSeconds": 3})
    # no resync within the test's bound: only the deadline timer can wake the loop once the pods run
    loop = loops(engine.submit(manifest), resync=600)

    outcome = loop.wait(timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "d3")
    assert (status["phase"], status["failed"], status["active"], status["succeeded"]) == ("failed", 2, 0, 0)
    cond = condition(status, "Failed")
    assert cond is not None
    assert (cond["reason"], cond["message"]) == ("Failed", deadline_message(namespace, "d3"))
    assert status["failureReason"] == "DeadlineExceeded"
    assert from_rfc3339(status["completionTime"]) - from_rfc3339(status["startTime"]) >= 3  # D2: never early
    seen = events(engine, "d3")
    assert ("Warning", "DeadlineExceeded", f"{deadline_message(namespace, 'd3')}: 0 pods succeeded, 2 pods failed") in (
        seen)
    assert reasons(engine, "d3").count("SuccessfulDelete") == 2
    wait_until(lambda: job_pods(engine, "d3") == [], what="active pods deleted")


def test_D1_D8_deadline_counts_from_start_time_and_a_new_loop_after_it_fails_the_job_at_once(
        engine: Any, node_factory: Any, namespace: str, loops: Any) -> None:
    node_factory(1, labels={"pool": namespace})
    ads = 2
    submission = engine.submit(bcj("d8", namespace, result=None,
                                   completionPolicy={"type": "Always", "activeDeadlineSeconds": ads}))
    created = from_rfc3339(submission.raw["metadata"]["creationTimestamp"])
    pause_until(created + ads + 1)  # past the deadline if it were counted from creation

    loop = loops(submission)
    wait_until(lambda: len(job_pods(engine, "d8")) == 1, what="pod created")
    loop.stop()  # the triggerer goes away before the deadline
    assert engine.status(KIND, "d8")["phase"] == "running"  # D1: the clock started with the first pass

    pause_until(deadline_at(engine, "d8", ads))
    outcome = engine.drive(submission, KIND, single_pass=True)  # a new loop, nothing else happening

    assert outcome.reason == "finished"
    status = engine.status(KIND, "d8")
    assert status["phase"] == "failed"
    assert condition(status, "Failed")["message"] == deadline_message(namespace, "d8")
    assert "DeadlineExceeded" in reasons(engine, "d8")


def test_D6_deadline_is_not_enforced_while_paused_and_fails_on_unpause(
        engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(1, labels={"pool": namespace})
    ads = 1
    submission = engine.submit(bcj("d6", namespace, result=None, paused=True,
                                   completionPolicy={"type": "Always", "activeDeadlineSeconds": ads}))
    engine.drive(submission, KIND, single_pass=True)
    pause_until(deadline_at(engine, "d6", ads) + 0.5)

    engine.drive(submission, KIND, single_pass=True)
    status = engine.status(KIND, "d6")
    assert status["phase"] == "paused"
    assert not status.get("conditions")

    engine.edit_manifest(KIND, "d6", lambda m: m["spec"].pop("paused"))
    outcome = engine.drive(submission, KIND, single_pass=True)

    assert outcome.reason == "finished"
    assert engine.status(KIND, "d6")["phase"] == "failed"
    assert sorted(reasons(engine, "d6")) == ["Continue", "DeadlineExceeded"]
    assert job_pods(engine, "d6") == []


def test_D7_failfast_message_wins_when_the_deadline_passes_in_the_same_pass(
        engine: Any, node_factory: Any, namespace: str) -> None:
    (node,) = node_factory(1, labels={"pool": namespace})
    ads = 1
    submission = engine.submit(bcj("d7", namespace, result=None, fail_nodes=[node],
                                   completionPolicy={"type": "Always", "activeDeadlineSeconds": ads}))
    engine.drive(submission, KIND, single_pass=True)
    wait_pod_phase(engine, "d7", node, "Failed")
    pause_until(deadline_at(engine, "d7", ads) + 0.5)

    engine.drive(submission, KIND, single_pass=True)

    status = engine.status(KIND, "d7")
    assert condition(status, "Failed")["message"] == FAILFAST
    assert status["failureReason"] == "FailedPodFound"
    assert "DeadlineExceeded" not in reasons(engine, "d7")


def test_D10_deadline_does_not_delete_restart_failed_running_pods(
        engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(1, labels={"pool": namespace})
    manifest = bcj("d10", namespace, result=None, restarts=1, restart_policy="OnFailure",
                   failurePolicy={"type": "Continue"}, completionPolicy={"type": "Always", "activeDeadlineSeconds": 2})

    outcome = engine.drive(engine.submit(manifest), KIND, timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "d10")
    assert (status["phase"], status["failed"], status["active"]) == ("failed", 1, 0)
    assert condition(status, "Failed")["message"] == deadline_message(namespace, "d10")
    assert "SuccessfulDelete" not in reasons(engine, "d10")
    (pod,) = job_pods(engine, "d10")
    assert pod.status.phase == "Running" and pod.metadata.deletion_timestamp is None


# ---- TTL after finished ---------------------------------------------------------------------

def test_T1_T5_expired_record_outlives_late_loops_and_is_swept_once_read_then_gc_removes_pods(
        engine: Any, node_factory: Any, namespace: str, core_api: Any) -> None:
    node_factory(2, labels={"pool": namespace})
    ttl = 1
    submission = engine.submit(bcj("t1", namespace,
                                   completionPolicy={"type": "Always", "ttlSecondsAfterFinished": ttl}))

    assert engine.drive(submission, KIND).reason == "finished"
    status = engine.status(KIND, "t1")
    expires = from_rfc3339(status["completionTime"]) + ttl
    record = engine.record(KIND, "t1")
    assert record.metadata.annotations[EXPIRES_AT] == to_rfc3339(expires)
    assert len(job_pods(engine, "t1")) == 2

    pause_until(expires)
    assert engine.drive(submission, KIND).reason == "finished"  # a late loop never deletes the result
    assert engine.record(KIND, "t1") is not None
    core_api.patch_namespaced_config_map(record.metadata.name, namespace,
                                         {"metadata": {"annotations": {RESULT_READ: "true"}}})
    assert sweep(engine, now=time.time()) == [record.metadata.name]

    assert engine.record(KIND, "t1") is None
    wait_until(lambda: job_pods(engine, "t1") == [], timeout=60, what="pods garbage-collected")  # T5


def test_T1_T4_sweeper_deletes_expired_records_once_read_or_after_the_grace(
        engine: Any, node_factory: Any, namespace: str, core_api: Any) -> None:
    node_factory(1, labels={"pool": namespace})
    for job in ("read", "unread"):
        manifest = bcj(job, namespace, completionPolicy={"type": "Always", "ttlSecondsAfterFinished": 0})
        assert engine.drive(engine.submit(manifest), KIND).reason == "finished"
    status = engine.status(KIND, "read")
    expires = from_rfc3339(engine.record(KIND, "read").metadata.annotations[EXPIRES_AT])
    assert expires == from_rfc3339(status["completionTime"])  # T4: ttl 0 expires at completion
    unread_expires = from_rfc3339(engine.record(KIND, "unread").metadata.annotations[EXPIRES_AT])
    core_api.patch_namespaced_config_map(engine.record(KIND, "read").metadata.name, namespace,
                                         {"metadata": {"annotations": {RESULT_READ: "true"}}})

    assert sweep(engine, now=expires - 1) == []
    assert sweep(engine, now=max(expires, unread_expires)) == ["bcj-read"]
    assert engine.record(KIND, "read") is None
    assert engine.record(KIND, "unread") is not None
    assert sweep(engine, now=unread_expires + UNREAD_GRACE_SECONDS - 1) == []
    assert sweep(engine, now=unread_expires + UNREAD_GRACE_SECONDS) == ["bcj-unread"]
    assert engine.record(KIND, "unread") is None


def test_T3_without_ttl_a_finished_record_is_never_deleted(engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(1, labels={"pool": namespace})
    submission = engine.submit(bcj("t3", namespace))
    assert engine.drive(submission, KIND).reason == "finished"

    assert EXPIRES_AT not in (engine.record(KIND, "t3").metadata.annotations or {})
    assert sweep(engine, now=4e9) == []
    assert engine.drive(submission, KIND).reason == "finished"
    assert engine.record(KIND, "t3") is not None


def test_T7_ttl_applies_to_failed_jobs_too(engine: Any, node_factory: Any, namespace: str) -> None:
    (node,) = node_factory(1, labels={"pool": namespace})
    manifest = bcj("t7", namespace, fail_nodes=[node],
                   completionPolicy={"type": "Always", "ttlSecondsAfterFinished": 30})

    assert engine.drive(engine.submit(manifest), KIND).reason == "finished"

    status = engine.status(KIND, "t7")
    assert status["phase"] == "failed"
    expires = engine.record(KIND, "t7").metadata.annotations[EXPIRES_AT]
    assert expires == to_rfc3339(from_rfc3339(status["completionTime"]) + 30)
