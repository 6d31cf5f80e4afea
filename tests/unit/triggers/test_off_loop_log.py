"""OffLoopLog: a stuck log sink does not stop the loop; lines keep their order and their caller's context."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any

from airflow_broadcast.triggers.off_loop_log import OffLoopLog

TRIGGER_ID: contextvars.ContextVar[str] = contextvars.ContextVar("trigger_id", default="none")


class GatedSink:
    """A sink whose writes block until `gate` opens, like a socket its reader does not drain."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.lines: list[tuple[str, str, str]] = []

    def _write(self, level: str, msg: str, *args: Any) -> None:
        self.gate.wait(30)
        self.lines.append((level, TRIGGER_ID.get(), msg % args))

    def info(self, msg: str, *args: Any) -> None:
        self._write("info", msg, *args)

    def warning(self, msg: str, *args: Any) -> None:
        self._write("warning", msg, *args)

    def error(self, msg: str, *args: Any) -> None:
        self._write("error", msg, *args)


async def test_a_stuck_sink_does_not_block_the_loop_and_lines_arrive_in_order_with_their_context() -> None:
    sink = GatedSink()
    log = OffLoopLog(sink)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    async def job(name: str) -> None:
        TRIGGER_ID.set(name)
        log.info("%s: %d done", name, 1)
        log.warning("%s: pod failed", name)
        log.error("%s: gave up", name)

    running = asyncio.get_running_loop().create_task(ticker())
    await asyncio.gather(job("a"), job("b"))
    assert not await log.drained(timeout=0.3), "the sink is stuck, so the lines cannot be written yet"
    assert ticks > 0 and sink.lines == [], "the loop ran on while every line waited for the sink"
    sink.gate.set()
    assert await log.drained()
    running.cancel()
    assert sink.lines == [
        ("info", "a", "a: 1 done"), ("warning", "a", "a: pod failed"), ("error", "a", "a: gave up"),
        ("info", "b", "b: 1 done"), ("warning", "b", "b: pod failed"), ("error", "b", "b: gave up"),
    ]


async def test_a_sink_that_raises_loses_that_line_only() -> None:
    written: list[str] = []

    class Broken:
        def info(self, msg: str, *args: Any) -> None:
            if "bad" in msg:
                raise OSError("socket closed")
            written.append(msg % args)

        warning = error = info

    log = OffLoopLog(Broken())
    log.info("first %s", "line")
    log.info("bad line")
    log.info("last %s", "line")
    assert await log.drained()
    assert written == ["first line", "last line"]
