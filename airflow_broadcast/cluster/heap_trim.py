"""Hand freed C heap back to the operating system after bursts (glibc `malloc_trim`).

A triggerer parses thousands of API responses while its jobs start, then holds a few
objects per idle job. glibc keeps the freed memory of such a burst mapped: measured,
about a third of a triggerer's resident memory per idle job was freed heap, not live
objects (docs/performance.md). Python never asks glibc to return it, so the
process's RSS stays at its high-water mark. One trimmer per event loop looks at the
resident size now and then and trims when it grew since the last trim.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import os
import time
import weakref
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

CHECK_SECONDS = 30.0
GROWTH_BYTES = 8 * 1024 * 1024  # trim once the resident size grew this much since the last trim
SLOW_TRIM_SECONDS = 0.2


def _load_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None (musl, macOS: nothing to do)."""
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_trim = _load_trim()


def resident_bytes() -> int:
    """This process's resident set size now (0 where /proc is not there)."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def trim_heap() -> bool:
    """Return the free memory of every malloc arena to the system; False where glibc is not in use."""
    if _trim is None:
        return False
    _trim(0)
    return True


class HeapTrimmer:
    """Trims when the process grew by `growth` bytes since the last trim, checking every `every` seconds.

    The trim runs in a worker thread: Python's small objects live in its own arenas, so
    the event loop mostly keeps running while glibc walks its heap.
    """

    def __init__(self, every: float = CHECK_SECONDS, growth: int = GROWTH_BYTES,
                 measure: Callable[[], int] = resident_bytes, trim: Callable[[], bool] = trim_heap) -> None:
        self.every, self.growth, self.measure, self.trim = every, growth, measure, trim
        self.baseline = measure()
        self.trims = 0

    async def check(self) -> bool:
        """One look: trim if the process grew enough; True when it trimmed."""
        if self.measure() - self.baseline < self.growth:
            return False
        started = time.monotonic()
        if not await asyncio.to_thread(self.trim):
            self.baseline = self.measure()
            return False
        took = time.monotonic() - started
        if took > SLOW_TRIM_SECONDS:
            log.info("returning freed heap to the system took %.2f s", took)
        self.trims += 1
        self.baseline = self.measure()
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            await self.check()


_running: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[None]] = weakref.WeakKeyDictionary()


def start_heap_trimmer() -> None:
    """One trimmer task for the running loop (idempotent); nothing where glibc is not in use."""
    if _trim is None:
        return
    loop = asyncio.get_running_loop()
    task = _running.get(loop)
    if task is None or task.done():
        _running[loop] = loop.create_task(HeapTrimmer().run(), name="airflow-broadcast-heap-trim")


async def stop_heap_trimmer() -> None:
    task = _running.pop(asyncio.get_running_loop(), None)
    if task is not None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
