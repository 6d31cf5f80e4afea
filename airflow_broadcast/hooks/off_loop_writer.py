"""One writer thread per process for the blocking writes a trigger makes to Airflow: log lines and metrics.

In the triggerer every trigger shares one event loop, and a write that blocks (a task-log line to a
socket the supervisor has stopped draining, the stats registry read from disk on first use) stalls
them all. Such writes are queued as steps instead, and one daemon thread runs them in order. A log
line waits until the log socket has room (`log_channel.py`), so that Airflow's own lines, written
on the loop, find the socket free.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from airflow_broadcast.config import Settings, current_settings
from airflow_broadcast.hooks.log_channel import log_channel

log = logging.getLogger(__name__)


class OffLoopWriter:
    """The process's writer thread and its queue of steps, run in order (started on the first one)."""

    def __init__(self) -> None:
        self.steps: queue.SimpleQueue[tuple[Callable[[], object], bool]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def put(self, step: Callable[[], object], *, log_line: bool = False) -> None:
        """Queue `step`; a `log_line` step first waits (bounded) for room in the log socket."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="airflow-broadcast-writer", daemon=True)
                self._thread.start()
        self.steps.put((step, log_line))

    def flushed(self, timeout: float) -> bool:
        """Block until every step queued so far has run; False after `timeout`. Never call it on the loop."""
        done = threading.Event()
        self.put(done.set)
        return done.wait(timeout)

    def _run(self) -> None:
        while True:
            step, log_line = self.steps.get()
            try:
                channel = log_channel(_log_buffer_bytes) if log_line else None
                if channel is not None:
                    channel.wait_for_room()
                step()
            except Exception:  # a broken sink loses that write, never the writer
                log.exception("a write to Airflow failed")


def _log_buffer_bytes() -> int:
    """The log socket's wanted send buffer: read once, when the writer thread first finds the socket."""
    try:
        return current_settings().log_socket_buffer_kib * 1024
    except (ValueError, ImportError):
        return Settings().log_socket_buffer_kib * 1024


writer = OffLoopWriter()
