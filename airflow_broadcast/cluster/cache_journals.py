"""The journals of a watch cache's large collections (see reconcilers/journal.py for what a reader does).

A collection gets a journal when a pass first asks for it, and only when it holds many objects. Its
log starts afresh (an image of the collection) once it is more than twice the collection long, so
it stays O(collection) in memory and a reader that falls behind rebuilds once; a journal nobody read
since its last fresh start (its job is done) is dropped instead, as is the journal of an emptied one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Generic, TypeVar

from airflow_broadcast.reconcilers.journal import Journaled

T = TypeVar("T")
JOURNAL_ABOVE = 64  # objects: a smaller collection is handed out as a tuple, which a pass diffs in microseconds
JOURNAL_SLACK = 256  # log entries beyond twice the collection before the log starts afresh


class CacheJournals(Generic[T]):
    """Logs by index value (None: the whole cache)."""

    __slots__ = ("_logs", "_read")

    def __init__(self) -> None:
        self._logs: dict[str | None, list[tuple[str, T | None]]] = {}
        self._read: set[str | None] = set()

    def snapshot(self, index_value: str | None, bucket: Mapping[str, T]) -> Journaled[T]:
        log = self._logs.get(index_value)
        if log is None:
            log = self._logs[index_value] = list(bucket.items())
        self._read.add(index_value)
        return Journaled(log, len(log), len(bucket))

    def record(self, index_value: str | None, key: str, value: T | None, bucket: Mapping[str, T] | None) -> None:
        """One change, already applied to `bucket` (the collection as it is now)."""
        log = self._logs.get(index_value)
        if log is None:
            return
        if not bucket:
            self.drop(index_value)
            return
        log.append((key, value))
        if len(log) <= 2 * len(bucket) + JOURNAL_SLACK:
            return
        if index_value in self._read:
            self._logs[index_value] = list(bucket.items())
            self._read.discard(index_value)
        else:
            self.drop(index_value)

    def drop(self, index_value: str | None) -> None:
        self._logs.pop(index_value, None)
        self._read.discard(index_value)
