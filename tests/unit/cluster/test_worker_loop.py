"""run_on_worker from plain code and from inside a running loop (Airflow's SIGTERM handler calls on_kill there)."""

from __future__ import annotations

import asyncio
import threading

from airflow_broadcast.cluster.worker_loop import run_on_worker


async def _where() -> tuple[int, asyncio.AbstractEventLoop]:
    return threading.get_ident(), asyncio.get_running_loop()


def test_from_plain_code_it_runs_on_this_thread() -> None:
    thread, _ = run_on_worker(_where)
    assert thread == threading.get_ident()


def test_from_inside_a_running_loop_it_runs_on_a_loop_of_its_own() -> None:
    """A task driving its job inline is interrupted by on_kill: the kill's requests must still go out."""

    async def driving() -> tuple[int, asyncio.AbstractEventLoop, asyncio.AbstractEventLoop]:
        outer = asyncio.get_running_loop()
        thread, inner = run_on_worker(_where)  # as on_kill does, synchronously, inside this loop
        return thread, inner, outer

    thread, inner, outer = asyncio.run(driving())
    assert inner is not outer
    assert thread != threading.get_ident()
