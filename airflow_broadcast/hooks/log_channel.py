"""Room in the socket that carries a process's structured logs to Airflow's supervisor.

In the triggerer every log line leaves through one socket that the supervisor drains between
its other work (it deserializes each new trigger's DAG, for example). Each line, however short,
takes about 1.3 KB of the socket's send buffer, so some 160 lines fill it. When it is full, the
next write blocks, and Airflow's own lines (such as "trigger … starting") are written on the
event loop. The provider's writer thread therefore writes only while the socket is writable in
the kernel's sense (a Unix socket's queue under a quarter of its buffer): it waits in poll(2) for
that, leaving the buffer to Airflow's lines while the supervisor is busy.

The channel also raises the socket's send buffer (`[airflow_broadcast] log_socket_buffer_kib`, within the
kernel's `net.core.wmem_max`): a burst of new triggers writes hundreds of "starting" lines at once, and
with Airflow's default buffer those writes blocked the triggerer's event loop for up to seconds.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import select
import socket
import stat
import struct
import termios
import time
from collections.abc import Callable
from typing import Any

MAX_HOLD_SECONDS = 5.0  # then the line is written anyway: never lost, at worst it blocks this thread


class LogChannel:
    """One socket's send queue: how full it is, and a wait until it has room."""

    def __init__(self, fd: int, buffer_bytes: int = 0) -> None:
        """`buffer_bytes`: grow the send buffer to this size (never shrink it; 0 leaves it as it is)."""
        self.fd = fd
        with socket.socket(fileno=os.dup(fd)) as sock:  # a duplicate: closing it leaves the channel open
            if buffer_bytes > sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF):
                try:  # the kernel doubles the value asked for (bookkeeping) and caps it at wmem_max
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, buffer_bytes // 2)
                except OSError:
                    pass
            self.capacity = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)

    def queued(self) -> int:
        """Bytes in the send queue, as the kernel counts them against SO_SNDBUF."""
        return int(struct.unpack("i", fcntl.ioctl(self.fd, termios.TIOCOUTQ, b"\0\0\0\0"))[0])

    def wait_for_room(self, limit: float = MAX_HOLD_SECONDS) -> float:
        """Block this thread until the socket is writable (its queue under a quarter of the buffer), at most
        `limit` seconds; returns the seconds waited. Never on an event loop's thread: it would stall the loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("wait_for_room blocks its thread; call it from the writer thread, not the event loop")
        started = time.monotonic()
        poller = select.poll()
        poller.register(self.fd, select.POLLOUT)
        poller.poll(limit * 1000)
        return time.monotonic() - started


_channel: tuple[int, LogChannel | None] | None = None  # (pid, channel): a forked child looks again


def log_channel(buffer_bytes: Callable[[], int] | None = None) -> LogChannel | None:
    """The channel of this process's structured logs, when they go to a socket (the triggerer, a task);
    `buffer_bytes()`, the send buffer to grow it to, is asked only when the channel is first found."""
    global _channel  # noqa: PLW0603
    pid = os.getpid()
    if _channel is None or _channel[0] != pid:
        _channel = (pid, _find_channel(buffer_bytes() if buffer_bytes is not None else 0))
    return _channel[1]


def forget_channel() -> None:
    """Look the channel up again on next use (logging was configured anew)."""
    global _channel  # noqa: PLW0603
    _channel = None


def _find_channel(buffer_bytes: int) -> LogChannel | None:
    try:
        import structlog

        factory = structlog.get_config()["logger_factory"]
        output: Any = getattr(factory, "io", None) or getattr(factory, "_file", None)  # Airflow's, structlog's
        fd = output.fileno() if output is not None else -1
        if fd < 0 or not stat.S_ISSOCK(os.fstat(fd).st_mode):
            return None
        channel = LogChannel(fd, buffer_bytes)
        channel.queued()
        return channel
    except (ImportError, AttributeError, KeyError, OSError, ValueError):
        return None
