"""The benchmark's pod clock: the span until every pod was created, apart from the span until every pod ran."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks import podclock
from benchmarks.podclock import PodClock


def _pod(name: str, phase: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"nodeName": f"node-{name}"}, "status": {"phase": phase}}


def test_the_clock_times_creation_and_running_separately(monkeypatch: pytest.MonkeyPatch) -> None:
    clock, now = PodClock(kube=None, namespace="ns", expected=2), [100.0]
    monkeypatch.setattr(podclock.time, "time", lambda: now[0])
    for at, kind, pod in ((100.0, "ADDED", _pod("a", "Pending")), (101.0, "ADDED", _pod("b", "Pending")),
                          (103.0, "MODIFIED", _pod("a", "Running")), (106.0, "MODIFIED", _pod("b", "Running"))):
        now[0] = at
        clock._note(kind, pod)
    summary = clock.summary()
    assert summary["to_all_added_seconds"] == 1.0
    assert summary["to_all_running_seconds"] == 6.0
    assert summary["distinct_nodes"] == 2
