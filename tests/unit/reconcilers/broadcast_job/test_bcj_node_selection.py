"""Spec-level node selection (checklist D: N15): `nodeNames`, `excludeNodeNames`, `nodeSelector` before the template."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from support.bcj_builders import (
    FIXED,
    NOW,
    created_nodes,
    make_node,
    make_pod,
    make_record,
    make_spec,
    manifest,
    started_status,
)

from airflow_broadcast.reconcilers.broadcast_job.node_eligibility import (
    REASON_EXCLUDED,
    REASON_NOT_LISTED,
    REASON_SPEC_SELECTOR,
    REASON_UNSCHEDULABLE,
)
from airflow_broadcast.reconcilers.broadcast_job.reconciler import reconcile_broadcast_job
from airflow_broadcast.reconcilers.handoff import provider_only_fields
from airflow_broadcast.specs.broadcast_job.parsing import parse_broadcast_job, to_manifest
from airflow_broadcast.specs.field_errors import InvalidSpecError


def selected(**fields: Any) -> dict[str, Any]:
    body = manifest()
    body["spec"].update(fields)
    return body


NODES = [make_node("a-1", {"zone": "a"}), make_node("a-2", {"zone": "a"}), make_node("b-1", {"zone": "b"}),
         make_node("a-3", {"zone": "a"}, unschedulable=True), make_node("c-1")]


def test_N15_only_selected_nodes_get_pods_and_the_others_say_why() -> None:
    spec = parse_broadcast_job(selected(nodeNames=["a-1", "a-2", "b-1", "a-3"], excludeNodeNames=["a-2"],
                                        nodeSelector={"zone": "a"}))
    plan = reconcile_broadcast_job(spec, make_record(started_status()), NODES, [], NOW, FIXED)

    assert created_nodes(plan) == ["a-1"]
    assert plan.status is not None and plan.status["desired"] == 1
    assert plan.status["ineligibleNodes"] == {
        "a-2": REASON_EXCLUDED, "a-3": REASON_UNSCHEDULABLE, "b-1": REASON_SPEC_SELECTOR, "c-1": REASON_NOT_LISTED}


@pytest.mark.parametrize(("fields", "nodes"), [
    ({}, ["a-1", "a-2", "b-1", "c-1"]),
    ({"nodeNames": []}, []),
    ({"excludeNodeNames": ["c-1", "not-a-node"]}, ["a-1", "a-2", "b-1"]),
    ({"nodeSelector": {"zone": "b"}}, ["b-1"]),
    ({"nodeNames": ["c-1", "gone"]}, ["c-1"]),
])
def test_N15_each_field_narrows_the_nodes_and_absent_fields_select_all(fields: dict[str, Any],
                                                                         nodes: list[str]) -> None:
    spec = parse_broadcast_job(selected(**fields))
    plan = reconcile_broadcast_job(spec, make_record(started_status()), NODES, [], NOW, FIXED)
    assert created_nodes(plan) == nodes


def test_N15_a_node_left_out_by_an_edit_keeps_its_running_pod() -> None:
    before = make_spec()
    pods = [make_pod("a-1", "Running", spec=before), make_pod("a-2", "Running", spec=before)]
    edited = parse_broadcast_job(selected(excludeNodeNames=["a-2"]))

    plan = reconcile_broadcast_job(edited, make_record(started_status()), NODES[:3], pods, NOW, FIXED)

    assert plan.deletes == (), "selection decides where pods are created; an existing pod is judged by its own spec"
    assert created_nodes(plan) == ["b-1"]
    assert plan.status is not None and plan.status["active"] == 2


def test_N15_is_validated_with_field_paths_and_stored_sorted() -> None:
    spec = parse_broadcast_job(selected(nodeNames=["n-2", "n-1"], excludeNodeNames=["n-3"],
                                        nodeSelector={"pool": "gpu"}))
    stored = to_manifest(spec)["spec"]
    assert (stored["nodeNames"], stored["excludeNodeNames"], stored["nodeSelector"]) == (
        ["n-1", "n-2"], ["n-3"], {"pool": "gpu"})
    assert {"nodeNames", "excludeNodeNames", "nodeSelector"}.isdisjoint(to_manifest(make_spec())["spec"])
    assert parse_broadcast_job(to_manifest(spec)).node_selection == spec.node_selection
    with pytest.raises(InvalidSpecError) as refused:
        parse_broadcast_job(selected(nodeNames="n-1", excludeNodeNames=["ok", "Bad_Name", "ok", 7],
                                     nodeSelector={"bad key!": "x"}))
    assert [e.path for e in refused.value.errors] == [
        "spec.nodeNames", "spec.excludeNodeNames[1]", "spec.excludeNodeNames[2]", "spec.excludeNodeNames[3]",
        "spec.nodeSelector"]
    assert "must be a list of node names" in str(refused.value)
    assert provider_only_fields("BroadcastJob", to_manifest(spec)) == [
        "spec.nodeNames", "spec.excludeNodeNames", "spec.nodeSelector"]


def test_N15_an_edit_of_the_selection_is_seen_by_a_job_whose_ledger_is_kept() -> None:
    nodes = [make_node(f"n-{i:03d}") for i in range(80)]  # past KEEP_ABOVE: the pass keeps its ledger
    record = make_record(started_status())
    spec = make_spec()
    first = reconcile_broadcast_job(spec, record, nodes, [], NOW, FIXED)
    assert first.status is not None and first.status["desired"] == 80

    narrowed = parse_broadcast_job(selected(nodeNames=["n-001", "n-002"])).node_selection
    edited = replace(spec, node_selection=narrowed)  # the same template object: only the selection changed
    again = reconcile_broadcast_job(edited, record, nodes, [], NOW + 1, FIXED)
    assert again.status is not None and again.status["desired"] == 2
    assert created_nodes(again) == ["n-001", "n-002"]
