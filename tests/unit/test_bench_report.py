"""docs/performance.md says which code each section measured, and reports a true median."""

from __future__ import annotations

from typing import Any

from benchmarks import report

MACHINE = {"cores": 2, "cpu": "AMD EPYC", "commit": "abc1234", "load_average_at_start": [0.5, 1.0, 1.5]}


def _compare(detections: list[float], machine: dict[str, Any] | None = None) -> dict[str, Any]:
    runs = [{"nodes": 1000, "method": "engine-nodename", "complete": True, "last_done_to_event_seconds": d}
            for d in detections]
    return {"table": [], "rounds": 1, "complete_rounds": len(runs), "runs": runs, "machine": machine or MACHINE}


def test_the_machine_line_names_no_commit_for_results_refreshed_piece_by_piece() -> None:
    line = report._machine({"compare": _compare([]), "triggerer": {"machine": {**MACHINE, "commit": "def5678"}}})

    assert "abc1234" not in line and "def5678" not in line
    assert "Each section names the commit its run measured" in line


def test_the_comparison_names_its_own_commit_and_load() -> None:
    text = "\n".join(report._compare(_compare([0.01])))

    assert "Code at abc1234; load average at start 0.50, 1.00, 1.50." in text


def test_a_section_whose_run_recorded_no_commit_claims_none() -> None:
    assert report._code({"machine": {"cores": 2}}) == ""
    assert report._simple("TFJob", {"workers": 10}, ["workers"])[:3] == ["## TFJob", "", "| figure | value |"]


def test_a_simple_section_names_its_commit_before_its_table() -> None:
    lines = report._simple("TFJob", {"workers": 10, "machine": MACHINE}, ["workers"])

    assert lines[2].startswith("Code at abc1234")
    assert "| workers | 10 |" in lines


def test_detection_p50_of_an_even_count_is_the_mean_of_the_middle_two() -> None:
    text = "\n".join(report._compare(_compare([0.093, 0.012, 0.057, 0.025])))

    assert "p50 41 ms over 4 jobs (max 93 ms)" in text


def test_the_idle_requests_are_listed_by_route_for_each_step_and_old_results_list_none() -> None:
    steps = [{"jobs": 10, "provider_requests_in_window": {}},
             {"jobs": 1000, "provider_requests_in_window": {"LIST pods": 1, "WATCH pods": 2}}]

    text = "\n".join(report._routes(steps))

    assert "by route: 10 jobs: none; 1,000 jobs: LIST pods 1, WATCH pods 2." in text
    assert report._routes([{"jobs": 10}]) == []
