"""Run async engine code from synchronous task code (operators, sensors, JobClient) on a worker."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from airflow_broadcast.cluster.informers import stop_informers
from airflow_broadcast.cluster.shared_clients import close_clients_on_this_loop

T = TypeVar("T")


def run_on_worker(body: Callable[[], Awaitable[T]]) -> T:
    """`asyncio.run(body())`, then release the loop's watches and clients, so nothing outlives the call.

    Called while this thread's loop runs, the body gets a thread and a loop of its own: Airflow calls
    `on_kill` from its SIGTERM handler, which interrupts the loop of a task that drives its job inline.
    """

    async def main() -> T:
        try:
            return await body()
        finally:
            await stop_informers()
            await close_clients_on_this_loop()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="airflow-broadcast-nested") as pool:
        return pool.submit(lambda: asyncio.run(main())).result()
