"""The identity memo: a result is reused only for the very same objects, so a pass stays a function of its inputs."""

from __future__ import annotations

from airflow_broadcast.reconcilers.broadcast_job.memo import IdentityMemo


def test_the_same_objects_reuse_the_result_and_equal_new_ones_recompute_it() -> None:
    memo: IdentityMemo[list[int], None, int] = IdentityMemo()
    calls: list[int] = []

    def total(values: list[int], _: None) -> int:
        calls.append(1)
        return sum(values)

    first = [1, 2]
    assert memo("k", first, None, total) == 3
    assert memo("k", first, None, total) == 3
    assert len(calls) == 1
    assert memo("k", [1, 2], None, total) == 3  # equal, not the same: computed again
    assert len(calls) == 2
    first.append(3)  # never happens to a watch cache's objects; shown to make the rule plain
    assert memo("k", [1, 2, 3], None, total) == 6


def test_a_memo_lets_go_of_everything_once_it_reaches_its_bound() -> None:
    memo: IdentityMemo[list[int], None, int] = IdentityMemo(max_entries=2)
    kept = [[1], [2], [3]]
    for index, value in enumerate(kept):
        memo(f"k{index}", value, None, lambda a, _: sum(a))
    assert list(memo._entries) == ["k2"]  # the third entry found the memo full: it was emptied first
