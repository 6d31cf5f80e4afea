"""Run async engine code from synchronous task code (operators, sensors, JobClient) on a worker."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from airflow_broadcast.cluster.informers import stop_informers
from airflow_broadcast.cluster.shared_clients import close_clients_on_this_loop

T = TypeVar("T")


def run_on_worker(body: Callable[[], Awaitable[T]]) -> T:
    """`asyncio.run(body())`, then release the loop's watches and clients, so nothing outlives the call."""

    async def main() -> T:
        try:
            return await body()
        finally:
            await stop_informers()
            await close_clients_on_this_loop()

    return asyncio.run(main())
