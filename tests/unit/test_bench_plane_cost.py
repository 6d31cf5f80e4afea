"""What a round costs the plane: CPU read from /proc, requests from the apiserver's counters."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.plane_cost import (
    TOP_REQUEST_KINDS,
    cpu_spent,
    plane_cpu,
    process_cpu_seconds,
    request_counts,
    requests_made,
)


def _line(verb: str, resource: str, subresource: str, code: str, value: str) -> str:
    labels = (f'code="{code}",component="apiserver",dry_run="",group="",resource="{resource}",'
              f'scope="resource",subresource="{subresource}",verb="{verb}",version="v1"')
    return f"apiserver_request_total{{{labels}}} {value}"


METRICS = "\n".join([
    "# HELP apiserver_request_total [STABLE] Counter of apiserver requests",
    "# TYPE apiserver_request_total counter",
    _line("POST", "pods", "", "201", "1000"),
    _line("POST", "pods", "", "409", "3"),
    _line("PATCH", "pods", "status", "200", "2.5e+03"),
    _line("GET", "", "/metrics", "200", "7"),
    'apiserver_request_duration_seconds_count{verb="POST",resource="pods"} 99999',
])


def test_requests_are_summed_by_verb_and_resource_over_codes() -> None:
    counts = request_counts(METRICS)

    assert counts == Counter({"POST pods": 1003, "PATCH pods/status": 2500, "GET -//metrics": 7})


def test_requests_made_are_the_difference_with_the_busiest_kinds_first() -> None:
    before = Counter({"POST pods": 10, "GET nodes": 5})
    after = Counter({"POST pods": 1010, "GET nodes": 5, "PUT configmaps": 4,
                     **{f"GET kind{i}": 1 for i in range(TOP_REQUEST_KINDS)}})

    made = requests_made(before, after)

    assert made["plane_requests"] == 1000 + 4 + TOP_REQUEST_KINDS
    top = made["plane_requests_top"]
    assert list(top)[:2] == ["POST pods", "PUT configmaps"] and len(top) == TOP_REQUEST_KINDS
    assert "GET nodes" not in top  # no new requests of that kind


def test_cpu_of_a_process_is_user_and_system_time_of_all_its_threads() -> None:
    before = process_cpu_seconds(os.getpid())
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    after = process_cpu_seconds(os.getpid())

    assert before is not None and after is not None
    assert after - before >= 0.2  # the busy loop shows in /proc within a few clock ticks


def test_a_command_name_with_spaces_and_parentheses_is_read_past(tmp_path: Path) -> None:
    fields = ["S"] + ["0"] * 10 + ["250", "150"] + ["0"] * 30  # state, ..., utime (14), stime (15)
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "stat").write_text(f"42 (kube (api) server) {' '.join(fields)}\n")
    ticks = os.sysconf("SC_CLK_TCK")

    assert process_cpu_seconds(42, tmp_path) == pytest.approx(400 / ticks)


def test_gone_processes_are_left_out_and_spent_cpu_is_per_process_and_in_all(tmp_path: Path) -> None:
    assert plane_cpu({"etcd": 999_999_999}, tmp_path) == {}
    spent = cpu_spent({"etcd": 1.0, "kwok": 2.0, "gone": 1.0}, {"etcd": 1.5, "kwok": 2.25})

    assert spent == {"etcd": 0.5, "kwok": 0.25, "total": 0.75}
