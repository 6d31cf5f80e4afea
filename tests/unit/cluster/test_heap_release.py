"""Freed heap goes back to the operating system when jobs go quiet: debounced, off the loop, and switchable."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from airflow_broadcast.cluster import heap_release, shared_clients
from airflow_broadcast.cluster.heap_release import HeapRelease


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _Trim:
    """Counts calls and records the thread each ran on."""

    def __init__(self) -> None:
        self.threads: list[int] = []
        self.done = threading.Event()

    def __call__(self) -> int:
        self.threads.append(threading.get_ident())
        self.done.set()
        return 1


async def _settle(trim: _Trim) -> None:
    await asyncio.to_thread(trim.done.wait, 5)
    trim.done.clear()
    await asyncio.sleep(0)


async def test_a_request_releases_once_in_a_worker_thread() -> None:
    trim = _Trim()
    release = HeapRelease(trim, gap=30.0, clock=_Clock())
    release.request()
    release.request()  # the second request finds the first one pending
    await _settle(trim)
    assert len(trim.threads) == 1
    assert trim.threads[0] != threading.get_ident()  # never on the event loop's thread
    assert release.released == 1


async def test_requests_within_the_gap_wait_for_it_and_coalesce() -> None:
    trim, clock = _Trim(), _Clock()
    release = HeapRelease(trim, gap=0.2, clock=clock)
    release.request()
    await _settle(trim)
    clock.now += 0.05  # 0.15 s of the gap left
    release.request()
    release.request()
    await asyncio.sleep(0.05)
    assert len(trim.threads) == 1  # not yet: the gap holds it back
    await _settle(trim)
    assert len(trim.threads) == 2


async def test_switched_off_or_without_malloc_trim_nothing_runs() -> None:
    trim = _Trim()
    release = HeapRelease(trim, clock=_Clock())
    release.enabled = False
    release.request()
    unavailable = HeapRelease(None)
    unavailable.request()
    await asyncio.sleep(0.05)
    assert trim.threads == []
    assert not unavailable.available


def test_a_request_left_on_an_ended_loop_does_not_block_the_next_loop() -> None:
    trim, clock = _Trim(), _Clock()
    release = HeapRelease(trim, gap=30.0, clock=clock)
    clock.now = 0.0

    async def first() -> None:
        release.request()
        await _settle(trim)
        release.request()  # pending 30 s: the loop ends first

    async def second() -> None:
        clock.now += 60.0
        release.request()
        await _settle(trim)

    asyncio.run(first())
    asyncio.run(second())
    assert len(trim.threads) == 2


def test_this_machine_has_a_real_malloc_trim_and_it_returns() -> None:
    """glibc, as on every supported Linux image: the call is real, not a stand-in."""
    trim = heap_release._libc_trim()
    assert trim is not None
    assert trim() in (0, 1)


@pytest.mark.parametrize("enabled", [True, False])
async def test_the_shared_client_applies_the_setting(monkeypatch: pytest.MonkeyPatch, enabled: bool) -> None:
    monkeypatch.setattr(heap_release.process_release(), "enabled", not enabled)

    class _Api:
        async def close(self) -> None:
            return None

    async def factory() -> Any:
        return _Api()

    await shared_clients.shared_client(f"release-{enabled}", factory, freeze_heap=False, release_heap=enabled)
    assert heap_release.process_release().enabled is enabled
    heap_release.configure(True)


async def test_a_job_going_quiet_forgets_its_parse_then_asks_for_a_release(monkeypatch: pytest.MonkeyPatch) -> None:
    trim = _Trim()
    monkeypatch.setattr(heap_release, "_process", HeapRelease(trim, clock=_Clock()))
    forgotten: list[bool] = []
    heap_release.after(lambda: forgotten.append(True))()
    await _settle(trim)
    assert forgotten == [True]
    assert len(trim.threads) == 1


def test_a_c_library_without_malloc_trim_gives_no_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """musl and macOS: the lookup fails, and the releaser stays idle instead of raising."""
    class _NoTrim:
        def __getattr__(self, name: str) -> Any:
            raise AttributeError(name)

    monkeypatch.setattr(heap_release.ctypes, "CDLL", lambda _name: _NoTrim())
    assert heap_release._libc_trim() is None
