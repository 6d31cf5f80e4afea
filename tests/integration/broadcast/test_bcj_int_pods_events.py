"""Checklist C (P1-P12) and N (E1-E10): the pods the job creates, which pods it owns, and its events."""

from __future__ import annotations

from typing import Any

import pytest
from bcj_cluster import HOLD_FINALIZER, KIND, bcj, delete_pod_now, events, job_pods, owned_pod, pods_by_node, reasons
from support.waits import wait_until

from airflow_broadcast.reconcilers.broadcast_job.pods import JOB_NAME_LABEL, JOB_UID_LABEL, pod_name_for

pytestmark = pytest.mark.cluster


def pod_events(core_api: Any, namespace: str, pod: str) -> list[tuple[str, str]]:
    items = core_api.list_namespaced_event(namespace, field_selector=f"involvedObject.name={pod}").items
    return [(e.reason, (e.source.component if e.source else "") or e.reporting_component or "") for e in items]


def test_P1_P2_P3_P6_P11_P12_created_pod_carries_labels_owner_and_template(
        engine: Any, node_factory: Any, namespace: str, release_finalizers: Any) -> None:
    (node,) = node_factory(1, labels={"pool": namespace})
    manifest = bcj("p1", namespace, result=None, labels={"app": "patch"}, annotations={"note": "kept"},
                   finalizers=[HOLD_FINALIZER])
    submission = engine.submit(manifest)

    engine.drive(submission, KIND, single_pass=True)

    (pod,) = job_pods(engine, "p1")
    meta = pod.metadata
    uid = submission.uid
    assert meta.namespace == namespace
    assert meta.labels == {"app": "patch", JOB_NAME_LABEL: "p1", JOB_UID_LABEL: uid,
                           "airflow-broadcast.io/job-uid": uid}
    assert meta.generate_name == "p1-"
    assert meta.name == pod_name_for("p1", uid, node)
    assert meta.annotations["note"] == "kept"
    assert meta.annotations["airflow-broadcast.io/node"] == node
    assert meta.annotations["airflow-broadcast.io/attempt"] == "1"
    assert meta.finalizers == [HOLD_FINALIZER]
    (owner,) = meta.owner_references
    assert (owner.api_version, owner.kind, owner.name, owner.uid, owner.controller, owner.block_owner_deletion) == (
        "v1", "ConfigMap", submission.name, uid, True, True)
    assert [(c.name, c.image) for c in pod.spec.containers] == [("c", "busybox")]
    assert pod.spec.restart_policy == "Never"


def test_P4_scheduler_mode_replaces_required_affinity_with_a_node_pin(
        engine: Any, node_factory: Any, namespace: str, core_api: Any) -> None:
    (node,) = node_factory(1, labels={"pool": namespace, "zone": "a"})
    affinity = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}],
    }}
    tolerations = [{"key": "maint", "operator": "Exists", "effect": "NoSchedule"}]
    submission = engine.submit(bcj("p4", namespace, pod_spec={"affinity": affinity, "tolerations": tolerations}))

    assert engine.drive(submission, KIND).reason == "finished"

    (pod,) = job_pods(engine, "p4")
    node_affinity = pod.spec.affinity.node_affinity
    (term,) = node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    assert term.match_expressions is None
    assert [(f.key, f.operator, f.values) for f in term.match_fields] == [("metadata.name", "In", [node])]
    (preferred,) = node_affinity.preferred_during_scheduling_ignored_during_execution
    assert preferred.preference.match_expressions[0].key == "disk"
    assert pod.spec.node_selector == {"pool": namespace}
    assert ("maint", "Exists", "NoSchedule") in [(t.key, t.operator, t.effect) for t in pod.spec.tolerations]
    # the scheduler, not the engine, bound it to the node
    assert pod.spec.node_name == node
    assert ("Scheduled", "default-scheduler") in pod_events(core_api, namespace, pod.metadata.name)


def test_P5_nodename_mode_sets_node_name_and_keeps_the_affinity(
        engine: Any, node_factory: Any, namespace: str, core_api: Any) -> None:
    (node,) = node_factory(1, labels={"pool": namespace, "zone": "a"})
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}
    submission = engine.submit(bcj("p5", namespace, pod_spec={"affinity": affinity}))

    assert engine.drive(submission, KIND, options={"assign_by_scheduler": False}).reason == "finished"

    (pod,) = job_pods(engine, "p5")
    assert pod.spec.node_name == node
    (term,) = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    assert term.match_fields is None
    assert [(e.key, e.operator, e.values) for e in term.match_expressions] == [("zone", "In", ["a"])]
    assert "Scheduled" not in [r for r, _ in pod_events(core_api, namespace, pod.metadata.name)]


def test_P7_orphans_and_unlabelled_pods_are_not_the_jobs(
        engine: Any, node_factory: Any, namespace: str, core_api: Any) -> None:
    first, second = sorted(node_factory(2, labels={"pool": namespace}))
    submission = engine.submit(bcj("p7", namespace, result=None))
    core_api.create_namespaced_pod(namespace, owned_pod(namespace, "p7", submission.uid, first, "orphan",
                                                       owner=False, result=None))
    core_api.create_namespaced_pod(namespace, owned_pod(namespace, "p7", submission.uid, second, "unlabelled",
                                                       labels=False, result=None))

    engine.drive(submission, KIND, single_pass=True)

    ours = {node: [p.metadata.name for p in pods] for node, pods in pods_by_node(engine, "p7").items()}
    assert ours[first] == sorted(["orphan", pod_name_for("p7", submission.uid, first)])
    assert ours[second] == [pod_name_for("p7", submission.uid, second)]
    status = engine.status(KIND, "p7")
    assert (status["active"], status["desired"]) == (2, 2)
    assert "DuplicatePodCreatedOnSameNode" not in reasons(engine, "p7")


def test_P9_E5_two_owned_pods_on_one_node_warn_and_both_count(
        engine: Any, node_factory: Any, namespace: str, core_api: Any) -> None:
    (node,) = node_factory(1, labels={"pool": namespace})
    submission = engine.submit(bcj("p9", namespace, result=None))
    for name in ("dup-a", "dup-b"):
        core_api.create_namespaced_pod(namespace, owned_pod(namespace, "p9", submission.uid, node, name, result=None))

    engine.drive(submission, KIND, single_pass=True)

    warnings = [(t, m) for t, r, m in events(engine, "p9") if r == "DuplicatePodCreatedOnSameNode"]
    assert len(warnings) == 1
    assert warnings[0][0] == "Warning"
    assert warnings[0][1] in {f"Duplicated pod {p} found on same node {node}" for p in ("dup-a", "dup-b")}
    assert sorted(p.metadata.name for p in job_pods(engine, "p9")) == ["dup-a", "dup-b"]  # none created or deleted
    assert engine.status(KIND, "p9")["active"] == 2


def test_E1_E10_one_created_event_per_pod_and_one_completion_event(
        engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(3, labels={"pool": namespace})
    submission = engine.submit(bcj("e1", namespace))

    assert engine.drive(submission, KIND).reason == "finished"

    pods = sorted(p.metadata.name for p in job_pods(engine, "e1"))
    seen = events(engine, "e1")
    assert sorted(m for t, r, m in seen if r == "SuccessfulCreate" and t == "Normal") == [
        f"Created pod: {p}" for p in pods]
    assert [(t, m) for t, r, m in seen if r == "JobComplete"] == [
        ("Normal", f"Job {namespace}/e1 is completed, 3 pods succeeded, 0 pods failed")]
    assert len(seen) == 4


def test_P12_L8_a_node_rerun_after_its_first_pod_was_deleted_is_attempt_2(
        engine: Any, node_factory: Any, namespace: str, core_api: Any) -> None:
    node_factory(1, labels={"pool": namespace})
    submission = engine.submit(bcj("p12", namespace, result=None))
    engine.drive(submission, KIND, single_pass=True)
    (first,) = job_pods(engine, "p12")
    delete_pod_now(core_api, first.metadata.name, namespace)
    wait_until(lambda: not [p for p in job_pods(engine, "p12") if p.metadata.uid == first.metadata.uid],
               what="first pod gone")

    engine.drive(submission, KIND, single_pass=True)

    (again,) = job_pods(engine, "p12")
    assert again.metadata.uid != first.metadata.uid
    assert again.metadata.annotations["airflow-broadcast.io/attempt"] == "2"
