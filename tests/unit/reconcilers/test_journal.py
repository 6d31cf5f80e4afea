"""Journaled snapshots: a replay equals the cache, and a reader of the same log gets exactly what changed."""

from __future__ import annotations

import random

from airflow_broadcast.reconcilers.journal import ChangeTracker, Journaled, apply_changes


class Obj:
    """A stand-in for a cached object: compared by identity only, as the caches' objects are."""

    def __init__(self, key: str) -> None:
        self.key = key


def test_a_snapshot_replays_to_the_cache_in_its_order_and_never_changes_after() -> None:
    a1, b1, c1, a2 = Obj("a"), Obj("b"), Obj("c"), Obj("a")
    log: list[tuple[str, Obj | None]] = [("a", a1), ("b", b1), ("c", c1), ("b", None), ("a", a2)]
    snap = Journaled(log, len(log), 2)
    log.append(("d", Obj("d")))  # the cache goes on after the snapshot was taken

    assert list(snap) == [a2, c1], "an update keeps its place, a removal leaves, later entries are not seen"
    assert len(snap) == 2 and snap[0] is a2 and snap[-1] is c1
    assert snap.since(log, 3) == [("b", None), ("a", a2)]
    assert snap.since([], 0) is None, "another log: the reader must compare whole collections"
    assert snap.since(log, 6) is None, "a place beyond the snapshot is from a later one"


def test_applied_changes_report_each_key_once_by_its_first_and_last_object() -> None:
    a1, a2, a3, b1, c1 = Obj("a"), Obj("a"), Obj("a"), Obj("b"), Obj("c")
    objects = {"a": a1, "b": b1}
    gone, added = apply_changes(objects, [("a", a2), ("c", c1), ("a", a3), ("b", None), ("c", None)])
    assert gone == [a1, b1] and added == [a3]
    assert objects == {"a": a3}


def test_a_tracker_following_a_log_finds_what_an_identity_diff_finds() -> None:
    rng = random.Random(7)
    cache: dict[str, Obj] = {}
    log: list[tuple[str, Obj | None]] = []
    following, diffing = ChangeTracker[Obj](), ChangeTracker[Obj]()
    for step in range(300):
        for _ in range(rng.randint(0, 12)):
            key = f"k{rng.randrange(120)}"
            if key in cache and rng.random() < 0.2:
                del cache[key]
                log.append((key, None))
            else:
                cache[key] = Obj(key)
                log.append((key, cache[key]))
        fresh_log = step % 97 == 96
        if fresh_log:  # the cache starts a fresh log, an image of the collection: the reader compares all
            log = list(cache.items())  # type: ignore[arg-type]
        snap = Journaled(log, len(log), len(cache))
        assert list(snap) == list(cache.values())
        gone, added = following.take(snap)
        if not fresh_log:
            assert not {id(o) for o in gone} & {id(o) for o in added}, "a log reports only real changes"
        assert net(*diffing.take(tuple(cache.values()))) == net(gone, added)


def net(gone: list[Obj], added: list[Obj]) -> tuple[set[int], set[int]]:
    """What left and what came, without an object a positional diff reports as both (it moved)."""
    left, came = {id(o) for o in gone}, {id(o) for o in added}
    return left - came, came - left


def test_a_tracker_moves_between_plain_sequences_and_journals_without_losing_a_change() -> None:
    a, b, c = Obj("a"), Obj("b"), Obj("c")
    tracker = ChangeTracker[Obj]()
    assert tracker.take([a, b]) == ([], [a, b])
    log: list[tuple[str, Obj | None]] = [("a", a), ("c", c)]
    gone, added = tracker.take(Journaled(log, 2, 2))
    assert (gone, added) == ([b], [c])
    assert tracker.take((a,)) == ([c], [])
