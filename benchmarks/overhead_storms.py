"""Raw storms that each add one part of what the engine does, to split its overhead into parts.

raw-nodename-watched: the raw `nodeName` storm, while the same process watches the namespace's pods and
parses every event, as any controller must. raw-nodename-shaped: the same, with the engine's own pods
(`build_pod`: its labels and annotations, and an ownerReference to a ConfigMap, as the engine's to its
record). Between these and the engine (`nodeName`, limit lifted) remain the slow-start ramp, the engine's
passes, its record writes and its Events.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

WATCHED = "raw-nodename-watched"
SHAPED = "raw-nodename-shaped"
STORMS = (WATCHED, SHAPED)


async def _watch(kube: Any, path: str, seen: list[int], ready: asyncio.Event) -> None:
    _, version = await kube.list_all(path)
    ready.set()
    while True:
        async for _, obj in kube.watch(path, resource_version=version, timeout_seconds=300):
            seen[0] += 1
            version = (obj.get("metadata") or {}).get("resourceVersion", version)


async def _shaped_pods(task: Any, kube: Any) -> list[dict[str, Any]]:
    """The engine's pod for each node, owned by a ConfigMap as the engine's pods are by their record."""
    from airflow_broadcast.cluster.job_records import record_view
    from airflow_broadcast.reconcilers.broadcast_job.pods import build_pod
    from benchmarks.methods import pod_spec

    owner = await kube.create(f"/api/v1/namespaces/{task.namespace}/configmaps", {"metadata": {"name": "bcj-bench"}})
    record = record_view(owner)  # the engine's own view of a record, and so its ownerReference
    template = pod_spec(task)
    return [build_pod("bench", task.namespace, template, record, node, by_scheduler=False) for node in task.nodes]


async def watched_storm(task: Any, kube: Any, stop: Any) -> dict[str, Any]:
    """Start the pod watch, create every pod at once, and keep watching until `stop` is set."""
    from benchmarks.methods import raw_pod

    path = f"/api/v1/namespaces/{task.namespace}/pods"
    seen, ready = [0], asyncio.Event()
    watcher = asyncio.get_running_loop().create_task(_watch(kube, path, seen, ready))
    await asyncio.wait_for(ready.wait(), 60)
    pods = await _shaped_pods(task, kube) if task.method == SHAPED else [
        raw_pod(task, i, node) for i, node in enumerate(task.nodes)]
    t0 = time.monotonic()
    await asyncio.gather(*(kube.create(path, body) for body in pods))
    created = round(time.monotonic() - t0, 2)
    await asyncio.to_thread(stop.wait, 3600)
    watcher.cancel()
    return {"create_seconds": created, "watch_events": seen[0]}
