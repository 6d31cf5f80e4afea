"""A job's wake-up flag and the caches' subscriber table: the Event semantics the loop relies on, in less memory."""

from __future__ import annotations

import asyncio
import sys
import tracemalloc

import pytest

from airflow_broadcast.cluster.cache_subscribers import ANY_KEY, Subscribers
from airflow_broadcast.cluster.informers import Informer
from airflow_broadcast.cluster.pass_pacing import wait_event
from airflow_broadcast.cluster.wake import ChildWake, Wake


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


def _lazy_when_equal(old: object, new: object) -> bool:
    return old == new


async def test_a_child_change_that_only_moves_counts_wakes_the_loop_after_the_gap_not_at_once() -> None:
    wake = Wake()
    children = ChildWake(wake, _lazy_when_equal, gap=0.05)
    children.heed("running", "running")
    children.heed("running", "running")  # a second one while the first waits: still one timer
    assert not wake.is_set()
    assert await wait_event(wake, 1.0), "woken once the gap passed"


async def test_an_urgent_child_change_wakes_the_loop_at_once_even_while_a_lazy_one_waits() -> None:
    wake = Wake()
    children = ChildWake(wake, _lazy_when_equal, gap=10.0)
    children.heed("running", "running")
    children.heed("running", "succeeded")
    assert wake.is_set()
    wake.clear()
    children.heed(None, "new pod")
    assert wake.is_set(), "a pod that appeared is acted on at once"


async def test_a_pass_that_starts_has_seen_the_waiting_lazy_change() -> None:
    wake = Wake()
    children = ChildWake(wake, _lazy_when_equal, gap=0.02)
    children.heed("running", "running")
    children.seen()
    assert not await wait_event(wake, 0.1), "the pass read it: no second pass for it"


async def test_subscribers_hand_a_heeding_waker_the_values_before_and_after() -> None:
    seen: list[tuple[object, object]] = []

    class Heeding:
        def set(self) -> None:
            seen.append(("set", "set"))

        def heed(self, old: object, new: object) -> None:
            seen.append((old, new))

    subscribers, plain = Subscribers(), Wake()
    subscribers.subscribe("uid-1", Heeding())
    subscribers.subscribe("uid-1", plain)
    subscribers.notify("uid-1", "before", "after")
    assert seen == [("before", "after")] and plain.is_set()


def _pod(phase: str, version: int) -> dict[str, object]:
    return {"metadata": {"name": "p", "resourceVersion": str(version), "labels": {"job": "uid-1"}},
            "status": {"phase": phase}}


async def test_a_cache_hands_a_childs_old_and_new_value_to_its_job_which_waits_only_for_running() -> None:
    """The pod cache, as a BroadcastJob's loop subscribes to it: Running waits for the gap, Succeeded does not."""
    pods: Informer[dict[str, object]] = Informer(None, "/api/v1/pods", lambda o: o, index_label="job")  # type: ignore[arg-type]
    wake = Wake()
    pods.subscribe("uid-1", ChildWake(wake, lambda old, new: new["status"]["phase"] == "Running", gap=10.0))
    pods.upsert(_pod("Pending", 1))
    assert wake.is_set(), "a new pod is acted on at once"
    wake.clear()
    pods.upsert(_pod("Running", 2))
    assert not wake.is_set(), "started running: within the gap"
    pods.upsert(_pod("Succeeded", 3))
    assert wake.is_set(), "finished: at once"
