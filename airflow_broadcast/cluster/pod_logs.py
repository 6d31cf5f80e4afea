"""Capped log tails of failed children, for the task log."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.cluster.kube_client import KubeClient

TAIL_LINES = 50
TAIL_BYTES = 16384


def cap_tail(text: str, lines: int = TAIL_LINES, max_bytes: int = TAIL_BYTES) -> str:
    """The end of `text`: at most `lines` lines and `max_bytes` UTF-8 bytes (a cut character is dropped)."""
    kept = "\n".join(text.splitlines()[-lines:]) if lines > 0 else ""
    raw = kept.encode()
    if len(raw) <= max_bytes:
        return kept
    return raw[len(raw) - max(max_bytes, 0):].decode(errors="ignore")


def log_path(namespace: str, pod: str) -> str:
    """The pod's `log` subresource; InvalidApiPath for a name no pod can have (e.g. forged in a record)."""
    return api_path("v1", "pods", namespace=namespace, name=pod, subresource="log")


async def _tail(client: KubeClient, path: str, query: dict[str, str | int], lines: int, max_bytes: int) -> str:
    try:
        text = await client.request_text("GET", path, query=query)
    except ClusterApiError as exc:
        return f"<log unavailable: {exc.api_message or exc.reason}>"
    return cap_tail(text, lines, max_bytes)  # the server honours both limits; a proxy in between may not


async def log_tail(client: KubeClient, namespace: str, pod: str, *, container: str | None = None,
                   lines: int = TAIL_LINES, max_bytes: int = TAIL_BYTES) -> str:
    """The last `lines` lines (at most `max_bytes`) of a pod's log, or why it is unavailable."""
    return (await log_tails(client, namespace, [pod], container=container, lines=lines, max_bytes=max_bytes))[pod]


def _query(lines: int, max_bytes: int, container: str | None) -> dict[str, str | int]:
    query: dict[str, str | int] = {"tailLines": lines, "limitBytes": max_bytes}
    if container:
        query["container"] = container
    return query


async def log_tails(client: KubeClient, namespace: str, pods: Sequence[str], *, container: str | None = None,
                    containers: Mapping[str, str] | None = None, lines: int = TAIL_LINES,
                    max_bytes: int = TAIL_BYTES) -> dict[str, str]:
    """Tails of several pods, of `container` or the pod's own in `containers`; every name is checked before the
    first request (InvalidApiPath)."""
    paths = [log_path(namespace, pod) for pod in pods]
    queries = [_query(lines, max_bytes, (containers or {}).get(pod) or container) for pod in pods]
    texts = await asyncio.gather(*(_tail(client, path, query, lines, max_bytes)
                                   for path, query in zip(paths, queries, strict=True)))
    return dict(zip(pods, texts, strict=True))
