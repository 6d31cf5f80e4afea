"""A job's wake-up flag: an asyncio.Event for one waiter, at a tenth of the memory.

An idle job holds its flags for as long as it runs, and `asyncio.Event` brings a deque of
waiters (about 860 bytes with it); 1,000 idle jobs in one triggerer hold two each. A job's
flag has exactly one waiter, its own loop, so one future at a time is enough.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol


class Flag(Protocol):
    """What a loop waits on: an asyncio.Event or a Wake."""

    def set(self) -> None: ...

    def clear(self) -> None: ...

    def is_set(self) -> bool: ...

    async def wait(self) -> Any: ...


class Wake:
    """set() / clear() / is_set() / wait() as on asyncio.Event, for a single waiter at a time."""

    __slots__ = ("_set", "_waiter")

    def __init__(self) -> None:
        self._set = False
        self._waiter: asyncio.Future[None] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if not self._set:
            self._set = True
            waiter = self._waiter
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    def clear(self) -> None:
        self._set = False

    async def wait(self) -> bool:
        """Return True once set (at once if it is); cancellation leaves the flag as it was."""
        if self._set:
            return True
        if self._waiter is not None:
            raise RuntimeError("a Wake has one waiter at a time")
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
            return True
        finally:
            self._waiter = None


class ChildWake:
    """Wakes a job's loop when one of its children changes: at once, or within `gap` seconds when
    `lazy(old, new)` says the change can only move counts (a pod that started running).

    While 1,000 pods start, each Running update would otherwise cost a pass that decides nothing;
    a later urgent change (a pod that finished) still wakes the loop at once. The loop calls
    `seen()` when a pass starts, since the pass reads every change made so far.
    """

    __slots__ = ("_timer", "gap", "lazy", "wake")

    def __init__(self, wake: Wake, lazy: Callable[[Any, Any], bool], gap: float) -> None:
        self.wake, self.lazy, self.gap = wake, lazy, gap
        self._timer: asyncio.TimerHandle | None = None

    def set(self) -> None:
        self.wake.set()

    def heed(self, old: Any, new: Any) -> None:
        """One child changed from `old` to `new` (either None when it appeared or went)."""
        if old is None or new is None or not self.lazy(old, new):
            self.wake.set()
        elif self._timer is None and not self.wake.is_set():
            self._timer = asyncio.get_running_loop().call_later(self.gap, self._due)

    def _due(self) -> None:
        self._timer = None
        self.wake.set()

    def seen(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
