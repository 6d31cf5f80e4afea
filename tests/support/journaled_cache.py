"""One cached collection kept as an informer keeps it: a dict in the cache's order, and its journal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Generic, TypeVar

from airflow_broadcast.cluster import cache_journals
from airflow_broadcast.cluster.cache_journals import CacheJournals

T = TypeVar("T")


class JournaledCache(Generic[T]):
    def __init__(self, objects: Mapping[str, T] | None = None) -> None:
        self.bucket: dict[str, T] = {}
        self.journals: CacheJournals[T] = CacheJournals()
        for key, value in (objects or {}).items():
            self.put(key, value)

    def put(self, key: str, value: T) -> None:
        self.bucket[key] = value
        self.journals.record(None, key, value, self.bucket)

    def remove(self, key: str) -> None:
        del self.bucket[key]
        self.journals.record(None, key, None, self.bucket)

    def sync(self, objects: Mapping[str, T]) -> Sequence[T]:
        """Become `objects` (removals first, then changed and new keys in their order); the snapshot."""
        for key in [k for k in self.bucket if k not in objects]:
            self.remove(key)
        for key, value in objects.items():
            if self.bucket.get(key) is not value:
                self.put(key, value)
        return self.snapshot()

    def snapshot(self) -> Sequence[T]:
        """What an informer hands a pass: a tuple while small, else a journaled snapshot."""
        if len(self.bucket) < cache_journals.JOURNAL_ABOVE:
            return tuple(self.bucket.values())
        return self.journals.snapshot(None, self.bucket)
