"""The heap trimmer returns freed heap after growth, not on every look, and runs once per loop while clients exist."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
from typing import Any

import pytest

from airflow_broadcast.cluster import heap_trim, shared_clients


class _Sizes:
    def __init__(self, *values: int) -> None:
        self.values = list(values)

    def __call__(self) -> int:
        return self.values.pop(0) if len(self.values) > 1 else self.values[0]


async def test_trims_only_after_the_process_grew_past_the_threshold() -> None:
    calls: list[int] = []
    sizes = _Sizes(100, 105, 100 + 20, 90, 95)  # baseline, small growth, big growth, after the trim, small growth
    trimmer = heap_trim.HeapTrimmer(growth=10, measure=sizes, trim=lambda: calls.append(1) is None)
    assert await trimmer.check() is False, "grew 5 of the 10 needed"
    assert await trimmer.check() is True, "grew 20"
    assert (calls, trimmer.trims, trimmer.baseline) == ([1], 1, 90), "the new baseline is the size after the trim"
    assert await trimmer.check() is False, "grew 5 since the trim"
    assert calls == [1]


async def test_without_glibc_nothing_is_trimmed_and_the_baseline_moves() -> None:
    trimmer = heap_trim.HeapTrimmer(growth=10, measure=_Sizes(0, 50, 60), trim=lambda: False)
    assert await trimmer.check() is False
    assert trimmer.trims == 0 and trimmer.baseline == 60


def test_trim_returns_freed_heap_to_the_system() -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"))  # the provider's platform: Linux with glibc
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    # 64 MiB of 64 KiB blocks (below the mmap threshold: they live in the heap), all but the last freed
    blocks = [libc.malloc(64 * 1024) for _ in range(1024)]
    for block in blocks:
        ctypes.memset(block, 1, 64 * 1024)
    for block in blocks[:-1]:
        libc.free(block)
    before = heap_trim.resident_bytes()
    assert heap_trim.trim_heap() is True
    after = heap_trim.resident_bytes()
    libc.free(blocks[-1])
    assert before - after > 32 * 1024 * 1024, f"trim gave back {(before - after) >> 20} MiB of 64 freed"


class _Api:
    async def close(self) -> None:
        return None


async def _factory() -> Any:
    return _Api()


async def test_one_trimmer_per_loop_while_it_has_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shared_clients, "_frozen", True)
    await shared_clients.shared_client("trim-a", _factory, trim_heap=True)
    await shared_clients.shared_client("trim-b", _factory, trim_heap=True)
    named = [t for t in asyncio.all_tasks() if t.get_name() == "airflow-broadcast-heap-trim"]
    assert len(named) == 1
    await shared_clients.close_clients_on_this_loop()
    assert named[0].cancelled()
    assert not [t for t in asyncio.all_tasks() if t.get_name() == "airflow-broadcast-heap-trim"]
