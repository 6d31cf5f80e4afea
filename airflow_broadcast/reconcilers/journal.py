"""A watch cache's collection at one moment, with the changes that led there.

A cache keeps a log of (key, object, or None once gone) for each large collection it hands out; the
log starts with an image of the collection and only grows, in place, until the cache starts a fresh
one. A snapshot is the log up to one length, so it never changes. Replaying it gives the objects in
the cache's own order (an update keeps an object's place, a new key goes last); a reader that kept
its place in the same log reads only what came after it, which is what makes a pass over a large
job cost O(changed objects) rather than O(nodes).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import compress, islice
from operator import is_not
from typing import Generic, TypeVar, overload

T = TypeVar("T")


class Journaled(Sequence[T], Generic[T]):
    """The objects of one collection as the log's first `end` entries leave them (a Sequence, built on demand)."""

    __slots__ = ("_objects", "_size", "end", "log")

    def __init__(self, log: list[tuple[str, T | None]], end: int, size: int) -> None:
        self.log, self.end, self._size = log, end, size
        self._objects: tuple[T, ...] | None = None

    def since(self, log: object, position: int) -> list[tuple[str, T | None]] | None:
        """The changes after `position` of `log`, or None when this snapshot is of another log (or older)."""
        if log is not self.log or position > self.end:
            return None
        return self.log[position:self.end]

    def latest(self) -> dict[str, T]:
        """Key to object, in the cache's order: the log replayed."""
        objects: dict[str, T] = {}
        for key, value in islice(self.log, self.end):
            if value is None:
                objects.pop(key, None)
            else:
                objects[key] = value
        return objects

    def _all(self) -> tuple[T, ...]:
        if self._objects is None:
            self._objects = tuple(self.latest().values())
        return self._objects

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...

    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        return self._all()[index]

    def __iter__(self) -> Iterator[T]:
        return iter(self._all())


def apply_changes(objects: dict[str, T], changes: Sequence[tuple[str, T | None]]) -> tuple[list[T], list[T]]:
    """Bring `objects` (a replay of the same log) up to date; (gone, added) objects by identity.

    The changes are applied in order, exactly as a replay would, so `objects` keeps the cache's order.
    """
    before: dict[str, T | None] = {}
    for key, value in changes:
        if key not in before:
            before[key] = objects.get(key)
        if value is None:
            objects.pop(key, None)
        else:
            objects[key] = value
    gone: list[T] = []
    added: list[T] = []
    for key, old in before.items():
        new = objects.get(key)
        if old is new:
            continue
        if old is not None:
            gone.append(old)
        if new is not None:
            added.append(new)
    return gone, added


def changed_objects(old: Sequence[T], new: Sequence[T]) -> tuple[list[T], list[T]]:
    """(gone, added) objects between two passes' inputs, by identity.

    The very same tuple again means nothing changed (the caches hand out one tuple until a change).
    The caches list their objects in a stable order, and a changed object takes its old one's place:
    then a positional comparison in C finds the few changed places. Otherwise (objects came or went)
    the two sets of ids are compared.
    """
    if old is new:
        return [], []
    if len(old) == len(new):
        at = list(compress(range(len(new)), map(is_not, old, new)))
        return [old[i] for i in at], [new[i] for i in at]
    before, after = dict(zip(map(id, old), old, strict=True)), dict(zip(map(id, new), new, strict=True))
    return [before[k] for k in before.keys() - after.keys()], [after[k] for k in after.keys() - before.keys()]


class ChangeTracker(Generic[T]):
    """One input of a pass (every node, or a job's pods) from pass to pass: what changed since the last.

    Given a snapshot of the same log as last time, it reads only the entries since then; given
    anything else (a plain sequence, or the first snapshot of a fresh log) it compares by identity
    with what it last held. It holds the objects it compares against, so their ids cannot be reused.
    """

    __slots__ = ("_at", "_held", "_log", "_objects")

    def __init__(self) -> None:
        self._held: Sequence[T] = ()
        self._objects: dict[str, T] | None = None  # a replay of `_log` up to `_at`, while following a log
        self._log: object = None
        self._at = 0

    def take(self, new: Sequence[T]) -> tuple[list[T], list[T]]:
        """(gone, added) since the last call; `new` becomes what the next call compares against."""
        if isinstance(new, Journaled):
            changes = new.since(self._log, self._at) if self._objects is not None else None
            if changes is not None and self._objects is not None:
                gone, added = apply_changes(self._objects, changes)
            else:
                latest = new.latest()
                gone, added = changed_objects(self.held(), tuple(latest.values()))
                self._objects = latest
            self._held, self._log, self._at = (), new.log, new.end
            return gone, added
        gone, added = changed_objects(self.held(), new)
        self._held = new if isinstance(new, tuple) else list(new)  # a list may change: keep a copy
        self._objects, self._log, self._at = None, None, 0
        return gone, added

    def held(self) -> Sequence[T]:
        return tuple(self._objects.values()) if self._objects is not None else self._held
