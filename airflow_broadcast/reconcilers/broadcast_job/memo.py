"""Results remembered per object identity, so that a pass recomputes only what changed since the last one.

The watch caches hand a pass the same PodInfo and NodeInfo objects for as long as the pod or node does
not change, and a new object when it does. A result computed from given objects is remembered with
those objects and reused only when the very same objects come again (`is`, never equality), so a pass
stays a pure function of its inputs while an unchanged pod or node costs a dictionary lookup. The
remembered objects are held, so their ids cannot be reused; the memo is emptied when it grows past
MAX_ENTRIES (about three entries per node of the largest fleets).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

A = TypeVar("A")
B = TypeVar("B")
R = TypeVar("R")

MAX_ENTRIES = 65536


class IdentityMemo(Generic[A, B, R]):
    """`memo(key, a, b, compute)`: compute(a, b), unless the last call with `key` passed these very objects."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: dict[str, tuple[A, B, R]] = {}
        self._max = max_entries

    def __call__(self, key: str, a: A, b: B, compute: Callable[[A, B], R]) -> R:
        hit = self._entries.get(key)
        if hit is not None and hit[0] is a and hit[1] is b:
            return hit[2]
        result = compute(a, b)
        if len(self._entries) >= self._max:
            self._entries.clear()
        self._entries[key] = (a, b, result)
        return result
