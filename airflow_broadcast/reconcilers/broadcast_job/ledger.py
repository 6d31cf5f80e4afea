"""A BroadcastJob's rows from one pass to the next, so that a pass costs O(changed objects), not O(nodes).

The watch caches hand a pass the same NodeInfo, PodInfo and part objects for as long as they do not
change, and for a large collection a journal of what changed (reconcilers/journal.py). The ledger
reads the changes since its last pass from the journal, or else diffs the objects by identity in C,
then recomputes only the rows whose node, pod or stored result changed and adjusts its totals by
the difference. Every answer equals what a fresh ledger
computes from the same inputs (the unit tests replay passes both ways); the kept objects are held,
so their ids cannot be reused while they are compared.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from airflow_broadcast.reconcilers.broadcast_job import node_table as nt
from airflow_broadcast.reconcilers.broadcast_job.ledger_parts import PartBook
from airflow_broadcast.reconcilers.broadcast_job.ledger_rows import EMPTY, Row, RowRules, compute_row
from airflow_broadcast.reconcilers.broadcast_job.node_eligibility import LEFT_OUT_REASONS
from airflow_broadcast.reconcilers.broadcast_job.pods import bucket_of, is_owned, map_pods_to_nodes
from airflow_broadcast.reconcilers.journal import ChangeTracker
from airflow_broadcast.reconcilers.observed import NodeInfo, PodInfo
from airflow_broadcast.reconcilers.plan import JobEvent

INLINE_SOURCE = -1  # the record's own `status.nodes`, the stored table while it is small


class NodeLedger:
    """The rows of one job and their totals; `advance` brings them to a new pass's inputs."""

    def __init__(self, key: tuple[Any, ...], template: Mapping[str, Any], rules: RowRules,
                 owner: tuple[str, str, str | None], restart_limit: int) -> None:
        self.key, self.template, self.rules, self.owner, self.restart_limit = key, template, rules, owner, restart_limit
        self._nodes: ChangeTracker[NodeInfo] = ChangeTracker()
        self._named: dict[str, NodeInfo] = {}
        self._pods: ChangeTracker[PodInfo] = ChangeTracker()
        self._bucket: dict[int, str] = {}  # owned pods only
        self.counts = {"active": 0, "failed": 0, "succeeded": 0, "retrying": 0, "retrying_succeeded": 0}
        self.retrying: dict[int, PodInfo] = {}  # F15: failed pods whose nodes run again, kept apart so a pass reads few
        self.fail_job: dict[int, PodInfo] = {}  # F16: failed pods a FailJob rule matches
        self._on_node: dict[str, dict[int, PodInfo]] = {}
        self._multi: set[str] = set()
        self._sources: dict[int, Mapping[str, Any]] = {}
        self.stored: dict[str, Any] = {}
        self.rows: dict[str, Row] = {}
        self.desired = self.done = self.incomplete = self.terminal = self.reruns = self.rerun_successes = 0
        self.rest: list[str] = []
        self.entries: list[str] = []
        self.failed: set[str] = set()
        self.misfits: dict[str, PodInfo] = {}
        self.ineligible: dict[str, str] = {}
        self.warnings: dict[str, JobEvent] = {}
        self.duplicate_events: list[JobEvent] = []
        self._force: set[str] = set()
        self.book: PartBook | None = None
        self._ineligible_view: dict[str, Any] | None = None
        self._failed_sorted: list[str] | None = None
        self._view: dict[str, Any] | None = None  # the record's capped `nodes`, kept until a row in it changes

    # ---- one pass --------------------------------------------------------------------
    def advance(self, nodes: Sequence[NodeInfo], pods: Sequence[PodInfo],
                sources: Mapping[int, Mapping[str, Any]]) -> None:
        """Take a pass's inputs: every node, the namespace's pods of this job, the stored table by source."""
        dirty = self._force
        self._force = set()
        dirty |= self._take_nodes(nodes)
        dirty |= self._take_pods(pods)
        dirty |= self._take_sources(sources)
        dirty |= self._multi
        winners = self._order_duplicates(pods) if self._multi else {}
        for name in dirty:
            on_node = self._on_node.get(name)
            pod = winners.get(name) if name in self._multi else (
                next(iter(on_node.values())) if on_node else None)
            self._set_row(name, compute_row(name, self._named.get(name), pod, self.stored.get(name) or {},
                                            self.rules))

    def _take_nodes(self, nodes: Sequence[NodeInfo]) -> set[str]:
        gone, new = self._nodes.take(nodes)
        for node in gone:
            if self._named.get(node.name) is node:
                del self._named[node.name]
        for node in new:
            self._named[node.name] = node
        return {node.name for node in gone} | {node.name for node in new}

    def _take_pods(self, pods: Sequence[PodInfo]) -> set[str]:
        gone, new = self._pods.take(pods)
        dirty: set[str] = set()
        for pod in gone:
            key = id(pod)
            bucket = self._bucket.pop(key, None)
            if bucket is None:
                continue
            if bucket:
                self.counts[bucket] -= 1
                self.counts["retrying_succeeded"] -= bucket == "retrying" and pod.phase == "Succeeded"
            self.retrying.pop(key, None)
            self.fail_job.pop(key, None)
            if pod.node:
                on_node = self._on_node[pod.node]
                del on_node[key]
                if len(on_node) < 2:
                    self._multi.discard(pod.node)
                if not on_node:
                    del self._on_node[pod.node]
                dirty.add(pod.node)
        job_name, uid, owner_kind = self.owner
        for pod in new:
            key = id(pod)
            if not is_owned(pod, job_name, uid, owner_kind):
                continue
            failures = self.rules.failures
            bucket = self._bucket[key] = "retrying" if failures.retrying(pod) else bucket_of(pod, self.restart_limit)
            if bucket:
                self.counts[bucket] += 1
                self.counts["retrying_succeeded"] += bucket == "retrying" and pod.phase == "Succeeded"
            if bucket == "retrying":
                self.retrying[key] = pod
            elif failures.rules and failures.fails_job(pod):
                self.fail_job[key] = pod
            if pod.node:
                on_node = self._on_node.setdefault(pod.node, {})
                on_node[key] = pod
                if len(on_node) > 1:
                    self._multi.add(pod.node)
                dirty.add(pod.node)
        return dirty

    def _take_sources(self, sources: Mapping[int, Mapping[str, Any]]) -> set[str]:
        """The stored table is the union of its sources, a later source winning (as node_table.stored_table)."""
        changed = [k for k in self._sources.keys() | sources.keys() if self._sources.get(k) is not sources.get(k)]
        if not changed:
            return set()
        before = self._sources
        self._sources = dict(sorted(sources.items()))
        dirty: set[str] = set()
        for key in changed:
            names = set((before.get(key) or {}).keys()) | set((sources.get(key) or {}).keys())
            for name in names:
                value = next((s[name] for s in reversed(self._sources.values()) if name in s), None)
                if value is None:
                    old = self.stored.pop(name, None)
                else:
                    old, self.stored[name] = self.stored.get(name), value
                if old != value:
                    dirty.add(name)
            if self.book is not None and key >= 0:
                self.book.restore(key, sources.get(key) or {}, self.rows)
        return dirty

    def _order_duplicates(self, pods: Sequence[PodInfo]) -> dict[str, PodInfo]:
        """P9: the last of a node's pods in input order wins, and every duplicate gets a Warning (rare: O(pods))."""
        owned = [p for p in pods if id(p) in self._bucket]
        winners, self.duplicate_events = map_pods_to_nodes(owned)
        return {name: winners[name] for name in self._multi}

    # ---- rows and totals -------------------------------------------------------------
    def set_entry(self, name: str, entry: dict[str, Any]) -> None:
        """Record a result this pass decided (a created pod); the row is recomputed from its inputs next pass."""
        self._set_row(name, replace(self.rows.get(name, EMPTY), entry=entry))
        self._force.add(name)

    def _set_row(self, name: str, row: Row) -> None:
        old = self.rows.get(name, EMPTY)
        if old is row or (old.ineligible is not None and old == row):
            return  # a node the job does not run on changed in a way that does not matter (most node updates)
        self._count(name, old, -1)
        self._count(name, row, 1)
        if row is EMPTY:
            self.rows.pop(name, None)
        else:
            self.rows[name] = row
        if self.book is not None:
            self.book.update(name, old, row, self.stored_part(name))
        if self._view is not None and (name in self._view or (old.entry is None) != (row.entry is None)
                                       or _failed(old) != _failed(row)):
            self._view = None

    def _count(self, name: str, row: Row, sign: int) -> None:
        if row.desired:
            self.desired += sign
            self.incomplete += 0 if row.complete else sign
        self.done += sign if row.done else 0
        if row.rest:
            insort(self.rest, name) if sign > 0 else _sorted_remove(self.rest, name)
            self.reruns += sign if row.phase in nt.TERMINAL else 0  # a node whose pod went, to run again
            self.rerun_successes += sign if row.phase == "Succeeded" else 0
        if row.entry is not None:
            insort(self.entries, name) if sign > 0 else _sorted_remove(self.entries, name)
            self.terminal += sign if row.phase in nt.TERMINAL else 0
            if _failed(row):
                self.failed.add(name) if sign > 0 else self.failed.discard(name)
                self._failed_sorted = None
        _keyed(self.misfits, name, row.misfit, sign)
        if row.ineligible is not None:
            _keyed(self.ineligible, name, row.ineligible, sign)
            self._ineligible_view = None
        _keyed(self.warnings, name, row.warning, sign)

    # ---- what a pass reads -----------------------------------------------------------
    def stored_part(self, name: str) -> Mapping[str, Any] | None:
        return None if self.book is None else self.book.stored_entry(name, self._sources)

    def events(self) -> list[JobEvent]:
        """Duplicate-pod warnings, then the unschedulable warnings in node order (as the reference pass)."""
        return [*(self.duplicate_events if self._multi else ()), *(self.warnings[n] for n in sorted(self.warnings))]

    @property
    def waiting(self) -> int:
        """F15: nodes waiting for their next attempt: a retrying pod, or a pod gone and its node to run again."""
        return self.counts["retrying"] + self.reruns

    @property
    def waiting_successes(self) -> int:
        """Of `waiting`, the nodes whose last result is a success (V18: a re-run of a new template)."""
        return self.counts["retrying_succeeded"] + self.rerun_successes

    def status_counts(self) -> dict[str, int]:
        """The status counts (S3-S6) and `retrying` (F15)."""
        return {"active": self.counts["active"], "failed": self.counts["failed"],
                "succeeded": self.counts["succeeded"] + self.done, "desired": self.desired, "retrying": self.waiting}

    def bucket(self, pod: PodInfo) -> str:
        return self._bucket.get(id(pod), "")

    def owned_pods(self, pods: Sequence[PodInfo], bucket: str) -> list[PodInfo]:
        """The owned pods of one bucket in input order (only on a pass that deletes them: O(pods))."""
        return [p for p in pods if self._bucket.get(id(p)) == bucket]

    def capped_ineligible(self) -> dict[str, Any]:
        """`ineligibleNodes` (and its total once capped), rebuilt only when a node's eligibility changed."""
        if self._ineligible_view is None:
            self._ineligible_view = nt.capped_ineligible({n: self.ineligible[n] for n in sorted(self.ineligible)},
                                                         LEFT_OUT_REASONS)
        return {k: dict(v) if isinstance(v, dict) else v for k, v in self._ineligible_view.items()}

    def failed_names(self) -> list[str]:
        if self._failed_sorted is None:
            self._failed_sorted = sorted(self.failed)
        return self._failed_sorted

    def sharded_fields(self, parts: int) -> dict[str, Any]:
        """The record's fields for a table kept in parts (node_table.sharded_status, from the totals)."""
        failed = self.failed_names()
        if self._view is None:
            shown = failed[:nt.VIEW_NODES]
            for name in self.entries:
                if len(shown) >= nt.VIEW_NODES:
                    break
                if name not in self.failed:
                    shown.append(name)
            self._view = {n: self.rows[n].entry for n in sorted(shown)}
        return {"nodes": dict(self._view), "nodeParts": parts,
                "nodesTotal": len(self.entries), "nodesDone": self.terminal,
                "failedNodes": failed[:nt.FAILED_NAMES], "failedNodesTotal": len(failed)}

    def table(self) -> dict[str, Any]:
        return {name: self.rows[name].entry for name in self.entries}

    def open_book(self, parts: int) -> PartBook:
        """The per-part bookkeeping for a table kept in `parts` parts (built once, then kept up to date)."""
        if self.book is None or self.book.parts != parts:
            self.book = PartBook.build(parts, self.rows, self.entries, self._sources)
        return self.book


def _keyed(target: dict[str, Any], name: str, value: Any, sign: int) -> None:
    if value is None:
        return
    if sign > 0:
        target[name] = value
    else:
        target.pop(name, None)


def _sorted_remove(names: list[str], name: str) -> None:
    index = bisect_left(names, name)
    if index < len(names) and names[index] == name:
        del names[index]


def _failed(row: Row) -> bool:
    """The node's result is a failure that stands (F15: a node that runs again, or is about to, has not failed yet)."""
    return row.phase == "Failed" and not row.retrying and not row.rest
