"""Duplicate and restarted reconcile loops on one job record (checklist M4, M6, C11).

Two triggers may drive the same record (triggerer failover); each pass works from the
record and the cluster only, names are deterministic and AlreadyExists counts as done.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from support.waits import wait_until
from tfjob_it_support import (
    KIND,
    Background,
    condition_summary,
    event_pairs,
    is_true,
    job_pods,
    job_services,
    pod_events,
    replica,
    succeed,
    tf_manifest,
)

pytestmark = pytest.mark.cluster

NAMES = {"twin-chief-0", "twin-worker-0", "twin-worker-1"}


def manifest() -> dict[str, Any]:
    return tf_manifest("twin", {"Chief": replica(1, annotations=succeed("2s")),
                                "Worker": replica(2, annotations=succeed("2s"))})


def test_M4_two_concurrent_loops_create_no_duplicates(engine: Any, namespace: str,
                                                      core_api: client.CoreV1Api) -> None:
    submission = engine.submit(manifest())
    with pod_events(core_api, namespace, "twin") as pods:
        loops = [Background(lambda: engine.drive(submission, KIND, timeout=90)) for _ in range(2)]
        outcomes = [loop.result(120) for loop in loops]

    assert [o.reason for o in outcomes] == ["finished", "finished"]
    created = {(name, uid) for kind, (name, uid, _) in pods.events if kind == "ADDED"}
    assert sorted(name for name, _ in created) == sorted(NAMES), "exactly one pod per replica was ever created"
    assert set(job_services(core_api, namespace, "twin")) == NAMES
    status = engine.status(KIND, "twin")
    assert is_true(status, "Succeeded")
    kinds = [c[0] for c in condition_summary(status)]
    assert len(kinds) == len(set(kinds)), f"no duplicated condition: {kinds}"
    warnings = [(r, m) for r, m in event_pairs(engine, "twin") if r.startswith("Failed")]
    assert warnings == []


def test_M6_a_restarted_loop_resumes_from_cluster_state(engine: Any, namespace: str,
                                                        core_api: client.CoreV1Api) -> None:
    submission = engine.submit(manifest())
    with pod_events(core_api, namespace, "twin") as pods:
        first = engine.drive(submission, KIND, single_pass=True)  # the first trigger dies after one pass
        assert first.reason == "pending"
        before = {p.metadata.name: p.metadata.uid for p in job_pods(core_api, namespace, "twin").values()}
        assert set(before) == NAMES
        second = engine.drive(submission, KIND, timeout=90)  # a new trigger, new caches, same record

    assert second.reason == "finished"
    assert is_true(engine.status(KIND, "twin"), "Succeeded")
    after = {p.metadata.name: p.metadata.uid for p in job_pods(core_api, namespace, "twin").values()}
    assert after == before, "the same pods carried on"
    assert sorted(name for kind, (name, _, _) in pods.events if kind == "ADDED") == sorted(NAMES)


def test_M3_F20_a_pass_with_nothing_new_writes_nothing(engine: Any, namespace: str,
                                                       core_api: client.CoreV1Api) -> None:
    submission = engine.submit(tf_manifest("steady", {"Worker": replica(2)}))
    engine.drive(submission, KIND, single_pass=True)
    wait_until(lambda: all(p.status.phase == "Running" for p in job_pods(core_api, namespace, "steady").values()),
               timeout=30, what="both workers running")
    engine.drive(submission, KIND, single_pass=True)
    status = engine.status(KIND, "steady")
    assert status["replicaStatuses"]["Worker"] == {"active": 2} and is_true(status, "Running")
    version = engine.record(KIND, "steady").metadata.resource_version
    events = len(engine.events(KIND, "steady"))

    engine.drive(submission, KIND, single_pass=True)

    assert engine.record(KIND, "steady").metadata.resource_version == version, "no status write"
    assert len(engine.events(KIND, "steady")) == events, "no new events"
