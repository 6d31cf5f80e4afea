"""The lag probe's sampler reads what the loop's thread runs while the loop is late, and nothing while it ticks."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from benchmarks.lag_probe import Stalls, StallStacks, _where


def _hold_the_loop(seconds: float) -> None:
    time.sleep(seconds)


def test_a_stall_is_sampled_with_the_frame_that_held_the_loop() -> None:
    async def scenario() -> StallStacks:
        stacks = StallStacks(after=0.05)
        stacks.start(threading.get_ident())
        ticking = asyncio.get_running_loop().create_task(Stalls(stacks).run())
        await asyncio.sleep(0.2)  # ticking: nothing to sample
        quiet = len(stacks.samples)
        _hold_the_loop(0.3)
        await asyncio.sleep(0.05)
        ticking.cancel()
        stacks.stop()
        assert quiet == 0
        return stacks

    stacks = asyncio.run(scenario())
    assert len(stacks.samples) >= 5  # 0.25 s late, sampled every 20 ms
    _, late, queued, stack, threads = stacks.samples[-1]
    assert late >= 0.2 and queued == -1  # no log socket outside a triggerer
    assert stack[-1].startswith("tests/unit/test_bench_stall_stacks.py:") and stack[-1].endswith(" _hold_the_loop")
    assert threads == {}  # the loop's thread slept: no thread of the process ran


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_a_stall_records_the_cpu_of_the_loops_thread_and_of_the_process() -> None:
    async def scenario() -> list[tuple[float, float, float, float, float]]:
        stalls = Stalls()
        ticking = asyncio.get_running_loop().create_task(stalls.run())
        await asyncio.sleep(0.05)
        _spin(0.2)  # the loop's thread runs
        await asyncio.sleep(0.05)
        _hold_the_loop(0.2)  # nothing runs
        await asyncio.sleep(0.05)
        ticking.cancel()
        return stalls.stalls

    spun, slept = asyncio.run(scenario())
    assert spun[1] >= 0.15 and spun[2] >= spun[1] / 2 and spun[3] >= spun[2]
    assert slept[1] >= 0.15 and slept[2] < slept[1] / 2 and slept[3] < slept[1] / 2
    if Path("/proc/thread-self/schedstat").exists():  # asleep, the thread was not waiting for a CPU either
        assert 0 <= slept[4] < slept[1] / 2 and 0 <= spun[4] < spun[1]
    else:
        assert slept[4] == spun[4] == -1


def test_frames_are_named_without_the_machines_paths() -> None:
    assert _where("/opt/venv/lib/python3.11/site-packages/aiohttp/client.py") == "aiohttp/client.py"
    assert _where("/usr/local/lib/python3.11/asyncio/events.py") == "python3.11/asyncio/events.py"
