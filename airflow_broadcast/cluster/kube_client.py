"""One async Kubernetes client per process: raw JSON requests, paging, watches, retries, QPS.

It rides on kubernetes_asyncio's ApiClient for TLS and authentication (including
exec-plugin token refresh through the hook's refresh_api_key_hook), but skips its model classes: objects stay plain
dicts, which is an order of magnitude cheaper on the triggerer's event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any

import aiohttp
import msgspec

from airflow_broadcast.cluster.api_errors import (
    ClusterApiError,
    Gone,
    TransportError,
    error_from_response,
)
from airflow_broadcast.cluster.api_paths import request_route
from airflow_broadcast.cluster.list_items import OFFLOAD_PARSE_BYTES as _OFFLOAD_PARSE_BYTES
from airflow_broadcast.cluster.list_items import read_page
from airflow_broadcast.specs.api_types import JsonDict

__all__ = ["Backoff", "JsonDict", "KubeClient", "RateLimiter"]  # JsonDict: the cluster layer imports it from here

log = logging.getLogger(__name__)

# Bodies above this size are parsed in a worker thread so the event loop never stalls.
_DECODER = msgspec.json.Decoder()


class RateLimiter:
    """Token bucket: at most `qps` requests a second on average, bursts up to `burst`."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._last = 0.0
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        if self.qps <= 0:
            return
        async with self._lock:
            loop = asyncio.get_running_loop()
            now = loop.time()
            if self._last:
                self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            if self._tokens < 1:
                wait = (1 - self._tokens) / self.qps
                await asyncio.sleep(wait)
                self._last = loop.time()
                self._tokens = 0.0
            else:
                self._tokens -= 1


class Backoff:
    """Doubling delays between `low` and `high` seconds with jitter (so many retriers do not move in step)."""

    def __init__(self, low: float = 0.5, high: float = 30.0) -> None:
        self.low = low
        self.high = high
        self._failures = 0

    def reset(self) -> None:
        self._failures = 0

    def next(self, at_least: float | None = None, *, first: float | None = None) -> float:
        """The delay before the next attempt; `first` replaces the first one, a Retry-After is a floor."""
        self._failures += 1
        if self._failures == 1 and first is not None:
            return first
        delay: float = min(self.high, self.low * 2.0 ** (self._failures - 1)) * (1 + random.random() * 0.2)
        return max(delay, at_least or 0.0)


def _loads(raw: bytes) -> Any:
    """msgspec parses a pod about four times faster than json, which matters for every watch event;
    json stays the judge of what msgspec refuses (NaN, lone surrogates), so nothing parses differently."""
    try:
        return _DECODER.decode(raw)
    except msgspec.DecodeError:
        return json.loads(raw)


async def _parse_json(raw: bytes) -> Any:
    if not raw:
        return {}
    if len(raw) > _OFFLOAD_PARSE_BYTES:
        return await asyncio.to_thread(_loads, raw)
    return _loads(raw)


async def _parse_body(raw: bytes, verb: str, target: str) -> Any:
    """A 2xx body that is not JSON (cut or mangled on the way) is a transport failure: retried, never fatal."""
    try:
        return await _parse_json(raw)
    except ValueError as exc:
        raise TransportError(0, "Malformed", f"the answer ({len(raw)} bytes) is not JSON: {exc}",
                             verb=verb, target=target) from exc


class KubeClient:
    """Thin async client over an ApiClient. Share one instance per process and cluster."""

    def __init__(self, api_client: Any, *, qps: float = 500.0, burst: int = 1000,
                 request_timeout: float = 60.0, max_retries: int = 5, max_inflight: int = 32) -> None:
        self._api = api_client
        self.limiter = RateLimiter(qps, burst)
        self.max_inflight = max(1, max_inflight)
        self._inflight = asyncio.Semaphore(self.max_inflight)  # each request in flight holds a connection
        self.request_timeout = request_timeout
        self.max_retries = max_retries
        self.requests_sent = 0
        self.requests_by_route: Counter[str] = Counter()  # see api_paths.request_route

    async def close(self) -> None:
        await self._api.close()

    def _count(self, verb: str, path: str) -> None:
        self.requests_sent += 1
        self.requests_by_route[request_route(verb, path)] += 1

    # ---- plain requests ---------------------------------------------------------------
    async def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None,
                      body: Any = None, content_type: str = "application/json",
                      timeout: float | None = None, retry: bool = True, raw: bool = False, page: bool = False) -> Any:
        """Send one request and return the parsed JSON body; raise a ClusterApiError subclass."""
        attempt = 0
        while True:
            try:
                return await self._request_once(method, path, query, body, content_type, timeout, raw, page)
            except ClusterApiError as exc:
                attempt += 1
                if not (retry and exc.retryable) or attempt > self.max_retries:
                    raise
                delay = exc.retry_after if exc.retry_after else min(15.0, 0.2 * 2 ** attempt)
                delay *= 1 + random.random() * 0.2
                log.info("Kubernetes API %s on %s %s; retry %d in %.1f s",
                         exc.status or exc.reason.lower(), method, path, attempt, delay)
                await asyncio.sleep(delay)

    async def request_text(self, method: str, path: str, *, query: Mapping[str, Any] | None = None) -> str:
        """A request whose answer is plain text (pod logs)."""
        raw: bytes = await self.request(method, path, query=query, raw=True)
        return raw.decode(errors="replace")

    async def _request_once(self, method: str, path: str, query: Mapping[str, Any] | None, body: Any,
                            content_type: str, timeout: float | None, raw_body: bool = False,
                            page: bool = False) -> Any:
        await self.limiter.acquire()
        self._count(method, path)
        headers = {"Accept": "*/*" if raw_body else "application/json", "Content-Type": content_type}
        try:
            async with self._inflight:
                resp = await self._api.call_api(
                    path, method, query_params=list((query or {}).items()), header_params=headers,
                    body=body, auth_settings=["BearerToken"], _preload_content=False,
                    _request_timeout=timeout or self.request_timeout,
                )
                async with resp:
                    raw = await resp.read()
                    status = resp.status
                    retry_after = resp.headers.get("Retry-After")
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise TransportError(0, "Unreachable", f"{type(exc).__name__}: {exc}",
                                 verb=method, target=path) from exc
        if 200 <= status < 300:
            return raw if raw_body else await (read_page(raw, path) if page else _parse_body(raw, method, path))
        raise error_from_response(status, raw, verb=method, target=path, retry_after=retry_after)

    async def get(self, path: str, **query: Any) -> JsonDict:
        result: JsonDict = await self.request("GET", path, query=query)
        return result

    async def create(self, path: str, body: Mapping[str, Any]) -> JsonDict:
        result: JsonDict = await self.request("POST", path, body=dict(body))
        return result

    async def replace(self, path: str, body: Mapping[str, Any]) -> JsonDict:
        result: JsonDict = await self.request("PUT", path, body=dict(body))
        return result

    async def merge_patch(self, path: str, patch: Mapping[str, Any]) -> JsonDict:
        result: JsonDict = await self.request(
            "PATCH", path, body=dict(patch), content_type="application/merge-patch+json")
        return result

    async def delete(self, path: str, *, propagation: str | None = "Background",
                     grace_period_seconds: int | None = None,
                     preconditions_uid: str | None = None) -> JsonDict:
        body: JsonDict = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation:
            body["propagationPolicy"] = propagation
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if preconditions_uid:
            body["preconditions"] = {"uid": preconditions_uid}
        result: JsonDict = await self.request("DELETE", path, body=body)
        return result

    # ---- lists and watches ------------------------------------------------------------
    async def list_pages(self, path: str, *, page_size: int = 500, lazy_items: bool = False,
                         **query: Any) -> AsyncIterator[JsonDict]:
        """Yield each page of a LIST (limit/continue), so a huge list never blocks the loop; with `lazy_items`,
        the items stay raw JSON (`list_items`) until the caller parses the ones it needs."""
        token: str | None = None
        while True:
            params = dict(query, limit=page_size)
            if token:
                params["continue"] = token
            try:
                page = await self.request("GET", path, query=params, page=lazy_items)
            except Gone:
                if token is None:
                    raise
                token = None  # the continue token expired: start the list again
                continue
            yield page
            token = page.get("metadata", {}).get("continue") or None
            if not token:
                return

    async def list_all(self, path: str, *, page_size: int = 500, **query: Any) -> tuple[list[JsonDict], str]:
        """All items of a LIST and the resourceVersion to watch from."""
        items: list[JsonDict] = []
        version = ""
        async for page in self.list_pages(path, page_size=page_size, **query):
            items.extend(page.get("items") or [])
            version = page.get("metadata", {}).get("resourceVersion", version)
        return items, version

    async def watch(self, path: str, *, resource_version: str, timeout_seconds: int = 300,
                    **query: Any) -> AsyncGenerator[tuple[str, JsonDict], None]:
        """Yield (type, object) watch events from `resource_version`; raise Gone when it expired."""
        params = dict(query, watch="true", allowWatchBookmarks="true",
                      resourceVersion=resource_version, timeoutSeconds=timeout_seconds)
        lines = self.stream_lines(path, query=params, read_timeout=timeout_seconds + 30, accept="application/json",
                                  verb="WATCH")
        async with aclosing(lines):
            async for line in lines:
                if not line.strip():
                    continue
                event = await _parse_body(line, "WATCH", path)
                kind = event.get("type", "")
                obj = event.get("object") or {}
                if kind == "ERROR":
                    status = int(obj.get("code", 500))
                    raise error_from_response(status, json.dumps(obj), verb="WATCH", target=path)
                yield kind, obj

    async def stream_lines(self, path: str, *, query: Mapping[str, Any], read_timeout: float,
                           accept: str = "*/*", verb: str = "GET",
                           max_line_bytes: int | None = None) -> AsyncGenerator[bytes, None]:
        """A streaming GET (a watch, or a pod log with follow=true): each line of the body as it arrives.

        The stream ends when the server closes it; silence longer than `read_timeout` is a
        TransportError. A line longer than `max_line_bytes` is cut there, so memory stays bounded.
        """
        await self.limiter.acquire()
        self._count(verb, path)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=read_timeout)
        try:
            resp = await self._api.call_api(
                path, "GET", query_params=list(query.items()), header_params={"Accept": accept},
                auth_settings=["BearerToken"], _preload_content=False, _request_timeout=timeout,
            )
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise TransportError(0, "Unreachable", f"{type(exc).__name__}: {exc}", verb=verb, target=path) from exc
        async with resp:
            if resp.status != 200:
                raw = await resp.read()
                raise error_from_response(resp.status, raw, verb=verb, target=path,
                                          retry_after=resp.headers.get("Retry-After"))
            buffer = b""
            try:
                async for chunk in resp.content.iter_any():
                    *lines, buffer = (buffer + chunk).split(b"\n")
                    if max_line_bytes is not None and len(buffer) > max_line_bytes:
                        lines.append(buffer[:max_line_bytes])
                        buffer = b""
                    for line in lines:
                        yield line
                if buffer:
                    yield buffer
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                raise TransportError(0, "Unreachable", f"{type(exc).__name__}: {exc}",
                                     verb=verb, target=path) from exc
