"""Capped log tails of failed children, for the task log."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.kube_client import KubeClient


async def log_tail(client: KubeClient, namespace: str, pod: str, *, container: str | None = None,
                   lines: int = 50, max_bytes: int = 16384) -> str:
    """The last `lines` lines (at most `max_bytes`) of a pod's log, or why it is unavailable."""
    query: dict[str, str | int] = {"tailLines": lines, "limitBytes": max_bytes}
    if container:
        query["container"] = container
    try:
        text = await client.request_text("GET", f"/api/v1/namespaces/{namespace}/pods/{pod}/log", query=query)
    except ClusterApiError as exc:
        return f"<log unavailable: {exc.api_message or exc.reason}>"
    return text


async def log_tails(client: KubeClient, namespace: str, pods: Sequence[str], *, container: str | None = None,
                    lines: int = 50, max_bytes: int = 16384) -> dict[str, str]:
    texts = await asyncio.gather(*(log_tail(client, namespace, p, container=container, lines=lines,
                                            max_bytes=max_bytes) for p in pods))
    return dict(zip(pods, texts, strict=True))
