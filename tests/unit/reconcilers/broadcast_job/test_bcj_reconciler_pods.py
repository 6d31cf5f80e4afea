"""Pod ownership, shape and mapping (checklist C: P1-P12) and the pure part of M (X1, X2, X6)."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

import pytest
from support.bcj_builders import (
    NOW,
    UID,
    BCJCluster,
    created_nodes,
    make_node,
    make_nodes,
    make_pod,
    make_record,
    make_spec,
    reasons,
    started_status,
)

from airflow_broadcast.reconcilers.broadcast_job.pods import (
    ATTEMPT_ANNOTATION,
    JOB_NAME_LABEL,
    JOB_UID_LABEL,
    NODE_ANNOTATION,
    is_owned,
    pod_name_for,
)
from airflow_broadcast.reconcilers.broadcast_job.reconciler import BroadcastOptions, reconcile_broadcast_job
from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.specs.broadcast_job.spec import BroadcastJobSpec
from airflow_broadcast.specs.name_rules import is_dns1123_label, is_valid_label_value

USER_AFFINITY: dict[str, Any] = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}],
    },
    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []},
}
RICH_POD_SPEC = {"affinity": USER_AFFINITY, "nodeSelector": {"pool": "batch"},
                 "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
                 "serviceAccountName": "runner"}
LABELS = {"pool": "batch", "zone": "a"}


def rich_spec() -> BroadcastJobSpec:
    return make_spec(pod_spec=RICH_POD_SPEC, template_labels={"app": "cleanup", JOB_NAME_LABEL: ""},
                     template_annotations={"team": "infra"}, finalizers=["example.com/keep"])


def first_pod(spec: BroadcastJobSpec, options: BroadcastOptions | None = None, node: str = "node-a") -> dict[str, Any]:
    plan = reconcile_broadcast_job(spec, make_record(), [make_node(node, labels=LABELS)], [], NOW, options)
    [pod] = plan.create_pods
    return dict(pod)


def test_P1_pods_carry_the_reserved_labels_and_the_template_labels() -> None:
    labels = first_pod(rich_spec())["metadata"]["labels"]
    assert labels[JOB_NAME_LABEL] == "bcj"
    assert labels[JOB_UID_LABEL] == UID
    assert labels["app"] == "cleanup"


def test_P2_generate_name_annotations_finalizers_and_spec_are_copied() -> None:
    spec = rich_spec()
    pod = first_pod(spec)
    meta = pod["metadata"]
    assert meta["generateName"] == "bcj-"
    assert meta["annotations"]["team"] == "infra"
    assert meta["finalizers"] == ["example.com/keep"]
    assert pod["spec"]["containers"] == spec.template["spec"]["containers"]
    assert pod["spec"]["serviceAccountName"] == "runner"
    assert pod["spec"]["restartPolicy"] == "Never"
    assert spec.template["spec"]["affinity"] == USER_AFFINITY  # the template is not modified


def test_P3_exactly_one_controller_owner_reference_to_the_job_record() -> None:
    refs = first_pod(make_spec())["metadata"]["ownerReferences"]
    assert refs == [{"apiVersion": "v1", "kind": "ConfigMap", "name": "bcj", "uid": UID,
                     "controller": True, "blockOwnerDeletion": True}]


def test_P4_scheduler_mode_replaces_required_affinity_with_a_name_pin() -> None:
    spec = make_spec(pod_spec=RICH_POD_SPEC)
    pod_spec = first_pod(spec)["spec"]
    node_affinity = pod_spec["affinity"]["nodeAffinity"]
    assert node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] == {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]}
    assert node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] == (
        USER_AFFINITY["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"])
    assert pod_spec["affinity"]["podAntiAffinity"] == USER_AFFINITY["podAntiAffinity"]
    assert pod_spec["nodeSelector"] == {"pool": "batch"}
    assert pod_spec["tolerations"] == RICH_POD_SPEC["tolerations"]
    assert "nodeName" not in pod_spec


@pytest.mark.parametrize("affinity", [None, {}, {"podAffinity": {}}, {"nodeAffinity": {}},
                                      {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": None}}])
def test_P4_scheduler_mode_creates_the_pin_when_there_is_no_required_affinity(affinity: Any) -> None:
    pod_spec = {} if affinity is None else {"affinity": affinity}
    created = first_pod(make_spec(pod_spec=pod_spec))["spec"]
    assert created["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]}


def test_P5_nodename_mode_sets_node_name_and_keeps_the_affinity() -> None:
    spec = make_spec(pod_spec=RICH_POD_SPEC)
    pod_spec = first_pod(spec, BroadcastOptions(assign_by_scheduler=False))["spec"]
    assert pod_spec["nodeName"] == "node-a"
    assert pod_spec["affinity"] == USER_AFFINITY


def test_P6_pods_are_created_in_the_job_namespace() -> None:
    spec = make_spec(namespace="team-a")
    record = make_record(namespace="team-a")
    plan = reconcile_broadcast_job(spec, record, make_nodes(2), [], NOW)
    assert {p["metadata"]["namespace"] for p in plan.create_pods} == {"team-a"}


NOT_OURS: dict[str, dict[str, Any]] = {
    "orphan with matching labels": {"owned": False},
    "no job-name label": {"labels": {JOB_NAME_LABEL: None}},
    "no controller-uid label": {"labels": {JOB_UID_LABEL: None}},
    "other job's name label": {"labels": {JOB_NAME_LABEL: "other"}},
    "other uid label": {"labels": {JOB_UID_LABEL: "someone-else"}},
    "owned by another record": {"record": make_record(uid="other-uid")},
}


@pytest.mark.parametrize("case", list(NOT_OURS))
def test_P7_only_pods_with_both_labels_and_our_controller_ref_count(case: str) -> None:
    spec = make_spec()
    stranger = make_pod("node-00", "Running", spec=spec, **NOT_OURS[case])
    assert not is_owned(stranger, "bcj", UID)
    plan = reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(1), [stranger], NOW)
    assert plan.status is not None and plan.status["active"] == 0
    assert created_nodes(plan) == ["node-00"]
    assert plan.deletes == ()


def test_P7_controller_ref_must_point_at_the_record_kind() -> None:
    spec = make_spec()
    ours = make_pod("node-00", "Running", spec=spec)
    assert is_owned(ours, "bcj", UID)
    impostor = replace(ours, owner_kind="ReplicaSet")
    plan = reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(1), [impostor], NOW)
    assert plan.status is not None and plan.status["active"] == 0


@pytest.mark.parametrize(("by_scheduler", "changes", "expected"), [
    (True, {}, "node-a"),
    (False, {}, "node-a"),
    (True, {"nodeName": "node-b"}, "node-b"),   # a bound pod: nodeName wins over the pin
    (True, {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                "values": ["node-a", "node-b"]}]}]}}}}, ""),
    (True, {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "NotIn",
                                                "values": ["node-a"]}]}]}}}}, ""),
    (True, {"affinity": {}}, ""),
])
def test_P8_a_pod_maps_to_its_node_name_else_its_single_value_pin(
        by_scheduler: bool, changes: dict[str, Any], expected: str) -> None:
    pod = make_pod("node-a", spec=make_spec(), by_scheduler=by_scheduler, spec_changes=changes)
    assert pod.node == expected


def test_P8_unmapped_pod_counts_but_never_fills_a_node() -> None:
    spec = make_spec()
    pod = make_pod("node-00", spec=spec, spec_changes={"affinity": {}})
    plan = reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(1), [pod], NOW)
    assert plan.status is not None and plan.status["active"] == 1
    assert created_nodes(plan) == ["node-00"]
    assert plan.deletes == ()


def test_P9_duplicate_pods_on_one_node_warn_and_both_count() -> None:
    spec = make_spec(completion="Never")
    first = make_pod("node-00", "Running", spec=spec)
    second = make_pod("node-00", "Succeeded", spec=spec, name="bcj-manual", uid="uid-manual")
    plan = reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(1), [first, second], NOW)
    assert [(e.type, e.reason, e.message) for e in plan.events] == [
        ("Warning", "DuplicatePodCreatedOnSameNode", "Duplicated pod bcj-manual found on same node node-00")]
    assert plan.deletes == () and plan.create_pods == ()
    assert plan.status is not None
    assert (plan.status["active"], plan.status["succeeded"]) == (1, 1)
    assert plan.status["nodes"]["node-00"]["pod"] == "bcj-manual"  # the last one wins, as upstream


@pytest.mark.parametrize(("phase", "deleting"), [("Pending", False), ("Running", False), ("Succeeded", False),
                                                 ("Failed", False), ("Running", True), ("Succeeded", True)])
def test_P10_no_second_pod_while_the_node_has_one_in_any_phase(phase: str, deleting: bool) -> None:
    spec = make_spec(failure="Continue", completion="Never")
    pod = make_pod("node-00", phase, spec=spec, deleting=deleting)
    plan = reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(2), [pod], NOW)
    assert created_nodes(plan) == ["node-01"]


def test_P11_pod_name_is_job_plus_ten_hex_of_record_and_node_and_names_the_node() -> None:
    record = make_record()
    plan = reconcile_broadcast_job(make_spec(), record, make_nodes(3), [], NOW)
    for body in plan.create_pods:
        node = body["metadata"]["annotations"][NODE_ANNOTATION]
        digest = hashlib.sha256(f"{record.uid}/{node}".encode()).hexdigest()[:10]
        assert body["metadata"]["name"] == f"bcj-{digest}" == pod_name_for("bcj", record.uid, node)
    assert len({p["metadata"]["name"] for p in plan.create_pods}) == 3


def test_P11_a_new_run_of_the_same_job_gets_other_pod_names() -> None:
    assert pod_name_for("bcj", "uid-run-1", "node-00") != pod_name_for("bcj", "uid-run-2", "node-00")


@pytest.mark.parametrize("name", ["a" * 52, "a" * 53, "b" * 63, "train-" * 10 + "abc", "x" * 51 + "-y" * 6])
def test_V19_P11_a_name_of_any_valid_length_gives_pod_names_within_63_that_keep_the_hash(name: str) -> None:
    """Like generateName, the job-name part is cut (never the hash, never leaving a '-' before it)."""
    record = make_record()
    plan = reconcile_broadcast_job(make_spec(name=name), record, make_nodes(3), [], NOW)
    assert len(plan.create_pods) == 3
    for body in plan.create_pods:
        meta = body["metadata"]
        pod_name = meta["name"]
        digest = hashlib.sha256(f"{record.uid}/{meta['annotations'][NODE_ANNOTATION]}".encode()).hexdigest()[:10]
        prefix = pod_name.removesuffix(f"-{digest}")
        assert pod_name.endswith(f"-{digest}") and len(pod_name) <= 63 and is_dns1123_label(pod_name) == []
        assert prefix == (name if len(name) <= 52 else name[:52].rstrip("-"))
        assert meta["labels"][JOB_NAME_LABEL] == name and is_valid_label_value(name) == []
        assert meta["generateName"] == f"{name}-"
    assert len({p["metadata"]["name"] for p in plan.create_pods}) == 3


def test_V19_short_names_are_not_cut_and_two_long_names_sharing_a_prefix_still_differ() -> None:
    short = pod_name_for("a" * 52, "uid-1", "node-00")
    assert short.startswith("a" * 52 + "-") and len(short) == 63
    first, second = "long-" * 12 + "one", "long-" * 12 + "two"
    assert pod_name_for(first, "uid-1", "node-00")[:52] == pod_name_for(second, "uid-2", "node-00")[:52]
    assert pod_name_for(first, "uid-1", "node-00") != pod_name_for(second, "uid-2", "node-00")


def test_P12_attempt_annotation_starts_at_one_and_counts_reruns_of_a_node() -> None:
    cluster = BCJCluster(make_spec(failure="Continue"), make_nodes(2))
    first = cluster.step()
    assert {p["metadata"]["annotations"][ATTEMPT_ANNOTATION] for p in first.create_pods} == {"1"}
    cluster.set_phase("Failed", ["node-00"])
    cluster.step()
    assert cluster.status["nodes"]["node-00"]["attempt"] == 1
    cluster.remove_pod("node-00")   # manual retry (F14)
    rerun = cluster.step()
    [pod] = rerun.create_pods
    assert pod["metadata"]["annotations"][ATTEMPT_ANNOTATION] == "2"
    assert pod["metadata"]["name"] == pod_name_for("bcj", cluster.record.uid, "node-00")
    cluster.step()
    assert cluster.status["nodes"]["node-00"]["attempt"] == 2


def test_P12_a_rerun_whose_create_failed_is_sent_again_as_the_same_attempt() -> None:
    """A create that failed made no pod, so it was no attempt: the retry carries the same number."""
    cluster = BCJCluster(make_spec(failure="Continue"), make_nodes(2))
    cluster.step(fail_creates=1)
    assert "node-01" not in cluster.status["nodes"]  # a first create that failed leaves no entry
    assert [p["metadata"]["annotations"][ATTEMPT_ANNOTATION] for p in cluster.step().create_pods] == ["1"]
    cluster.set_phase("Failed", ["node-00"])
    cluster.step()
    failed_result = cluster.status["nodes"]["node-00"]
    cluster.remove_pod("node-00")
    failed_rerun = cluster.step(fail_creates=1)
    assert [p["metadata"]["annotations"][ATTEMPT_ANNOTATION] for p in failed_rerun.create_pods] == ["2"]
    assert cluster.status["nodes"]["node-00"] == failed_result  # the node's last result stands

    retry = cluster.step()
    assert [p["metadata"]["annotations"][ATTEMPT_ANNOTATION] for p in retry.create_pods] == ["2"]
    assert cluster.status["nodes"]["node-00"]["previous"] == failed_result
    cluster.step()
    cluster.remove_pod("node-00")
    assert [p["metadata"]["annotations"][ATTEMPT_ANNOTATION] for p in cluster.step().create_pods] == ["3"]


# ---- M: expectations and concurrency, pure part -----------------------------------------------
def test_X1_an_unobserved_create_is_planned_again_under_the_same_name() -> None:
    """Until the watch shows the pod, the pass plans it again with the same name, so the
    repeated POST is a 409 (AlreadyExists) and never a second pod on the node."""
    spec = make_spec()
    record = make_record()
    first = reconcile_broadcast_job(spec, record, make_nodes(2), [], NOW)
    again = reconcile_broadcast_job(spec, record, make_nodes(2), [], NOW + 1)
    assert [p["metadata"]["name"] for p in first.create_pods] == [p["metadata"]["name"] for p in again.create_pods]


def test_X2_nothing_is_created_on_a_node_whose_pod_is_still_terminating() -> None:
    spec = make_spec(failure="Continue")
    going = make_pod("node-00", "Failed", spec=spec, deleting=True)
    plan = reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(2), [going], NOW)
    assert created_nodes(plan) == ["node-01"]


def test_X6_names_are_stable_across_restarts_and_distinct_across_jobs() -> None:
    def names(spec: BroadcastJobSpec, uid: str) -> list[str]:
        plan: Plan = reconcile_broadcast_job(spec, make_record(uid=uid, name=spec.name), make_nodes(3), [], NOW)
        return [p["metadata"]["name"] for p in plan.create_pods]

    assert names(make_spec(), UID) == names(make_spec(), UID)
    assert set(names(make_spec(), UID)).isdisjoint(names(make_spec(name="bcj2"), "uid-2"))
    assert reasons(reconcile_broadcast_job(make_spec(), make_record(), make_nodes(3), [], NOW)) == []
