"""Which parts of a large node table hold stale results, kept up to date row by row (see node_table, ledger).

A part is rewritten once a quarter of its nodes changed, or when the job is done: the book knows, for each
part, the nodes with a result in it and the nodes whose result differs from what the part stores, so the
decision costs nothing per unchanged node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_broadcast.reconcilers.broadcast_job import node_table as nt
from airflow_broadcast.reconcilers.broadcast_job.ledger_rows import Row


class PartBook:
    """`names[k]`: nodes with a result in part k; `changed[k]`: nodes whose kept result differs from part k's."""

    def __init__(self, parts: int) -> None:
        self.parts = parts
        self.names: list[set[str]] = [set() for _ in range(parts)]
        self.changed: list[set[str]] = [set() for _ in range(parts)]

    @classmethod
    def build(cls, parts: int, rows: Mapping[str, Row], entries: list[str],
              sources: Mapping[int, Mapping[str, Any]]) -> PartBook:
        book = cls(parts)
        for name in entries:
            book.names[nt.part_of(name, parts)].add(name)
        for index in range(parts):
            book.restore(index, sources.get(index) or {}, rows)
        return book

    def stored_entry(self, name: str, sources: Mapping[int, Mapping[str, Any]]) -> Mapping[str, Any] | None:
        part = sources.get(nt.part_of(name, self.parts))
        return None if part is None else part.get(name)

    def restore(self, index: int, stored: Mapping[str, Any], rows: Mapping[str, Row]) -> None:
        """Part `index` was (re)read: compare it whole with the rows (O(part), a handful of times per run)."""
        if index >= self.parts:
            return
        names = self.names[index]
        self.changed[index] = {n for n in names | stored.keys()
                               if (rows[n].durable if n in names else None) != stored.get(n)}

    def update(self, name: str, old: Row, new: Row, stored: Mapping[str, Any] | None) -> None:
        index = nt.part_of(name, self.parts)
        if new.entry is not None:
            self.names[index].add(name)
        elif old.entry is not None:
            self.names[index].discard(name)
        if new.durable != stored:
            self.changed[index].add(name)
        else:
            self.changed[index].discard(name)

    def writes(self, rows: Mapping[str, Row], *, done: bool) -> dict[int, dict[str, Any]]:
        """The parts to rewrite (index → its whole table), as node_table.part_writes decides."""
        writes: dict[int, dict[str, Any]] = {}
        for index in range(self.parts):
            changed, names = len(self.changed[index]), self.names[index]
            if changed and (done or changed * nt.FLUSH_FRACTION >= max(len(names), 1)):
                writes[index] = {n: rows[n].durable for n in names}
        return writes
