"""The node table's parts, rule by rule: what a part keeps, when it is rewritten, and what the record shows."""

from __future__ import annotations

from typing import Any

from airflow_broadcast.reconcilers.broadcast_job import node_table as nt


def entry(phase: str, **extra: Any) -> dict[str, Any]:
    return {"pod": "p", "phase": phase, "restarts": 0, "attempt": 1, **extra}


def test_a_part_keeps_a_finished_result_whole_and_only_the_identity_of_a_live_one() -> None:
    assert nt.durable(entry("Failed", exitCode=2)) == entry("Failed", exitCode=2)
    assert nt.durable(entry("Running", restarts=3)) == {"pod": "p", "attempt": 1}
    assert nt.durable(entry("Pending", reason="Unschedulable")) == {"pod": "p", "attempt": 1, "reason": "Unschedulable"}


def test_a_pod_that_starts_running_rewrites_no_part() -> None:
    table = {f"n{i}": entry("Pending") for i in range(8)}
    stored = nt.part_writes(table, {}, 1, done=False)
    running = {n: entry("Running") for n in table}
    assert nt.part_writes(running, stored, 1, done=False) == {}


def test_a_part_is_rewritten_once_a_quarter_of_its_nodes_changed() -> None:
    table = {f"n{i}": entry("Running") for i in range(8)}
    stored = nt.part_writes(table, {}, 1, done=False)
    table["n0"] = entry("Succeeded")
    assert nt.part_writes(table, stored, 1, done=False) == {}
    table["n1"] = entry("Succeeded")
    assert list(nt.part_writes(table, stored, 1, done=False)) == [0]


def test_every_changed_part_is_written_when_the_job_is_done() -> None:
    table = {f"n{i}": entry("Running") for i in range(8)}
    stored = nt.part_writes(table, {}, 1, done=False)
    table["n0"] = entry("Succeeded")
    assert nt.part_writes(table, stored, 1, done=True)[0]["n0"]["phase"] == "Succeeded"


def test_nodes_spread_over_the_parts_and_every_node_is_in_exactly_one() -> None:
    table = {f"node-{i:05d}": entry("Succeeded") for i in range(3000)}
    parts = nt.parts_for(len(table))
    written = nt.part_writes(table, {}, parts, done=True)
    assert parts == 6 and len(written) == 6
    assert sum(len(p) for p in written.values()) == 3000
    assert max(len(p) for p in written.values()) < 2 * nt.PART_NODES


def test_the_record_shows_failed_nodes_first_and_counts_them_all() -> None:
    table = {f"n{i:03d}": entry("Failed" if i % 50 == 0 else "Succeeded") for i in range(400)}
    fields = nt.sharded_status(table, 1)
    assert len(fields["nodes"]) == nt.VIEW_NODES
    assert [n for n, e in fields["nodes"].items() if e["phase"] == "Failed"] == [f"n{i:03d}" for i in range(0, 400, 50)]
    assert fields["failedNodesTotal"] == 8 and fields["nodesTotal"] == 400 and fields["nodesDone"] == 400


def test_the_stored_table_is_the_union_of_the_parts_named_after_the_record() -> None:
    parts = {nt.part_name("bcj-x", 0): {"nodes": {"a": entry("Succeeded")}},
             nt.part_name("bcj-x", 1): {"nodes": {"b": entry("Failed")}},
             "bcj-xy-nodes-0": {"nodes": {"c": entry("Failed")}}}
    assert sorted(nt.merged("bcj-x", parts)) == ["a", "b"]


def test_the_ineligible_nodes_of_a_large_cluster_are_capped_with_their_total_surprising_ones_first() -> None:
    ineligible = {f"n{i:05d}": "affinity" for i in range(nt.INELIGIBLE_NODES + 10)}
    ineligible["z-tainted"] = "node(s) had taint {k: v}, that the pod didn't tolerate"
    fields = nt.capped_ineligible(ineligible, {"affinity"})
    assert len(fields["ineligibleNodes"]) == nt.INELIGIBLE_NODES
    assert fields["ineligibleNodesTotal"] == nt.INELIGIBLE_NODES + 11
    assert "z-tainted" in fields["ineligibleNodes"]
    assert nt.capped_ineligible({"a": "x"}, {"affinity"}) == {"ineligibleNodes": {"a": "x"}}
