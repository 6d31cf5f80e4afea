"""Checklist F (S1-S11) and G (C1-C11): status written to the record, and when a job completes."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from bcj_cluster import (
    ATTEMPT_ANNOTATION,
    HOLD_FINALIZER,
    KIND,
    bcj,
    condition,
    events,
    job_pods,
    pods_by_node,
    wait_pod_phase,
    wait_status,
)
from support.waits import wait_until

from airflow_broadcast.cluster.job_records import JOB_LABEL, PHASE_LABEL, PROGRESS_LABEL

pytestmark = pytest.mark.cluster


def test_S1_S2_C3_first_pass_starts_the_job_and_later_passes_keep_its_start_time(
        engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(2, labels={"pool": namespace})
    submission = engine.submit(bcj("s1", namespace))

    first = engine.drive(submission, KIND, single_pass=True)

    assert first.status["phase"] == "running"
    started = first.status["startTime"]
    assert started
    assert not first.status.get("conditions")  # C3: the nodes filled in this pass are not done yet
    outcome = engine.drive(submission, KIND)
    assert outcome.reason == "finished"
    assert engine.status(KIND, "s1")["startTime"] == started


def test_S3_C7_terminating_succeeded_pod_counts_as_succeeded_and_as_done(
        engine: Any, node_factory: Any, namespace: str, core_api: Any, release_finalizers: Any) -> None:
    held, other = sorted(node_factory(2, labels={"pool": namespace}))
    submission = engine.submit(bcj("s3", namespace, finalizers=[HOLD_FINALIZER]))
    engine.drive(submission, KIND, single_pass=True)
    pod = wait_pod_phase(engine, "s3", held, "Succeeded")
    wait_pod_phase(engine, "s3", other, "Succeeded")

    core_api.delete_namespaced_pod(pod.metadata.name, namespace)
    wait_until(lambda: core_api.read_namespaced_pod(pod.metadata.name, namespace).metadata.deletion_timestamp,
               what="pod terminating")
    outcome = engine.drive(submission, KIND, single_pass=True)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "s3")
    assert (status["phase"], status["succeeded"], status["failed"], status["active"]) == ("completed", 2, 0, 0)
    assert condition(status, "Complete")["message"] == "Job completed, 2 pods succeeded, 0 pods failed"


def test_S7_L9_L8_terminating_running_pod_counts_nowhere_and_blocks_its_replacement(
        engine: Any, node_factory: Any, namespace: str, core_api: Any, release_finalizers: Any) -> None:
    held, _ = sorted(node_factory(2, labels={"pool": namespace}))
    submission = engine.submit(bcj("s7", namespace, result=None, finalizers=[HOLD_FINALIZER]))
    engine.drive(submission, KIND, single_pass=True)
    pod = wait_pod_phase(engine, "s7", held, "Running")

    core_api.delete_namespaced_pod(pod.metadata.name, namespace)
    wait_until(lambda: core_api.read_namespaced_pod(pod.metadata.name, namespace).metadata.deletion_timestamp,
               what="pod terminating")
    engine.drive(submission, KIND, single_pass=True)

    status = engine.status(KIND, "s7")
    assert (status["active"], status["succeeded"], status["failed"], status["desired"]) == (1, 0, 0, 2)
    assert [p.metadata.uid for p in pods_by_node(engine, "s7")[held]] == [pod.metadata.uid]  # L9: no replacement
    assert status["nodes"][held]["phase"] == "Terminating"

    release_finalizers(pod.metadata.name)
    wait_until(lambda: not [p for p in pods_by_node(engine, "s7").get(held, []) if p.metadata.uid == pod.metadata.uid],
               what="terminating pod gone")
    engine.drive(submission, KIND, single_pass=True)

    (again,) = pods_by_node(engine, "s7")[held]
    assert again.metadata.uid != pod.metadata.uid  # L8: the node gets a new pod
    assert again.metadata.annotations[ATTEMPT_ANNOTATION] == "2"
    assert engine.status(KIND, "s7")["active"] == 2


def test_S9_a_run_writes_only_the_status_of_the_record(engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(2, labels={"pool": namespace})
    submission = engine.submit(bcj("s9", namespace))
    before = engine.record(KIND, "s9")

    assert engine.drive(submission, KIND).reason == "finished"

    after = engine.record(KIND, "s9")
    assert after.data["manifest"] == before.data["manifest"]
    mirrored = {PHASE_LABEL, PROGRESS_LABEL}
    assert {k: v for k, v in after.metadata.labels.items() if k not in mirrored} == before.metadata.labels
    assert after.metadata.uid == before.metadata.uid
    assert json.loads(after.data["status"])["phase"] == "completed"


def test_S11_per_node_results_with_exit_codes_and_reasons(engine: Any, node_factory: Any, namespace: str) -> None:
    good, bad = sorted(node_factory(2, labels={"pool": namespace}))
    (tainted,) = node_factory(1, labels={"pool": namespace},
                              taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    manifest = bcj("s11", namespace, fail_nodes=[bad], annotations={
        "sim.airflow-broadcast.io/exit-code": "3", "sim.airflow-broadcast.io/reason": "Boom"},
        failurePolicy={"type": "Continue"})

    outcome = engine.drive(engine.submit(manifest), KIND)

    assert outcome.reason == "finished"
    nodes = engine.status(KIND, "s11")["nodes"]
    pods = {node: pods[0].metadata.name for node, pods in pods_by_node(engine, "s11").items()}
    assert nodes[good] == {"pod": pods[good], "phase": "Succeeded", "exitCode": 0, "reason": "Completed",
                           "restarts": 0, "attempt": 1}
    assert nodes[bad] == {"pod": pods[bad], "phase": "Failed", "exitCode": 3, "reason": "Boom",
                          "restarts": 0, "attempt": 1}
    assert engine.status(KIND, "s11")["ineligibleNodes"][tainted] == (
        "node(s) had taint {k: v}, that the pod didn't tolerate")


def test_C1_C2_completion_writes_condition_time_and_event(engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(2, labels={"pool": namespace})

    outcome = engine.drive(engine.submit(bcj("c1", namespace)), KIND)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "c1")
    assert (status["phase"], status["desired"], status["succeeded"], status["failed"], status["active"]) == (
        "completed", 2, 2, 0, 0)
    (cond,) = status["conditions"]
    assert cond == {"type": "Complete", "status": "True", "reason": "Complete",
                    "message": "Job completed, 2 pods succeeded, 0 pods failed",
                    "lastProbeTime": status["completionTime"], "lastTransitionTime": status["completionTime"]}
    assert ("Normal", "JobComplete", f"Job {namespace}/c1 is completed, 2 pods succeeded, 0 pods failed") in (
        events(engine, "c1"))


def test_A12_the_record_shows_and_selects_phase_and_done_of_desired_as_label_columns(
        engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(2, labels={"pool": namespace})
    submission = engine.submit(bcj("a12", namespace))

    def labels() -> dict[str, str]:
        return dict(engine.record(KIND, "a12").metadata.labels or {})

    engine.drive(submission, KIND, single_pass=True)
    assert (labels()[PHASE_LABEL], labels()[PROGRESS_LABEL]) == ("running", "0-of-2")
    selected = engine.core.list_namespaced_config_map(
        namespace, label_selector=f"{PHASE_LABEL}=running,{JOB_LABEL}=a12").items
    assert [cm.metadata.name for cm in selected] == [engine.record(KIND, "a12").metadata.name]

    assert engine.drive(submission, KIND).reason == "finished"
    assert (labels()[PHASE_LABEL], labels()[PROGRESS_LABEL]) == ("completed", "2-of-2")


def test_C4_zero_eligible_nodes_never_completes(engine: Any, namespace: str) -> None:
    submission = engine.submit(bcj("c4", namespace))

    outcome = engine.drive(submission, KIND, deadline=time.time() + 2)

    assert outcome.reason == "timeout"
    status = engine.status(KIND, "c4")
    assert (status["phase"], status["desired"]) == ("running", 0)
    assert not status.get("conditions")


def test_C5_L3_never_job_settles_and_runs_on_nodes_that_join_later(
        engine: Any, node_factory: Any, namespace: str) -> None:
    (first,) = node_factory(1, labels={"pool": namespace})
    submission = engine.submit(bcj("c5", namespace, completionPolicy={"type": "Never"}))

    outcome = engine.drive(submission, KIND)

    assert outcome.reason == "settled"
    assert (outcome.status["phase"], outcome.status["succeeded"]) == ("running", 1)
    assert not outcome.status.get("conditions")
    (second,) = node_factory(1, labels={"pool": namespace})
    again = engine.drive(submission, KIND)
    assert again.reason == "settled"
    assert not again.status.get("conditions")
    assert again.status["succeeded"] == 2
    assert sorted(pods_by_node(engine, "c5")) == sorted([first, second])


def test_C6_F8_continue_policy_completes_with_failed_pods(engine: Any, node_factory: Any, namespace: str) -> None:
    nodes = sorted(node_factory(3, labels={"pool": namespace}))
    manifest = bcj("c6", namespace, fail_nodes=[nodes[0]], parallelism=1, failurePolicy={"type": "Continue"})

    outcome = engine.drive(engine.submit(manifest), KIND)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "c6")
    assert condition(status, "Failed") is None
    assert condition(status, "Complete")["message"] == "Job completed, 2 pods succeeded, 1 pods failed"
    # F8: the nodes after the failed one still got their pods
    assert sorted(pods_by_node(engine, "c6")) == nodes


@pytest.mark.parametrize("compat", [False, True], ids=["fixed", "compat"])
def test_C7_L11_N9_unschedulable_pod_is_surfaced_and_stops_blocking_once_its_node_is_gone(
        engine: Any, node_factory: Any, namespace: str, core_api: Any, compat: bool) -> None:
    (roomy,) = node_factory(1, labels={"pool": namespace})
    (full,) = node_factory(1, labels={"pool": namespace}, allocatable={"cpu": "1", "memory": "8Gi", "pods": "10"})
    core_api.create_namespaced_pod(namespace, {"metadata": {"name": "filler"}, "spec": {
        "nodeName": full, "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}})
    containers = [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "500m"}}}]
    submission = engine.submit(bcj("c7", namespace, pod_spec={"containers": containers}))
    outcome: list[Any] = []
    runner = threading.Thread(target=lambda: outcome.append(
        engine.drive(submission, KIND, options={"kruise_compat": compat}, timeout=90)))
    runner.start()
    try:
        # N9: the node's current usage is ignored, so the full node is desired and gets a pod that stays Pending
        status = wait_status(engine, "c7", lambda s: s.get("nodes", {}).get(roomy, {}).get("phase") == "Succeeded"
                             and s["nodes"].get(full, {}).get("reason") == "Unschedulable", what="pending pod seen")
        assert status["desired"] == 2
        assert status["phase"] == "running"
        warnings = [m for t, r, m in events(engine, "c7") if r == "PodUnschedulable" and t == "Warning"]
        assert len(warnings) == (0 if compat else 1)
        if not compat:
            assert warnings[0].startswith(f"Pod {status['nodes'][full]['pod']} for node {full} cannot be scheduled: ")

        core_api.delete_node(full)
    finally:
        runner.join(90)
    assert outcome and outcome[0].reason == "finished"
    final = engine.status(KIND, "c7")
    assert (final["phase"], final["desired"], final["succeeded"], final["active"]) == ("completed", 1, 1, 1)


def test_C9_empty_completion_policy_type_behaves_like_always(engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(1, labels={"pool": namespace})

    outcome = engine.drive(engine.submit(bcj("c9", namespace, completionPolicy={"type": ""})), KIND)

    assert outcome.reason == "finished"
    assert condition(engine.status(KIND, "c9"), "Complete") is not None


def test_S10_C10_C11_L2_finished_job_is_frozen(engine: Any, node_factory: Any, namespace: str, core_api: Any) -> None:
    first, second = node_factory(2, labels={"pool": namespace})
    submission = engine.submit(bcj("c10", namespace))
    assert engine.drive(submission, KIND).reason == "finished"
    record = engine.record(KIND, "c10")
    seen = events(engine, "c10")

    (late,) = node_factory(1, labels={"pool": namespace})
    core_api.patch_node(first, {"spec": {"unschedulable": True}})
    core_api.patch_node(second, {"metadata": {"labels": {"pool": None}}})
    again = engine.drive(submission, KIND)

    assert again.reason == "finished"
    assert engine.record(KIND, "c10").metadata.resource_version == record.metadata.resource_version
    assert len(engine.status(KIND, "c10")["conditions"]) == 1
    assert events(engine, "c10") == seen
    pods = job_pods(engine, "c10")
    assert sorted(p.metadata.annotations["airflow-broadcast.io/node"] for p in pods) == sorted([first, second])
    assert late not in pods_by_node(engine, "c10")
    assert not any(p.metadata.deletion_timestamp for p in pods)
