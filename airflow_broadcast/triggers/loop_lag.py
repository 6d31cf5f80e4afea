"""Measure how late the event loop wakes up: the figure Airflow's triggerer watchdog warns about (> 0.2 s)."""

from __future__ import annotations

import asyncio
import gc
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class LoopLag:
    """Samples of wake-up delay, in seconds, of a task that sleeps `interval` in a loop."""

    interval: float = 0.05
    samples: list[float] = field(default_factory=list)
    stalls: list[tuple[float, float]] = field(default_factory=list)
    _gc_started: float = 0.0

    gc_pauses: list[tuple[int, float]] = field(default_factory=list)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.gc_pauses.append((int(info.get("generation", -1)), time.perf_counter() - self._gc_started))

    async def run(self) -> None:
        gc.callbacks.append(self._on_gc)
        try:
            await self._sample()
        finally:
            gc.callbacks.remove(self._on_gc)

    async def _sample(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(self.interval)
            lag = max(0.0, time.perf_counter() - start - self.interval)
            self.samples.append(lag)
            if lag > 0.2:
                self.stalls.append((round(time.time(), 2), round(lag, 3)))

    def report(self) -> dict[str, Any]:
        if not self.samples:
            return {"samples": 0, "p50": 0.0, "p99": 0.0, "max": 0.0, "over_0_2s": 0}
        ordered = sorted(self.samples)
        return {
            "samples": len(ordered),
            "p50": round(ordered[len(ordered) // 2], 4),
            "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 4),
            "max": round(ordered[-1], 4),
            "over_0_2s": sum(1 for s in ordered if s > 0.2),
            "stalls_at": self.stalls[:10],
            "gc_max_pause": round(max((p for _, p in self.gc_pauses), default=0.0), 4),
            "gc_full_collections": sum(1 for g, _ in self.gc_pauses if g == 2),
        }
