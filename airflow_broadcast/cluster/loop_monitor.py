"""Measure how late the event loop wakes up: the figure Airflow's triggerer watchdog warns about (> 0.2 s)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field


@dataclass
class LoopLag:
    """Samples of wake-up delay, in seconds, of a task that sleeps `interval` in a loop."""

    interval: float = 0.05
    samples: list[float] = field(default_factory=list)

    async def run(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(self.interval)
            self.samples.append(max(0.0, time.perf_counter() - start - self.interval))

    def report(self) -> dict[str, float]:
        if not self.samples:
            return {"samples": 0, "p50": 0.0, "p99": 0.0, "max": 0.0, "over_0_2s": 0}
        ordered = sorted(self.samples)
        return {
            "samples": len(ordered),
            "p50": round(ordered[len(ordered) // 2], 4),
            "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 4),
            "max": round(ordered[-1], 4),
            "over_0_2s": sum(1 for s in ordered if s > 0.2),
        }
