"""A benchmark-only trigger that samples the triggerer's event loop from inside it.

It runs next to the provider's triggers in the same `airflow triggerer` loop, samples the wake-up
delay with the provider's own LoopLag, and every `flush_seconds` appends one JSON line to `path`:
the time, the new lag samples, and the API requests the provider's shared clients on this loop have
sent so far, and the garbage collections that paused the process for 0.1 s or more (when, which
generation, how long): a stall the triggerer warns about that matches one of them is the collector's,
not a trigger's; each stall of the loop of 0.1 s or more with the CPU time its thread and the process got
meanwhile (see Stalls); the loop thread's stacks sampled while the loop was late (see StallStacks), which
name what held it (`benchmarks/stall_causes.py`); and the log socket's queue. It ends (one event) when
`stop_path` exists.

With BENCH_TRACEMALLOC_DIR set, it traces allocations from its start and, when the benchmark leaves
`<dir>/<step>.request`, dumps a snapshot to `<dir>/<step>.dump`: the difference of two steps says
where the memory of the jobs added between them went (`python -m benchmarks.memory_diff`).

With BENCH_GC_CENSUS_DIR set, a request there gets a census of the collector's objects instead
(`benchmarks/gc_census.py`).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import threading
import time
import traceback
import tracemalloc
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_broadcast.triggers.loop_lag import LoopLag
from benchmarks.gc_census import write_censuses


def provider_requests() -> tuple[int, dict[str, int]]:
    """Requests sent so far by every shared client of the provider on the running loop: in all, and by route."""
    from airflow_broadcast.cluster import shared_clients

    clients = shared_clients._clients.get(asyncio.get_running_loop(), {}).values()
    routes: Counter[str] = sum((client.requests_by_route for client in clients), Counter())
    return sum(client.requests_sent for client in clients), dict(routes)


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


_channels: dict[int, Any] = {}  # pid → the probe's own view of the log socket


def log_queue() -> tuple[int, int]:
    """(bytes queued, send buffer) of the socket that carries the runner's logs to the supervisor; -1 unknown.

    The probe finds the socket itself and leaves its buffer as it is (the provider's writer grows it when
    it first writes), so the comparator's triggerer keeps Airflow's buffer.
    """
    from airflow_broadcast.hooks.log_channel import _find_channel

    if os.getpid() not in _channels:
        _channels[os.getpid()] = _find_channel(0)
    channel = _channels[os.getpid()]
    return (channel.queued(), channel.capacity) if channel is not None else (-1, -1)


GC_REPORTED_SECONDS = 0.1


class GcPauses:
    """Collections of the whole process that took GC_REPORTED_SECONDS or more: (end time, generation, seconds)."""

    def __init__(self) -> None:
        self.pauses: list[tuple[float, int, float]] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        took = time.perf_counter() - self._started
        if took >= GC_REPORTED_SECONDS:
            self.pauses.append((round(time.time(), 3), int(info.get("generation", -1)), round(took, 3)))


STALL_SECONDS = 0.1  # the watchdog warns when its 0.1 s sleep takes over 0.2 s: behind each warning, a stall of 0.1 s


class Stalls:
    """Gaps of STALL_SECONDS or more between two 10 ms wake-ups of the loop: (end time, gap, CPU-s of the loop's
    thread, CPU-s of the whole process, seconds the loop's thread waited on a run queue) over the gap.

    The times say what the stall was: the loop's thread ran for most of it (a callback, or the collector); the
    process's other threads did (the loop's thread waited for the interpreter lock they held); or neither did,
    and then the run-queue wait (the kernel's schedstat, -1 where it has none) tells a thread that was ready
    but had no CPU from one that was off the CPUs otherwise (a blocking call, or the machine's vCPU itself).
    """

    def __init__(self, stacks: StallStacks | None = None) -> None:
        self.stalls: list[tuple[float, float, float, float, float]] = []
        self.stacks = stacks

    async def run(self) -> None:
        waited = RunQueueWait()
        wall, cpu, process, queued = time.perf_counter(), time.thread_time(), time.process_time(), waited()
        try:
            while True:
                await asyncio.sleep(0.01)
                now, used, used_by_all = time.perf_counter(), time.thread_time(), time.process_time()
                in_queue = waited()
                if self.stacks is not None:
                    self.stacks.tick = now
                if now - wall - 0.01 >= STALL_SECONDS:
                    wait = round(in_queue - queued, 3) if min(in_queue, queued) >= 0 else -1.0
                    self.stalls.append((round(time.time(), 3), round(now - wall - 0.01, 3), round(used - cpu, 3),
                                        round(used_by_all - process, 3), wait))
                wall, cpu, process, queued = now, used, used_by_all, in_queue
        finally:
            waited.close()


class RunQueueWait:
    """Seconds the calling thread has waited on a run queue so far (`/proc/thread-self/schedstat`), -1 if unknown.

    The file stays open: one read per call, cheap enough for the sampler's 10 ms tick.
    """

    def __init__(self) -> None:
        try:
            self._fd: int | None = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        except OSError:
            self._fd = None

    def __call__(self) -> float:
        if self._fd is None:
            return -1.0
        try:
            return int(os.pread(self._fd, 128, 0).split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            return -1.0

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def thread_cpu() -> dict[str, float]:
    """CPU-s of each of the process's Python threads, by name (a thread that ended meanwhile is left out)."""
    found = {}
    for thread in threading.enumerate():
        try:
            found[thread.name] = time.clock_gettime(time.pthread_getcpuclockid(thread.ident or 0))
        except (OSError, OverflowError):
            continue
    return found


_REPO = str(Path(__file__).resolve().parents[1]) + os.sep


def _where(filename: str) -> str:
    """A frame's file without the machine's paths: relative to the repository, site-packages or the stdlib."""
    if "site-packages/" in filename:
        return filename.rsplit("site-packages/", 1)[1]
    if filename.startswith(_REPO):
        return filename[len(_REPO):]
    head, _, tail = filename.rpartition("/lib/python3")
    return "python3" + tail if head else filename.rsplit("/", 1)[-1]


class StallStacks:
    """What the loop's thread was running while the loop did not tick for `after` s, sampled every 20 ms.

    A thread reads the loop thread's stack (`sys._current_frames`) whenever the Stalls sampler's last tick
    is `after` or more ago: the stacks of one stall say which code the loop ran through it (or, when the
    interpreter lock was held elsewhere, where the loop's thread waited for it), with the log socket's queue
    at that moment and the CPU-s each of the process's threads got since the sample before. It runs in the
    provider's triggerer and in the comparator's alike.
    """

    def __init__(self, after: float = 0.05) -> None:
        self.samples: list[tuple[float, float, int, list[str], dict[str, float]]] = []
        self.tick = time.perf_counter()
        self._after, self._stop = after, threading.Event()

    def start(self, loop_thread: int) -> None:
        threading.Thread(target=self._sample, args=(loop_thread,), daemon=True, name="stall-stacks").start()

    def stop(self) -> None:
        self._stop.set()

    def _sample(self, loop_thread: int) -> None:
        before = thread_cpu()
        while not self._stop.wait(0.02):
            late = time.perf_counter() - self.tick
            frame = sys._current_frames().get(loop_thread) if late >= self._after else None
            now = thread_cpu()
            if frame is not None:
                stack = [f"{_where(f.filename)}:{f.lineno} {f.name}" for f in traceback.extract_stack(frame, limit=25)]
                ran = {name: round(cpu - before.get(name, cpu), 3) for name, cpu in now.items()
                       if name != threading.current_thread().name}  # its own reading is not the process's work
                self.samples.append((round(time.time(), 3), round(late, 3), log_queue()[0], stack,
                                     {name: cpu for name, cpu in ran.items() if cpu >= 0.001}))
            before = now


class LagProbeTrigger(BaseTrigger):
    """Sample loop lag and the provider's request count until `stop_path` appears."""

    def __init__(self, path: str, stop_path: str, flush_seconds: float = 2.0) -> None:
        super().__init__()
        self.path = path
        self.stop_path = stop_path
        self.flush_seconds = flush_seconds

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{type(self).__module__}.{type(self).__qualname__}", {
            "path": self.path, "stop_path": self.stop_path, "flush_seconds": self.flush_seconds}

    def _append(self, text: str) -> None:
        with open(self.path, "a") as out:
            out.write(text)

    @staticmethod
    def _snapshots(folder: str) -> None:
        for request in Path(folder).glob("*.request"):
            tracemalloc.take_snapshot().dump(str(request.with_suffix(".dump")))
            request.unlink()

    async def run(self) -> AsyncIterator[TriggerEvent]:
        traced = os.environ.get("BENCH_TRACEMALLOC_DIR")
        if traced:
            tracemalloc.start(12)
        lag = LoopLag()
        sampler = asyncio.get_running_loop().create_task(lag.run())
        stacks = StallStacks()
        stacks.start(threading.get_ident())
        stalls = Stalls(stacks)
        stall_sampler = asyncio.get_running_loop().create_task(stalls.run())
        collections = GcPauses()
        gc.callbacks.append(collections)
        written = gc_written = stalls_written = stacks_written = 0
        try:
            while not await asyncio.to_thread(os.path.exists, self.stop_path):
                await asyncio.sleep(self.flush_seconds)
                requests, routes = provider_requests()
                line = {"t": time.time(), "lag": lag.samples[written:], "requests": requests, "routes": routes,
                        "runner_rss_kib": rss_kib(), "pid": os.getpid(), "gc": collections.pauses[gc_written:],
                        "stalls": stalls.stalls[stalls_written:], "log_queue": log_queue(),
                        "stall_stacks": stacks.samples[stacks_written:]}
                written, gc_written = len(lag.samples), len(collections.pauses)
                stalls_written, stacks_written = len(stalls.stalls), len(stacks.samples)
                await asyncio.to_thread(self._append, json.dumps(line) + "\n")
                if traced:
                    self._snapshots(traced)
                if os.environ.get("BENCH_GC_CENSUS_DIR"):
                    write_censuses(os.environ["BENCH_GC_CENSUS_DIR"])
        finally:
            gc.callbacks.remove(collections)
            stacks.stop()
            sampler.cancel()
            stall_sampler.cancel()
        yield TriggerEvent({"samples": written})
