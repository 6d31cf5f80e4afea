"""A fault-injecting reverse proxy between a Kubernetes client and the local apiserver, on loopback.

The client talks plain HTTP to 127.0.0.1:<port> with its usual bearer token (see
`kubeconfig`); the proxy forwards over TLS to the apiserver and, by rule, answers
with throttling, server errors, resets, delays, expired or cut watches instead. An
outage answers every request with a reset (or a 503) and drops open connections.
It runs its own event loop in a thread so synchronous tests can drive it.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import random
import ssl
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

import aiohttp
import yaml
from aiohttp import web

from devcluster.fault_rules import (
    DELAY,
    GARBLE,
    RESET,
    RESET_AFTER,
    STATUS,
    WATCH_CUT,
    WATCH_END,
    WATCH_GONE,
    FaultRule,
    RequestLog,
    RequestRecord,
)

_HOP_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "accept-encoding",
                "content-encoding", "upgrade"}
_REASONS = {410: "Expired", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}


def status_body(code: int, message: str) -> dict[str, Any]:
    """A Kubernetes `Status` object, as the apiserver sends with an error."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": _REASONS.get(code, "InternalError"), "code": code}


class _Upstream:
    """Where the real apiserver is and how to reach it (from its kubeconfig's current context)."""

    def __init__(self, kubeconfig: Path, directory: Path) -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        context_name = config.get("current-context") or config["contexts"][0]["name"]
        context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        self.user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        self.server = str(cluster["server"]).rstrip("/")
        if "certificate-authority-data" in cluster:
            ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
            self.ssl = ssl.create_default_context(cadata=ca)
        else:
            self.ssl = ssl.create_default_context(cafile=cluster.get("certificate-authority"))
        if "client-certificate-data" in self.user:  # the proxy presents the client certificate itself
            cert, key = directory / "proxy-client.crt", directory / "proxy-client.key"
            cert.write_bytes(base64.b64decode(self.user["client-certificate-data"]))
            key.write_bytes(base64.b64decode(self.user["client-key-data"]))
            key.chmod(0o600)
            self.ssl.load_cert_chain(cert, key)


class FaultProxy:
    """`with FaultProxy(kubeconfig, directory, rules, seed=1) as proxy:` then point clients at proxy.kubeconfig."""

    def __init__(self, upstream_kubeconfig: str | Path, directory: Path, rules: Iterable[FaultRule] = (),
                 seed: int = 0) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.upstream = _Upstream(Path(upstream_kubeconfig), directory)
        self.kubeconfig = directory / "kubeconfig-fault-proxy"
        self.rules = list(rules)
        self.log = RequestLog()
        self.port = 0
        self.outage_mode = ""
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._active: set[asyncio.Transport] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="fault-proxy")
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    # ---- lifecycle ------------------------------------------------------------------------
    def start(self) -> FaultProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(30)
        self._write_kubeconfig()
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _serve(self) -> None:
        connector = aiohttp.TCPConnector(ssl=self.upstream.ssl, limit=200)
        self._session = aiohttp.ClientSession(connector=connector, read_bufsize=2**21, auto_decompress=False)
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def _shutdown(self) -> None:
        self._drop_connections()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def _write_kubeconfig(self) -> None:
        user = {k: v for k, v in self.upstream.user.items() if k == "token"}
        config = {"apiVersion": "v1", "kind": "Config",
                  "clusters": [{"name": "fault-proxy", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}],
                  "users": [{"name": "fault-proxy", "user": user}],
                  "contexts": [{"name": "fault-proxy", "context": {"cluster": "fault-proxy", "user": "fault-proxy"}}],
                  "current-context": "fault-proxy"}
        self.kubeconfig.write_text(json.dumps(config, indent=2))
        self.kubeconfig.chmod(0o600)

    # ---- control from the test's thread ----------------------------------------------------
    def add_rules(self, *rules: FaultRule) -> None:
        with self._lock:
            self.rules.extend(rules)

    def clear_rules(self) -> None:
        with self._lock:
            self.rules.clear()

    def begin_outage(self, mode: str = "reset") -> float:
        """From now every request is reset (`reset`) or answered 503 (`503`); open connections drop."""
        if mode not in ("reset", "503"):
            raise ValueError(f"outage mode {mode!r}: 'reset' or '503'")
        self.outage_mode = mode
        self._loop.call_soon_threadsafe(self._drop_connections)
        return time.monotonic()

    def end_outage(self) -> float:
        self.outage_mode = ""
        return time.monotonic()

    def _drop_connections(self) -> None:
        for transport in list(self._active):
            transport.abort()
        self._active.clear()

    # ---- the handler -----------------------------------------------------------------------
    def _pick(self, method: str, path: str, watch: bool) -> FaultRule | None:
        with self._lock:
            for rule in self.rules:
                if rule.matches(method, path, watch) and rule.draw(self._rng):
                    return rule
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        watch = request.query.get("watch", "") in ("true", "1")
        digest = hashlib.sha1(body).hexdigest()[:12]
        record = RequestRecord(time.monotonic(), request.method, request.path,
                               f"{request.method} {request.path_qs} {digest}", watch)
        transport = request.transport
        if self.outage_mode:
            return self._answer_outage(request, record)
        rule = self._pick(request.method, request.path, watch)
        fault = rule.fault if rule else ""
        if rule is not None and rule.fault == STATUS:
            self.log.add(_with(record, fault, rule.status, rule.retry_after))
            headers = {"Retry-After": str(rule.retry_after)} if rule.retry_after else {}
            return web.json_response(status_body(rule.status, f"injected {rule.status}"), status=rule.status,
                                     headers=headers)
        if rule is not None and rule.fault == RESET:
            self.log.add(_with(record, fault))
            _abort(transport)
        if rule is not None and rule.fault == DELAY:
            await asyncio.sleep(rule.delay)
        if rule is not None and rule.fault in (WATCH_GONE, WATCH_END):
            self.log.add(_with(record, fault, 410 if rule.fault == WATCH_GONE else 200))
            gone = {"type": "ERROR", "object": status_body(410, "too old resource version (injected)")}
            return await self._short_watch(request, gone if rule.fault == WATCH_GONE else None)
        if transport is not None:
            self._active.add(transport)
        try:
            cut = rule.after_events if rule is not None and rule.fault == WATCH_CUT else None
            return await self._forward(request, body, watch, record, fault, cut, rule.fault if rule else "")
        finally:
            self._active.discard(transport)

    def _answer_outage(self, request: web.Request, record: RequestRecord) -> web.StreamResponse:
        if self.outage_mode == "503":
            self.log.add(_with(record, "outage", 503))
            return web.json_response(status_body(503, "apiserver unavailable (outage)"), status=503)
        self.log.add(_with(record, "outage"))
        _abort(request.transport)

    async def _short_watch(self, request: web.Request, event: dict[str, Any] | None) -> web.StreamResponse:
        """A watch that answers 200, sends `event` (if any) and ends."""
        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        if event is not None:
            await resp.write(json.dumps(event).encode() + b"\n")
        await resp.write_eof()
        return resp

    async def _forward(self, request: web.Request, body: bytes, watch: bool, record: RequestRecord, fault: str,
                       cut_after: int | None, after: str) -> web.StreamResponse:
        """Send the request on; `after` (RESET_AFTER, GARBLE) spoils the answer once the apiserver gave it."""
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        headers["Accept-Encoding"] = "identity"  # plain bodies: watch lines are read, and bodies may be cut
        timeout = aiohttp.ClientTimeout(total=None if watch else 120, sock_connect=10)
        try:
            async with self._session.request(request.method, self.upstream.server + request.path_qs, data=body or None,
                                             headers=headers, timeout=timeout) as upstream:
                self.log.add(_with(record, fault, upstream.status))
                answer = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_HEADERS}
                if watch and upstream.status == 200:
                    return await self._stream(request, upstream, answer, cut_after)
                data = await upstream.read()
        except (aiohttp.ClientError, OSError, TimeoutError):
            _abort(request.transport)  # the apiserver is unreachable: so is the proxy
        if after == RESET_AFTER:
            _abort(request.transport)
        if after == GARBLE:
            data = data[: len(data) // 2]
        return web.Response(status=upstream.status, body=data, headers=answer)

    async def _stream(self, request: web.Request, upstream: aiohttp.ClientResponse, headers: dict[str, str],
                      cut_after: int | None) -> web.StreamResponse:
        resp = web.StreamResponse(status=200, headers=headers)
        await resp.prepare(request)
        events = 0
        async for line in upstream.content:
            if cut_after is not None and events >= cut_after and line.strip():
                await resp.write(line[: max(1, len(line) // 2)])
                self.log.count_cut()
                _abort(request.transport)
            await resp.write(line)
            events += 1
        await resp.write_eof()
        return resp


def _with(record: RequestRecord, fault: str, status: int = 0, retry_after: int | None = None) -> RequestRecord:
    return RequestRecord(record.at, record.method, record.path, record.key, record.watch, fault, status, retry_after)


def _abort(transport: asyncio.BaseTransport | None) -> NoReturn:
    """Drop the client's connection without an answer, and end the handler."""
    if transport is not None:
        transport.abort()  # type: ignore[attr-defined]
    raise asyncio.CancelledError
