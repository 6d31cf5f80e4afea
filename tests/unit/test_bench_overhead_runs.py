"""The table of every recorded overhead run: both ratios, computed from the rounds, and the pooled summary."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks import overhead_runs


def _run(method: str, nodes: int, rnd: int, seconds: float | None) -> dict[str, Any]:
    return {"method": method, "nodes": nodes, "round": rnd, "reached": seconds is not None,
            "to_all_running_seconds": seconds}


def _result(times: dict[str, list[float | None]], nodes: int = 1000, quota: float | None = 1.5) -> dict[str, Any]:
    runs = [_run(m, nodes, i, t) for m, per_round in times.items() for i, t in enumerate(per_round)]
    return {"machine": {"commit": "abc1234", "cpu": "AMD EPYC"}, "plane_cpus": quota, "runs": runs}


def test_the_paired_ratio_divides_within_each_round_and_the_other_divides_medians() -> None:
    # Round 2 is slow for both methods: pairing cancels it, the ratio of medians does not.
    result = _result({"raw-nodename": [4.0, 5.0, 10.0], "engine-nodename-lifted": [4.4, 5.0, 13.0]})

    [row] = overhead_runs.run_rows({"overhead.json": result})

    of_medians, paired, per_round = row["engine"]
    assert of_medians == pytest.approx(5.0 / 5.0)
    assert per_round == pytest.approx([1.1, 1.0, 1.3])
    assert paired == pytest.approx(1.1)
    assert row["shaped"] is None and row["rounds"] == 3


def test_a_round_in_which_a_method_never_got_to_all_running_is_left_out_of_both() -> None:
    result = _result({"raw-nodename": [4.0, None, 5.0], "engine-nodename-lifted": [4.0, 4.0, 6.0]})

    [row] = overhead_runs.run_rows({"overhead.json": result})

    assert row["rounds"] == 2
    assert row["engine"][2] == pytest.approx([1.0, 1.2])


def test_the_table_lists_each_run_and_pools_only_runs_with_the_plane_under_a_quota() -> None:
    results = {
        "overhead-a.json": _result({"raw-nodename": [4.0, 4.0], "engine-nodename-lifted": [4.0, 4.8],
                                    "raw-nodename-shaped": [4.0, 4.0]}),
        "overhead-b.json": _result({"raw-nodename": [4.0], "engine-nodename-lifted": [8.0]}, quota=None),
    }

    text = overhead_runs.table(results)

    assert "| 1,000 | `overhead-a.json` | abc1234 | AMD EPYC | 1.5 | 2 | 1.10 | 1.10 (1.00 to 1.20) | 1.00 |" in text
    assert "| 1,000 | `overhead-b.json` | abc1234 | AMD EPYC | none (shared cores) | 1 | 2.00 |" in text
    assert "is 1.10 at 1,000 nodes (2 rounds, 1 of them at 1.1 or less)" in text
    assert "the same round has a median of 1.10 at 1,000 nodes (2 rounds)" in text


def test_a_run_counts_as_within_the_goal_only_if_every_size_it_ran_is() -> None:
    both = {"raw-nodename": [4.0, 4.0], "engine-nodename-lifted": [4.0, 4.4]}
    one = {"raw-nodename": [4.0, 4.0], "engine-nodename-lifted": [4.8, 4.8]}
    results = {"overhead-a.json": {**_result(both), "runs": [*_result(both)["runs"], *_result(both, 3000)["runs"]]},
               "overhead-b.json": {**_result(both), "runs": [*_result(both)["runs"], *_result(one, 3000)["runs"]]}}

    text = overhead_runs.table(results)

    assert "by the ratio of medians, `overhead-a.json`; by the paired ratio, `overhead-a.json`." in text
