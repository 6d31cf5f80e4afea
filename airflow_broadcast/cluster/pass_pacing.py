"""When the next reconcile pass runs: on a change or a due timer, soon after the last one, never on a fixed debounce."""

from __future__ import annotations

import asyncio
import random
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from airflow_broadcast.cluster.wake import ChildWake, Flag, Wake
from airflow_broadcast.reconcilers.plan import Plan, earliest

MIN_PASS_INTERVAL = 0.25  # the longest gap between passes that coalesces a burst of watch events
MIN_PASS_GAP = 0.002  # the shortest, so that a burst of events that arrive together costs one pass
RESYNC_JITTER = 0.2
FULL_RESYNC_EVERY = 10  # an unconditional pass at least every 10 resyncs (5 minutes by default)
PROGRESS_WRITE_GAP = 1.0  # the Job controller's syncJobBatchPeriod: status count updates at most once a second


def coalesce_gap(since_start: float, took: float) -> float:
    """How long to wait before a woken pass, so that a burst of watch events costs one pass.

    The gap after a pass is as long as its computation took (`took`, at least MIN_PASS_GAP, at most
    MIN_PASS_INTERVAL), counted from its start: a cheap pass runs again within milliseconds, so the last
    pod's event reaches the trigger at once, while an expensive pass can use at most about half of the
    loop's time. The API writes that follow a pass do not count: events that arrive during them wait for
    the next pass anyway. No fixed debounce remains.
    """
    gap = min(MIN_PASS_INTERVAL, max(MIN_PASS_GAP, took))
    return max(0.0, took + gap - since_start)


async def wait_for_work(wake: Flag, timer_at: float | None, resync: float, broken: Callable[[], bool],
                        idle: Callable[[], None] = lambda: None) -> None:
    """Wait until a watched object changes, the plan's timer (monotonic `timer_at`) is due, or a full resync.

    A resync that finds nothing changed (no watch woke us: the caches, hence the pass, are as before)
    skips the pass, except every FULL_RESYNC_EVERY-th one, so that 1,000 idle jobs cost nearly nothing.
    Each resync is jittered, so that jobs started together do not all wake in the same instant.
    `idle` runs once, at the first resync that finds nothing to do: the job has gone quiet.
    """
    for turn in range(FULL_RESYNC_EVERY):
        left = None if timer_at is None else timer_at - time.monotonic()
        interval = resync * random.uniform(1 - RESYNC_JITTER, 1 + RESYNC_JITTER)
        if await wait_event(wake, earliest(left, interval)) or (left is not None and left <= interval) or broken():
            return
        if turn == 0:
            idle()


async def wait_event(event: Flag, timeout: float | None) -> bool:
    """True when `event` was set, False when `timeout` passed first.

    `asyncio.timeout`, not `wait_for`: an idle job waits here, and `wait_for` would hold a Task
    (and its coroutine and context) per waiting job.
    """
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return False
    await asyncio.sleep(0)  # one more loop step, as wait_for took: events of the same burst on other watches land
    return True


_turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


def pass_turn() -> asyncio.Lock:
    """The running loop's turn for an inline pass: one at a time, each in its own loop iteration.

    An inline pass is one synchronous step of a few milliseconds. Fifty triggers that start in
    the same second would otherwise all be ready in one iteration and hold the loop for their
    sum; taking turns costs no throughput (one thread runs them anyway) and bounds the lag.
    """
    loop = asyncio.get_running_loop()
    turn = _turns.get(loop)
    if turn is None:
        turn = _turns[loop] = asyncio.Lock()
    return turn


class ProgressWrites:
    """A status write that only moves counts waits until PROGRESS_WRITE_GAP after the last status write.

    While 1,000 pods finish, a pass runs every few tens of milliseconds, and writing the record
    after each one kept the loop waiting on the API server, so the last pod's event waited for
    the write before it. A held plan is simply not applied: the next pass computes the status
    again from the record (level-triggered). Transitions (phase, conditions), events, children,
    parts and annotations are written at once, and so is a status that finishes or settles the job.
    """

    def __init__(self, gap: float = PROGRESS_WRITE_GAP) -> None:
        self.gap = gap
        self.last = -gap

    def hold(self, plan: Plan, recorded: Mapping[str, Any], decisive: bool, now: float) -> float | None:
        """Seconds to hold this plan back (monotonic `now`), or None to apply it now."""
        if decisive or plan.finished or not _counts_only(plan, recorded):
            return None
        left = self.last + self.gap - now
        return left if left > 0 else None

    def applied(self, plan: Plan, now: float) -> None:
        if plan.status is not None:
            self.last = now


def child_wake(wake: Wake, lazy: Callable[[Any, Any], bool]) -> ChildWake:
    """A job's waker for its children: a change that `lazy` calls count-only waits for the next progress write."""
    return ChildWake(wake, lazy, PROGRESS_WRITE_GAP)


def _counts_only(plan: Plan, recorded: Mapping[str, Any]) -> bool:
    status = plan.status
    if status is None or plan.events or plan.record_parts or plan.record_annotations:
        return False
    if plan.create_pods or plan.create_services or plan.create_objects or plan.deletes:
        return False
    return all(status.get(key) == recorded.get(key) for key in ("phase", "conditions"))
