"""The writer thread leaves the log socket to Airflow: a line waits while the socket is more than a quarter full."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import structlog

from airflow_broadcast.config import Settings, current_settings
from airflow_broadcast.hooks.log_channel import LogChannel, forget_channel, log_channel
from airflow_broadcast.hooks.off_loop_writer import OffLoopWriter

LINE = b"x" * 400


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    sender, reader = socket.socketpair()
    yield sender, reader
    sender.close()
    reader.close()


@pytest.fixture
def logs_to(pair: tuple[socket.socket, socket.socket]) -> Iterator[socket.socket]:
    """structlog configured as Airflow configures a triggerer: bytes to a socket."""
    current_settings()  # imports Airflow, which configures structlog: before ours, as in a triggerer
    saved = structlog.get_config()
    output = pair[0].makefile("wb", buffering=0)
    structlog.configure(logger_factory=structlog.BytesLoggerFactory(output))
    forget_channel()
    yield pair[1]
    structlog.configure(**saved)
    forget_channel()
    output.close()


def fill(sender: socket.socket, share: float) -> int:
    """Write lines nobody reads until the send queue holds `share` of the buffer; the lines written."""
    channel = LogChannel(sender.fileno())
    sent = 0
    while channel.queued() < channel.capacity * share:
        sender.send(LINE)
        sent += 1
    return sent


def drain(reader: socket.socket) -> None:
    reader.setblocking(False)
    try:
        while reader.recv(65536):
            pass
    except BlockingIOError:
        pass


def test_the_queue_counts_each_small_line_at_more_than_its_size(pair: tuple[socket.socket, socket.socket]) -> None:
    channel = LogChannel(pair[0].fileno())
    assert channel.queued() == 0
    pair[0].send(LINE)
    assert channel.queued() > len(LINE), "the kernel charges each write its buffer overhead"


def test_wait_for_room_returns_at_once_with_room_and_waits_while_the_queue_is_over_a_quarter(
        pair: tuple[socket.socket, socket.socket]) -> None:
    sender, reader = pair
    channel = LogChannel(sender.fileno())
    assert channel.wait_for_room() < 0.05
    fill(sender, 0.4)
    assert channel.wait_for_room(limit=0.2) >= 0.2, "over a quarter full: it waits, up to its limit"
    draining = threading.Timer(0.2, drain, args=(reader,))
    draining.start()
    waited = channel.wait_for_room(limit=5.0)
    draining.join()  # room comes mid-drain: the drain must not outlive the socket it reads
    assert 0.1 < waited < 4.0, "it returned once the reader drained the socket, not at its limit"


def test_the_channel_is_found_only_when_structured_logs_go_to_a_socket(
        logs_to: socket.socket, tmp_path: object) -> None:
    found = log_channel()
    assert found is not None and found.capacity > 0
    saved = structlog.get_config()
    with open(f"{tmp_path}/log", "wb") as output:
        structlog.configure(logger_factory=structlog.BytesLoggerFactory(output))
        forget_channel()
        assert log_channel() is None, "a file never fills: no waiting"
    structlog.configure(**saved)


def test_a_log_line_waits_for_room_while_other_steps_do_not(
        logs_to: socket.socket, pair: tuple[socket.socket, socket.socket]) -> None:
    default = LogChannel(pair[0].fileno()).capacity
    writer = OffLoopWriter()
    writer.put(lambda: None, log_line=True)
    assert writer.flushed(2.0)
    found = log_channel()
    assert found is not None and found.capacity > default, "the writer grew the buffer as the setting asks"
    fill(pair[0], 0.4)
    done: list[str] = []
    writer.put(lambda: done.append("metric"))
    assert writer.flushed(2.0) and done == ["metric"], "a step that is no log line runs at once"
    writer.put(lambda: done.append("line"), log_line=True)
    time.sleep(0.3)
    assert done == ["metric"], "the line waits while the log socket is over a quarter full"
    drain(logs_to)
    assert writer.flushed(5.0) and done == ["metric", "line"]


async def test_waiting_for_room_on_an_event_loop_is_refused(pair: tuple[socket.socket, socket.socket]) -> None:
    with pytest.raises(RuntimeError, match="not the event loop"):
        LogChannel(pair[0].fileno()).wait_for_room(limit=0.01)


def test_the_channel_grows_the_send_buffer_within_the_kernel_limit_and_never_shrinks_it(
        pair: tuple[socket.socket, socket.socket]) -> None:
    sender = pair[0]
    default = LogChannel(sender.fileno()).capacity
    grown = LogChannel(sender.fileno(), Settings().log_socket_buffer_kib * 1024).capacity
    with open("/proc/sys/net/core/wmem_max") as limit:
        allowed = 2 * int(limit.read())
    assert default < grown <= max(allowed, default)
    assert LogChannel(sender.fileno(), default // 4).capacity == grown, "a smaller size leaves it as it is"
    assert LogChannel(sender.fileno(), 0).capacity == grown
