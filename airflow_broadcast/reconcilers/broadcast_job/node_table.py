"""Where a BroadcastJob's per-node results live, so that neither the record nor the bytes written grow with the fleet.

A small table (at most INLINE_NODES nodes) stays in the record's `status.nodes`, as it always has.
A larger one moves to part ConfigMaps owned by the record, `<record>-nodes-<k>`, a node in part
`crc32(node) % parts`; the record then keeps counts, conditions, the failed nodes (capped, with a
total) and a capped view of the table. The number of parts is fixed when the table moves, from the
desired count, so that a part holds about PART_NODES nodes (about 70 KB; a ConfigMap holds 1 MiB).

A part keeps what a node's pod cannot tell once it is gone: the pod's name and attempt (P12), the
last finished result (L12) and whether an Unschedulable warning was given (L11). Phases that change
while a pod lives are read from the pod. A part is rewritten only when a quarter of its nodes
changed, or when every desired node is done, so each part is written a handful of times per run
whatever the number of passes. A pass may die between any two writes: what a part missed is still
on the pods, and the next pass writes it again.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Mapping
from typing import Any

INLINE_NODES = 256
PART_NODES = 500
VIEW_NODES = 100  # nodes of a large table shown in the record (and the XCom): failed ones first
INELIGIBLE_NODES = 1000  # nodes named in `ineligibleNodes` (about 90 KB at most)
FAILED_NAMES = 500  # failed node names kept in the record; `failedNodesTotal` counts them all
FLUSH_FRACTION = 4  # a part is rewritten once 1/FLUSH_FRACTION of its nodes changed
TERMINAL = ("Succeeded", "Failed")


def part_name(record_name: str, index: int) -> str:
    return f"{record_name}-nodes-{index}"


def part_of(node: str, parts: int) -> int:
    return zlib.crc32(node.encode()) % parts


def parts_for(desired: int) -> int:
    return max(1, -(-desired // PART_NODES))


def by_index(record_name: str, parts: Mapping[str, Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    """The record's parts (name → document) by part index; a part that is not a node table counts as empty."""
    found: dict[int, Mapping[str, Any]] = {}
    prefix = part_name(record_name, 0)[:-1]
    for name, document in parts.items():
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            table = document.get("nodes")
            found[int(name[len(prefix):])] = table if isinstance(table, Mapping) else {}
    return found


def durable(entry: Mapping[str, Any]) -> dict[str, Any]:
    """What a part keeps of one node's result: all of a finished one, the identity of a live one."""
    if entry.get("phase") in TERMINAL:
        return dict(entry)
    kept = {k: entry[k] for k in ("pod", "attempt", "previous") if k in entry}
    if entry.get("reason") == "Unschedulable":
        kept["reason"] = "Unschedulable"
    return kept


def is_sharded(status: Mapping[str, Any]) -> bool:
    return int(status.get("nodeParts") or 0) > 0


def stored_table(status: Mapping[str, Any], parts: Mapping[int, Mapping[str, Any]]) -> dict[str, Any]:
    """The node table as last written: the record's own, or the union of its parts."""
    if not is_sharded(status):
        return dict(status.get("nodes") or {})
    table: dict[str, Any] = {}
    for index in sorted(parts):
        table.update(parts[index])
    return table


def part_writes(table: Mapping[str, Any], stored: Mapping[int, Mapping[str, Any]], parts: int, *,
                done: bool) -> dict[int, dict[str, Any]]:
    """The parts to rewrite (index → its whole table): those with enough changes, or all changed ones when done."""
    grouped: dict[int, dict[str, Any]] = {index: {} for index in range(parts)}
    for node, entry in table.items():
        grouped[part_of(node, parts)][node] = durable(entry)
    writes: dict[int, dict[str, Any]] = {}
    for index, entries in grouped.items():
        before = stored.get(index) or {}
        changed = sum(1 for n in entries.keys() | before.keys() if entries.get(n) != before.get(n))
        if changed and (done or changed * FLUSH_FRACTION >= max(len(entries), 1)):
            writes[index] = entries
    return writes


def table_view(table: Mapping[str, Any], limit: int | None = None) -> dict[str, Any]:
    """At most `limit` (VIEW_NODES) nodes of the table: the failed ones first, then the others, in name order."""
    limit = VIEW_NODES if limit is None else limit
    failed = sorted(n for n, e in table.items() if e.get("phase") == "Failed")
    shown = failed[:limit]
    if len(shown) < limit:
        shown += sorted(n for n in table if n not in set(failed))[:limit - len(shown)]
    return {n: table[n] for n in sorted(shown)}


def failed_names(table: Mapping[str, Any]) -> list[str]:
    return sorted(n for n, e in table.items() if e.get("phase") == "Failed")


def sharded_status(table: Mapping[str, Any], parts: int) -> dict[str, Any]:
    """The record's fields for a table kept in parts: a capped view, the totals and the failed nodes."""
    failed = failed_names(table)
    return {
        "nodes": table_view(table),
        "nodeParts": parts,
        "nodesTotal": len(table),
        "nodesDone": sum(1 for e in table.values() if e.get("phase") in TERMINAL),
        "failedNodes": failed[:FAILED_NAMES],
        "failedNodesTotal": len(failed),
    }


def capped_ineligible(ineligible: Mapping[str, str], left_out: Collection[str]) -> dict[str, Any]:
    """`ineligibleNodes` names every node of the cluster the job does not run on: capped at INELIGIBLE_NODES,
    with `ineligibleNodesTotal` once it is cut. Nodes that match the job's selector but still get no pod
    (taints, resources, cordon) are kept first; then those the selector leaves out, each in name order."""
    if len(ineligible) <= INELIGIBLE_NODES:
        return {"ineligibleNodes": dict(ineligible)}
    shown = sorted(ineligible, key=lambda n: (ineligible[n] in left_out, n))[:INELIGIBLE_NODES]
    return {"ineligibleNodes": {n: ineligible[n] for n in sorted(shown)}, "ineligibleNodesTotal": len(ineligible)}


def part_document(entries: Mapping[str, Any]) -> dict[str, Any]:
    return {"nodes": dict(entries)}


def merged(record_name: str, parts: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The whole table from the record's parts, as a reader outside the engine sees it."""
    return stored_table({"nodeParts": 1}, by_index(record_name, parts))
