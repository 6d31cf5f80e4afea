"""Checklist K (Z1-Z6): pausing and resuming through `spec.paused` while a reconcile loop runs."""

from __future__ import annotations

import time
from typing import Any

import pytest
from bcj_cluster import KIND, bcj, condition, events, job_pods, pods_by_node, reasons, wait_status
from support.waits import wait_until

pytestmark = pytest.mark.cluster


def set_paused(engine: Any, job: str, paused: bool) -> None:
    engine.edit_manifest(KIND, job, lambda m: m["spec"].update(paused=paused))


def test_Z1_Z3_Z4_pause_a_running_job_then_resume_it(
        engine: Any, node_factory: Any, namespace: str, loops: Any) -> None:
    first, second = sorted(node_factory(2, labels={"pool": namespace}))
    loop = loops(engine.submit(bcj("z1", namespace, after="2s", parallelism=1)))
    wait_until(lambda: first in pods_by_node(engine, "z1"), what="first pod created")

    set_paused(engine, "z1", True)
    wait_status(engine, "z1", lambda s: s["phase"] == "paused", what="paused")

    # Z3: the running pod is left alone and finishes; Z1: counts are refreshed, nothing is created
    status = wait_status(engine, "z1", lambda s: s["succeeded"] == 1, what="succeeded counted while paused")
    assert status["phase"] == "paused"
    assert sorted(pods_by_node(engine, "z1")) == [first]
    assert "SuccessfulDelete" not in reasons(engine, "z1")

    set_paused(engine, "z1", False)
    outcome = loop.wait()

    assert outcome.reason == "finished"
    assert ("Normal", "Continue", "continue to process job") in events(engine, "z1")
    assert outcome.status["phase"] == "completed"
    assert sorted(pods_by_node(engine, "z1")) == [first, second]


def test_Z2_job_created_paused_starts_without_pods(engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(2, labels={"pool": namespace})
    submission = engine.submit(bcj("z2", namespace, paused=True))

    outcome = engine.drive(submission, KIND, deadline=time.time() + 1.5)

    assert outcome.reason == "timeout"
    status = engine.status(KIND, "z2")
    assert status["phase"] == "paused"
    assert status["startTime"]
    assert status["desired"] == 2
    assert job_pods(engine, "z2") == []


def test_Z5_pausing_a_failed_job_has_no_effect(engine: Any, node_factory: Any, namespace: str) -> None:
    (node,) = node_factory(1, labels={"pool": namespace})
    submission = engine.submit(bcj("z5", namespace, fail_nodes=[node]))
    assert engine.drive(submission, KIND).reason == "finished"

    set_paused(engine, "z5", True)
    outcome = engine.drive(submission, KIND)

    assert outcome.reason == "finished"
    assert engine.status(KIND, "z5")["phase"] == "failed"


def test_Z6_paused_job_does_not_complete_although_every_node_is_done(
        engine: Any, node_factory: Any, namespace: str, loops: Any) -> None:
    (node,) = node_factory(1, labels={"pool": namespace})
    loop = loops(engine.submit(bcj("z6", namespace, after="2s")))
    wait_until(lambda: node in pods_by_node(engine, "z6"), what="pod created")
    set_paused(engine, "z6", True)

    status = wait_status(engine, "z6", lambda s: s["phase"] == "paused" and s["succeeded"] == 1,
                         what="done while paused")
    assert condition(status, "Complete") is None
    assert loop.running

    set_paused(engine, "z6", False)
    outcome = loop.wait()
    assert outcome.reason == "finished"
    assert outcome.status["phase"] == "completed"
