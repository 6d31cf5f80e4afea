"""A job's wake-up flag and the caches' subscriber table: the Event semantics the loop relies on, in less memory."""

from __future__ import annotations

import asyncio
import sys
import tracemalloc

import pytest

from airflow_broadcast.cluster.cache_subscribers import ANY_KEY, Subscribers
from airflow_broadcast.cluster.pass_pacing import wait_event
from airflow_broadcast.cluster.wake import Wake


async def test_a_wake_set_before_the_wait_returns_at_once_and_stays_set_until_cleared() -> None:
    wake = Wake()
    wake.set()
    assert await wait_event(wake, 0.01) and wake.is_set()
    wake.clear()
    assert not await wait_event(wake, 0.01), "cleared: the wait times out"


async def test_a_set_wakes_the_waiter_and_a_timeout_leaves_no_waiter_behind() -> None:
    wake = Wake()
    assert not await wait_event(wake, 0.01)
    waiting = asyncio.get_running_loop().create_task(wait_event(wake, 5.0))
    await asyncio.sleep(0.01)
    wake.set()
    assert await asyncio.wait_for(waiting, 1.0)
    wake.clear()
    assert not await wait_event(wake, 0.01), "the cancelled wait of the timeout can be followed by another"


async def test_a_second_concurrent_waiter_is_refused() -> None:
    wake = Wake()
    first = asyncio.get_running_loop().create_task(wake.wait())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="one waiter"):
        await wake.wait()
    first.cancel()


def test_a_wake_is_a_tenth_of_an_event() -> None:
    def traced(make: type) -> int:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        kept = [make() for _ in range(1000)]
        size = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert len(kept) == 1000
        return size

    assert traced(Wake) * 5 < traced(asyncio.Event)
    assert sys.getsizeof(Wake()) < 100


class Flag:
    def __init__(self) -> None:
        self.times = 0

    def set(self) -> None:
        self.times += 1


def test_one_subscriber_is_held_without_a_set_and_more_share_one() -> None:
    table, a, b = Subscribers(), Flag(), Flag()
    table.subscribe("uid", a)
    table.subscribe("uid", a)
    assert table["uid"] is a
    table.subscribe("uid", b)
    assert table["uid"] == {a, b}
    table.notify("uid")
    assert (a.times, b.times) == (1, 1)
    table.unsubscribe("uid", a)
    assert table["uid"] is b, "back to one: held directly again"
    table.unsubscribe("uid", b)
    assert "uid" not in table
    table.unsubscribe("uid", b)  # twice is harmless


def test_notify_wakes_a_value_and_everyone_on_any_key_and_nobody_else() -> None:
    table, mine, all_, other = Subscribers(), Flag(), Flag(), Flag()
    table.subscribe("uid", mine)
    table.subscribe(ANY_KEY, all_)
    table.subscribe("other", other)
    table.notify("uid")
    table.notify("nobody")
    assert (mine.times, all_.times, other.times) == (1, 2, 0)
