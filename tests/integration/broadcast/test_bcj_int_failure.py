"""Checklist H (F1-F14): failure policies and the per-pod restart limit, on the real cluster."""

from __future__ import annotations

from typing import Any

import pytest
from bcj_cluster import (
    ATTEMPT_ANNOTATION,
    KIND,
    PAUSED_BY_POLICY,
    bcj,
    condition,
    delete_pod_now,
    events,
    job_pods,
    pods_by_node,
    reasons,
    wait_pod_phase,
    wait_status,
)
from support.waits import wait_until

from airflow_broadcast.reconcilers.broadcast_job.pods import pod_name_for

pytestmark = pytest.mark.cluster

FAILFAST = "failure policy is FailurePolicyTypeFailFast and failed pod is found"


@pytest.mark.parametrize("compat", [False, True], ids=["fixed", "compat"])
def test_F4_F5_F6_failfast_fails_the_job_deletes_active_pods_and_creates_no_more(
        engine: Any, node_factory: Any, namespace: str, compat: bool) -> None:
    nodes = sorted(node_factory(4, labels={"pool": namespace}))
    manifest = bcj("f4", namespace, result=None, fail_nodes=[nodes[0]], parallelism=2)
    submission = engine.submit(manifest)

    outcome = engine.drive(submission, KIND, options={"kruise_compat": compat})

    assert outcome.reason == "finished"
    status = engine.status(KIND, "f4")
    assert (status["phase"], status["failed"], status["active"], status["desired"]) == ("failed", 2, 0, 4)
    cond = condition(status, "Failed")
    assert cond is not None
    assert (cond["reason"], cond["message"]) == ("Failed", FAILFAST)
    assert status["completionTime"] == cond["lastTransitionTime"]
    assert status["failureReason"] == "FailedPodFound"
    running_pod = pod_name_for("f4", submission.uid, nodes[1])
    seen = events(engine, "f4")
    assert ("Normal", "SuccessfulDelete", f"Delete pod: {running_pod}") in seen
    failfast = [(t, m) for t, r, m in seen if r == "failed pod is found"]
    if compat:  # upstream emits it twice: before the deletions and after
        assert sorted(failfast) == [("Warning", f"{FAILFAST}: 0 pods succeeded, 1 pods failed"),
                                    ("Warning", f"{FAILFAST}: 0 pods succeeded, 2 pods failed")]
    else:
        assert failfast == [("Warning", f"{FAILFAST}: 0 pods succeeded, 2 pods failed")]
    # F5: the active pod is deleted and the nodes without a pod never get one
    wait_until(lambda: sorted(p.metadata.annotations["airflow-broadcast.io/node"]
                              for p in job_pods(engine, "f4")) == [nodes[0]], what="active pod deleted")


def test_F7_failfast_does_not_delete_a_restart_failed_running_pod(
        engine: Any, node_factory: Any, namespace: str) -> None:
    (node,) = node_factory(1, labels={"pool": namespace})
    manifest = bcj("f7", namespace, result=None, restarts=1, restart_policy="OnFailure")

    outcome = engine.drive(engine.submit(manifest), KIND)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "f7")
    assert (status["phase"], status["failed"], status["active"]) == ("failed", 1, 0)
    assert condition(status, "Failed")["message"] == FAILFAST
    assert "SuccessfulDelete" not in reasons(engine, "f7")
    (pod,) = pods_by_node(engine, "f7")[node]
    assert pod.status.phase == "Running"
    assert pod.metadata.deletion_timestamp is None


@pytest.mark.parametrize(("restart_policy", "restarts", "limit", "fails"), [
    ("OnFailure", 1, None, True),     # F3: the default limit 0 fails a pod on its first restart
    ("OnFailure", 2, 1, True),        # F2: restarts 2 > limit 1
    ("OnFailure", 2, 2, False),       # F2: restarts 2 is not above limit 2
    ("Never", 1, None, False),        # F1: the limit applies to OnFailure pods only
], ids=["onfailure-default-limit", "over-limit", "at-limit", "never-policy"])
def test_F1_F2_F3_restart_limit_counts_restarts_of_onfailure_pods(
        engine: Any, node_factory: Any, namespace: str, restart_policy: str, restarts: int, limit: int | None,
        fails: bool) -> None:
    (node,) = node_factory(1, labels={"pool": namespace})
    failure = {"type": "FailFast"} if limit is None else {"type": "FailFast", "restartLimit": limit}
    manifest = bcj("f1", namespace, result=None, restarts=restarts, restart_policy=restart_policy,
                   failurePolicy=failure)
    submission = engine.submit(manifest)
    engine.drive(submission, KIND, single_pass=True)
    wait_until(lambda: [p for p in pods_by_node(engine, "f1").get(node, []) if p.status.container_statuses
                        and sum(c.restart_count for c in p.status.container_statuses) == restarts],
               what=f"{restarts} restart(s) of the pod")

    engine.drive(submission, KIND, single_pass=True)

    status = engine.status(KIND, "f1")
    if fails:
        assert (status["phase"], status["failed"], status["active"]) == ("failed", 1, 0)
    else:
        assert (status["phase"], status["failed"], status["active"]) == ("running", 0, 1)


@pytest.mark.parametrize("compat", [False, True], ids=["fixed", "compat"])
def test_F9_F10_pause_policy_pauses_and_fixed_mode_persists_it_without_flapping(
        engine: Any, node_factory: Any, namespace: str, loops: Any, compat: bool) -> None:
    nodes = sorted(node_factory(3, labels={"pool": namespace}))
    manifest = bcj("f9", namespace, fail_nodes=[nodes[0]], parallelism=1, failurePolicy={"type": "Pause"})
    submission = engine.submit(manifest)
    options = {"kruise_compat": compat}
    loop = loops(submission, options)

    status = wait_status(engine, "f9", lambda s: s["phase"] == "paused", what="paused by the failure policy")
    loop.stop()
    assert (status["failed"], status["active"]) == (1, 0)
    assert ("Warning", "Paused", "job is paused, due to failed pod") in events(engine, "f9")

    for _ in range(2):  # later passes, by a restarted loop
        engine.drive(submission, KIND, options=options, single_pass=True)

    status = engine.status(KIND, "f9")
    assert status["phase"] == "paused"
    assert sorted(pods_by_node(engine, "f9")) == [nodes[0]]  # F9: nothing created while paused
    annotations = engine.record(KIND, "f9").metadata.annotations or {}
    seen = reasons(engine, "f9")
    if compat:  # F10 upstream: not persisted, so every pass flaps Continue + Paused
        assert PAUSED_BY_POLICY not in annotations
        assert seen.count("Continue") >= 2  # at least once per later pass (the loop may have run more)
        assert seen.count("Paused") == seen.count("Continue") + 1
    else:
        assert annotations[PAUSED_BY_POLICY] == "true"
        assert (seen.count("Paused"), seen.count("Continue")) == (1, 0)


def test_F11_deleting_the_failed_pod_resumes_a_paused_job_and_reruns_its_node(
        engine: Any, node_factory: Any, namespace: str, core_api: Any, loops: Any) -> None:
    nodes = sorted(node_factory(2, labels={"pool": namespace}))
    manifest = bcj("f11", namespace, fail_nodes=[nodes[0]], parallelism=1, failurePolicy={"type": "Pause"})
    loops(engine.submit(manifest))
    wait_status(engine, "f11", lambda s: s["phase"] == "paused", what="paused by the failure policy")
    (failed,) = pods_by_node(engine, "f11")[nodes[0]]

    delete_pod_now(core_api, failed.metadata.name, namespace)

    def rerun() -> Any:
        pods = pods_by_node(engine, "f11").get(nodes[0], [])
        return next((p for p in pods if p.metadata.uid != failed.metadata.uid), None)

    again = wait_until(rerun, what="the failed node re-run")
    assert again.metadata.annotations[ATTEMPT_ANNOTATION] == "2"
    wait_until(lambda: reasons(engine, "f11").count("Paused") == 2, what="paused again by the re-run failure")
    assert reasons(engine, "f11").count("Continue") == 1
    assert nodes[1] not in pods_by_node(engine, "f11")


def test_F12_never_job_with_failfast_fails_and_serves_no_new_nodes(
        engine: Any, node_factory: Any, namespace: str) -> None:
    (node,) = node_factory(1, labels={"pool": namespace})
    submission = engine.submit(bcj("f12", namespace, fail_nodes=[node], completionPolicy={"type": "Never"}))

    outcome = engine.drive(submission, KIND)

    assert outcome.reason == "finished"
    assert condition(engine.status(KIND, "f12"), "Failed")["message"] == FAILFAST
    (late,) = node_factory(1, labels={"pool": namespace})
    engine.drive(submission, KIND, single_pass=True)
    status = engine.status(KIND, "f12")
    assert status["phase"] == "failed"
    assert sorted(pods_by_node(engine, "f12")) == [node]
    assert late not in pods_by_node(engine, "f12")


def test_F14_deleting_a_failed_pod_of_an_unfinished_job_reruns_the_node(
        engine: Any, node_factory: Any, namespace: str, core_api: Any, loops: Any) -> None:
    bad, busy = sorted(node_factory(2, labels={"pool": namespace}))
    manifest = bcj("f14", namespace, result=None, fail_nodes=[bad], failurePolicy={"type": "Continue"})
    loops(engine.submit(manifest))
    failed = wait_pod_phase(engine, "f14", bad, "Failed")
    wait_status(engine, "f14", lambda s: s["failed"] == 1 and s["active"] == 1, what="failure counted")

    delete_pod_now(core_api, failed.metadata.name, namespace)

    again = wait_until(lambda: next((p for p in pods_by_node(engine, "f14").get(bad, [])
                                     if p.metadata.uid != failed.metadata.uid), None), what="node re-run")
    assert again.metadata.annotations[ATTEMPT_ANNOTATION] == "2", reasons(engine, "f14")
    assert len(pods_by_node(engine, "f14")[busy]) == 1
