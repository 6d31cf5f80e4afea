"""Open the connections a burst of creates will need, all at once, before the burst needs them.

aiohttp sends one request per connection. A slow-start ramp (batches of 1, 2, 4, ...) therefore
opened its connections a batch at a time: each doubling waited for new TCP and TLS handshakes
before its creates could go out, one handshake round per batch. Warming opens them together,
while the first batch is in flight, with a request the API server answers from memory.
"""

from __future__ import annotations

import asyncio
import logging

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.kube_client import KubeClient

log = logging.getLogger(__name__)
WARM_PATH = "/version"  # readable by every authenticated user (system:public-info-viewer)


async def warm_connections(client: KubeClient, count: int) -> int:
    """Send `count` concurrent GETs of /version (at most the client's in-flight cap); returns how many answered.

    Idle pooled connections are reused, so on a warm pool this costs a few cheap requests and no handshakes.
    Failures are ignored: the creates that follow report their own errors.
    """
    count = min(count, client.max_inflight)

    async def one() -> bool:
        try:
            await client.request("GET", WARM_PATH, retry=False, timeout=10.0)
        except ClusterApiError as exc:
            log.debug("Connection warm-up: %s", exc.describe())
            return False
        return True

    async with asyncio.TaskGroup() as group:  # cancelling the warm-up cancels every request in it
        tasks = [group.create_task(one()) for _ in range(max(0, count))]
    return sum(task.result() for task in tasks)
