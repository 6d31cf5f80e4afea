"""The comparison's rounds put every method at every place alike, so drift over a run favours none."""

from __future__ import annotations

from benchmarks.compare import _round_order

METHODS = ("raw", "watched", "shaped", "engine")


def test_a_pair_of_rounds_runs_one_order_forwards_then_backwards() -> None:
    assert _round_order(METHODS, 0) == METHODS
    assert _round_order(METHODS, 1) == METHODS[::-1]


def test_over_a_pair_every_method_has_the_same_mean_place() -> None:
    for pair in range(6):
        places = {m: 0 for m in METHODS}
        for round_no in (2 * pair, 2 * pair + 1):
            for place, method in enumerate(_round_order(METHODS, round_no)):
                places[method] += place
        assert set(places.values()) == {len(METHODS) - 1}


def test_each_pair_starts_one_method_further_on() -> None:
    firsts = [_round_order(METHODS, 2 * pair)[0] for pair in range(len(METHODS) + 1)]

    assert firsts == [*METHODS, METHODS[0]]
