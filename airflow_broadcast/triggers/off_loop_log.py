"""Task-log lines written by one writer thread, so that a slow log sink never blocks the triggerer's loop.

In the triggerer, a trigger's log line is a blocking write to a socket that the triggerer's
supervisor drains. While the supervisor is busy (it deserializes each new trigger's DAG, for
example), the socket fills and every log call stalls the whole event loop, with every trigger
on it. Lines are queued instead, each with the caller's context (Airflow routes a line to its
task's log by the context variables the triggerer binds), and the process's writer thread
(`hooks/off_loop_writer.py`) writes them in order.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from typing import Any

from airflow_broadcast.hooks.off_loop_writer import writer as _writer
from airflow_broadcast.triggers.progress import TaskLog

DRAIN_TIMEOUT_SECONDS = 2.0


class OffLoopLog:
    """A TaskLog whose lines go through the writer thread, in the order they were logged."""

    def __init__(self, target: TaskLog) -> None:
        self.target = target

    def _queue(self, level: str, msg: str, args: tuple[Any, ...]) -> None:
        """The level's method is looked up in the writer thread: on Airflow's lazy logger each lookup binds anew."""
        _writer.put(functools.partial(contextvars.copy_context().run, _write, self.target, level, msg, *args),
                    log_line=True)

    def info(self, msg: str, /, *args: Any) -> None:
        self._queue("info", msg, args)

    def warning(self, msg: str, /, *args: Any) -> None:
        self._queue("warning", msg, args)

    def error(self, msg: str, /, *args: Any) -> None:
        self._queue("error", msg, args)

    async def drained(self, timeout: float = DRAIN_TIMEOUT_SECONDS) -> bool:
        """Wait until every line queued so far is written (False if the sink is still stuck after `timeout`).

        A trigger calls this before its event, so that its last lines reach the task log first.
        """
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        _writer.put(functools.partial(_signal, loop, done))
        await asyncio.wait([done], timeout=timeout)
        return done.done()


def _write(target: TaskLog, level: str, msg: str, *args: Any) -> None:
    method: Callable[..., object] = getattr(target, level)
    method(msg, *args)


def _signal(loop: asyncio.AbstractEventLoop, done: asyncio.Future[None]) -> None:
    """In the writer thread: every line queued before this step is written."""
    try:
        loop.call_soon_threadsafe(_resolve, done)
    except RuntimeError:  # that loop is closed: nobody waits any more
        pass


def _resolve(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)
