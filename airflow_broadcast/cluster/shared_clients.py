"""The process-wide registry of KubeClients: one per event loop and connection key.

Every trigger of this provider in a triggerer shares one client (one TLS context,
one connection pool, one rate limiter) instead of building one per call.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from airflow_broadcast.cluster import heap_release
from airflow_broadcast.cluster.kube_client import KubeClient

ApiClientFactory = Callable[[], Awaitable[Any]]

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, KubeClient]] = (
    weakref.WeakKeyDictionary()
)
_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


async def shared_client(key: str, make_api_client: ApiClientFactory, *, freeze_heap: bool = True,
                        release_heap: bool = True, **options: Any) -> KubeClient:
    """The client for `key` on the running loop, created once with `make_api_client()` and KubeClient `options`.

    `freeze_heap`: freeze the start-up heap when the process builds its first client (see below).
    `release_heap`: hand freed heap back to the operating system when jobs go quiet (see heap_release).
    """
    heap_release.configure(release_heap)
    loop = asyncio.get_running_loop()
    clients = _clients.setdefault(loop, {})
    client = clients.get(key)
    if client is not None:
        return client
    lock = _locks.setdefault(loop, asyncio.Lock())
    async with lock:
        client = clients.get(key)
        if client is None:
            client = KubeClient(await make_api_client(), **options)
            clients[key] = client
            if freeze_heap:
                _freeze_startup_heap()
    return client


_frozen = False  # module state on purpose: the heap is per process


def _freeze_startup_heap() -> None:
    """Move the objects alive now (Airflow, imported modules) out of the garbage collector's view, once.

    In a triggerer the heap holds millions of long-lived objects, and a full collection
    triggered by reconcile traffic then stalls the event loop for 0.5-2 s (measured: see
    docs/performance.md). gc.freeze() is O(1) and makes later full collections scan only
    newer objects. The `[airflow_broadcast] freeze_startup_heap` setting turns it off.
    """
    global _frozen  # noqa: PLW0603
    if _frozen:
        return
    _frozen = True
    gc.freeze()


def clients_on_this_loop() -> int:
    """How many clients the running loop holds (used by tests and benchmarks)."""
    return len(_clients.get(asyncio.get_running_loop(), {}))


async def close_clients_on_this_loop() -> None:
    """Close the running loop's clients (worker-side `asyncio.run` calls end with this)."""
    for client in _clients.pop(asyncio.get_running_loop(), {}).values():
        await client.close()
