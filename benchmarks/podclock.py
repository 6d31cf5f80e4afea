"""One pod watch that times every method alike: from the first pod ADDED until N pods are Running.

The span until the N-th pod is ADDED is timed as well: it separates how fast a method creates
from how fast the cluster then runs what it created.

The clock runs in the benchmark's own process, never in the process it measures, so the engine's CPU
time stays the engine's. A pod counts as Running from the first event that shows it Running or
finished; "all Succeeded" is timed too when the pods are scripted to succeed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class PodClock:
    """Watch the pods of one namespace; `expected` pods, each on its own node, make the run complete."""

    kube: Any
    namespace: str
    expected: int
    first_added: float | None = None
    added_at: dict[str, float] = field(default_factory=dict)
    running_at: dict[str, float] = field(default_factory=dict)
    succeeded_at: dict[str, float] = field(default_factory=dict)
    nodes: dict[str, str] = field(default_factory=dict)
    events: int = 0
    _task: asyncio.Task[None] | None = None
    added: asyncio.Event = field(default_factory=asyncio.Event)  # set at the first pod ADDED
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _version: str = ""

    async def start(self) -> None:
        _, self._version = await self.kube.list_all(self._path())
        self._task = asyncio.get_running_loop().create_task(self._watch())

    def _path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods"

    async def _watch(self) -> None:
        while True:
            try:
                async for kind, pod in self.kube.watch(self._path(), resource_version=self._version,
                                                       timeout_seconds=600):
                    self._version = pod.get("metadata", {}).get("resourceVersion", self._version)
                    if kind != "BOOKMARK":
                        self._note(kind, pod)
            except asyncio.CancelledError:
                raise
            except Exception:  # a dropped watch: list again and go on (the first timestamps are kept)
                await asyncio.sleep(0.2)
                items, self._version = await self.kube.list_all(self._path())
                for pod in items:
                    self._note("MODIFIED", pod)

    def _note(self, kind: str, pod: dict[str, Any]) -> None:
        now = time.time()
        self.events += 1
        name = pod.get("metadata", {}).get("name", "")
        if kind == "ADDED":
            self.first_added = self.first_added or now
            self.added.set()
            self.added_at.setdefault(name, now)
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            self.nodes[name] = node
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Running", "Succeeded", "Failed"):
            self.running_at.setdefault(name, now)
        if phase == "Succeeded":
            self.succeeded_at.setdefault(name, now)
        self._changed.set()

    async def wait(self, done: str = "running", timeout: float = 1800.0) -> bool:
        """Until `expected` pods are Running (or Succeeded); False on timeout."""
        deadline = time.monotonic() + timeout
        seen = self.running_at if done == "running" else self.succeeded_at
        while len(seen) < self.expected:
            self._changed.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(remaining, 5.0))
        return True

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    def _span(self, stamps: dict[str, float]) -> float | None:
        if self.first_added is None or len(stamps) < self.expected:
            return None
        return round(sorted(stamps.values())[self.expected - 1] - self.first_added, 2)

    def summary(self) -> dict[str, Any]:
        last_done = max(self.succeeded_at.values(), default=None)
        return {
            "to_all_added_seconds": self._span(self.added_at),
            "to_all_running_seconds": self._span(self.running_at),
            "to_all_succeeded_seconds": self._span(self.succeeded_at) if self.succeeded_at else None,
            "pods_running": len(self.running_at), "pods_succeeded": len(self.succeeded_at),
            "distinct_nodes": len(set(self.nodes.values())), "pod_events": self.events,
            "first_added_epoch": self.first_added, "last_succeeded_epoch": last_done,
        }
