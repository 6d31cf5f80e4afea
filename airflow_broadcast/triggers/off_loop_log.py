"""Task-log lines written by one writer thread, so that a slow log sink never blocks the triggerer's loop.

In the triggerer, a trigger's log line is a blocking write to a socket that the triggerer's
supervisor drains. While the supervisor is busy (it deserializes each new trigger's DAG, for
example), the socket fills and every log call stalls the whole event loop, with every trigger
on it. Lines are queued instead, each with the caller's context (Airflow routes a line to its
task's log by the context variables the triggerer binds), and one daemon thread per process
writes them in order.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from airflow_broadcast.triggers.progress import TaskLog

log = logging.getLogger(__name__)
DRAIN_TIMEOUT_SECONDS = 2.0


class _Writer:
    """The process's writer thread and its queue of steps, run in order (started on the first one)."""

    def __init__(self) -> None:
        self.steps: queue.SimpleQueue[Callable[[], object]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def put(self, step: Callable[[], object]) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="airflow-broadcast-task-log", daemon=True)
                self._thread.start()
        self.steps.put(step)

    def _run(self) -> None:
        while True:
            step = self.steps.get()
            try:
                step()
            except Exception:  # a broken sink loses that line, never the writer
                log.exception("could not write a task log line")


_writer = _Writer()


class OffLoopLog:
    """A TaskLog whose lines go through the writer thread, in the order they were logged."""

    def __init__(self, target: TaskLog) -> None:
        self.target = target

    def _queue(self, method: Callable[..., object], msg: str, args: tuple[Any, ...]) -> None:
        _writer.put(functools.partial(contextvars.copy_context().run, method, msg, *args))

    def info(self, msg: str, /, *args: Any) -> None:
        self._queue(self.target.info, msg, args)

    def warning(self, msg: str, /, *args: Any) -> None:
        self._queue(self.target.warning, msg, args)

    def error(self, msg: str, /, *args: Any) -> None:
        self._queue(self.target.error, msg, args)

    async def drained(self, timeout: float = DRAIN_TIMEOUT_SECONDS) -> bool:
        """Wait until every line queued so far is written (False if the sink is still stuck after `timeout`).

        A trigger calls this before its event, so that its last lines reach the task log first.
        """
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        _writer.put(functools.partial(_signal, loop, done))
        await asyncio.wait([done], timeout=timeout)
        return done.done()


def _signal(loop: asyncio.AbstractEventLoop, done: asyncio.Future[None]) -> None:
    """In the writer thread: every line queued before this step is written."""
    try:
        loop.call_soon_threadsafe(_resolve, done)
    except RuntimeError:  # that loop is closed: nobody waits any more
        pass


def _resolve(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)
