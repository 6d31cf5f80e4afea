"""The triggerer benchmark tells the collector's pauses apart from other stalls."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.stall_causes import blocked_warnings, gc_summary, stall_summary

LOG = """\
2026-12-04T10:00:10.000000Z [info     ] Triggerer's async thread was blocked for 0.50 seconds, exceeding the configured
2026-12-04T10:00:20.000000Z [info     ] 11 triggers currently running
2026-12-04T10:00:30.000000Z [info     ] Triggerer's async thread was blocked for 0.30 seconds, exceeding the configured
"""
T10 = 1796378410.0  # 2026-12-04T10:00:10Z


def test_blocked_warnings_are_read_with_their_time_and_length() -> None:
    assert blocked_warnings(LOG) == [(T10, 0.5), (T10 + 20, 0.3)]


def test_a_pause_that_ended_inside_a_block_explains_it(tmp_path: Path) -> None:
    probe = tmp_path / "probe.jsonl"
    lines = [{"t": T10, "gc": [[T10 - 0.1, 2, 0.4]]},  # ended inside the first block
             {"t": T10 + 25, "gc": [[T10 + 25, 1, 0.15]]}]  # between the blocks: explains neither
    probe.write_text("".join(json.dumps(line) + "\n" for line in lines))

    summary = gc_summary(LOG, probe)

    assert summary == {"gc_pauses_over_0_1s": 2, "gc_pauses_over_0_2s": 1, "gc_max_pause_seconds": 0.4,
                       "gc_full_collections_over_0_1s": 1, "blocked_warnings_during_gc": 1}


def test_each_blocked_warning_is_matched_to_a_stall_and_told_apart_by_the_loop_threads_cpu() -> None:
    warnings = [(100.0, 0.3), (200.0, 0.25), (300.0, 0.22)]
    lines = [{"stalls": [[99.98, 0.29, 0.27], [199.99, 0.24, 0.02]]}, {"stalls": [[250.0, 0.21, 0.0]]}]

    summary = stall_summary(warnings, lines)

    assert summary == {"loop_stalls_over_0_2s": 3, "blocked_warnings_running_on_loop": 1,
                       "blocked_warnings_descheduled": 1, "blocked_warnings_without_stall": 1}
    assert stall_summary(warnings, [{"gc": []}]) == {}
