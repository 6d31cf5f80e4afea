"""The gap between a woken pass and the one before: proportional to the pass's cost, never a fixed debounce."""

from __future__ import annotations

import asyncio

import pytest

from airflow_broadcast.cluster import pass_pacing as reconcile_loop
from airflow_broadcast.cluster.pass_pacing import coalesce_gap as _coalesce_gap


def test_a_cheap_pass_is_followed_within_milliseconds() -> None:
    """A 1 ms pass woken right after it ends waits MIN_PASS_GAP (2 ms), not a quarter of a second."""
    assert _coalesce_gap(since_start=0.001, took=0.001) == pytest.approx(reconcile_loop.MIN_PASS_GAP)


def test_an_expensive_pass_waits_as_long_as_it_took() -> None:
    assert _coalesce_gap(since_start=0.1, took=0.1) == pytest.approx(0.1)


def test_the_gap_is_capped_at_the_pass_interval() -> None:
    assert _coalesce_gap(since_start=2.0, took=2.0) == pytest.approx(reconcile_loop.MIN_PASS_INTERVAL)


def test_time_spent_waiting_for_the_wake_up_counts_toward_the_gap() -> None:
    assert _coalesce_gap(since_start=0.5, took=0.1) == 0.0


async def test_a_job_that_stays_quiet_for_a_resync_is_told_it_is_idle_once() -> None:
    quiet: list[int] = []
    wake = asyncio.Event()
    waiting = asyncio.ensure_future(reconcile_loop.wait_for_work(wake, None, 0.01, lambda: False,
                                                                 lambda: quiet.append(1)))
    await asyncio.sleep(0.05)  # several resyncs, none of them woken
    assert quiet == [1]
    wake.set()
    await asyncio.wait_for(waiting, 1)
    assert quiet == [1]


async def test_a_job_woken_before_its_first_resync_is_not_idle() -> None:
    quiet: list[int] = []
    wake = asyncio.Event()
    wake.set()
    await asyncio.wait_for(reconcile_loop.wait_for_work(wake, None, 10.0, lambda: False, lambda: quiet.append(1)), 1)
    assert quiet == []

