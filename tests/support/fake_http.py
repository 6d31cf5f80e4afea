"""The HTTP side of the in-memory cluster: routes, Status bodies, responses, faults and the request log."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

JsonDict = dict[str, Any]
Collection = tuple[str, str, str]  # (group/version, namespace or "", plural)
CORE = "v1"
_REASONS = {400: "BadRequest", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed", 409: "Conflict",
            410: "Expired", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}


class StatusError(Exception):
    """A request the API server refuses; the transport turns it into a `Status` response."""

    def __init__(self, code: int, reason: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code, self.reason, self.message = code, reason, message
        self.details = dict(details or {})

    def body(self) -> JsonDict:
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": self.message,
                "reason": self.reason, "details": self.details, "code": self.code}


@dataclass
class Fault:
    """Answer the next `times` requests of `verb` (an HTTP method, "WATCH" or "*") on paths matching `path`
    (a glob) with `status`; status 0 resets the connection, before the request is served or, with
    `after`, once it was (the write happened, the answer was lost). `times=None` never runs out."""

    verb: str
    path: str
    status: int = 0
    times: int | None = 1
    retry_after: float | None = None
    message: str = ""
    after: bool = False
    hits: int = 0

    def matches(self, verb: str, path: str) -> bool:
        live = self.times is None or self.hits < self.times
        return live and self.verb in (verb, "*") and fnmatch.fnmatchcase(path, self.path)


@dataclass(frozen=True)
class Request:
    """One request as the fake served it; `status` 0 means the connection was reset."""

    at: float  # the event loop's clock
    verb: str
    path: str
    status: int
    query: Mapping[str, str]
    body: Any = None


@dataclass
class Route:
    collection: Collection
    name: str


class Content:
    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self._chunks = chunks

    def iter_any(self) -> AsyncIterator[bytes]:
        return self._chunks


async def _no_chunks() -> AsyncIterator[bytes]:
    return
    yield b""  # pragma: no cover - makes this an async generator


@dataclass
class Response:
    """What `call_api(..., _preload_content=False)` returns: status, headers, body or a chunk stream."""

    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content: Content = field(default_factory=lambda: Content(_no_chunks()))

    async def __aenter__(self) -> Response:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def read(self) -> bytes:
        return self.body


def route(path: str, served: Iterable[str]) -> Route:
    parts = path.strip("/").split("/")
    if parts[:2] == ["api", CORE]:
        group, rest = CORE, parts[2:]
    elif parts[0] == "apis" and len(parts) >= 3:
        group, rest = f"{parts[1]}/{parts[2]}", parts[3:]
    else:
        group, rest = "", []
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if group not in served or not 1 <= len(rest) <= 2:
        raise StatusError(404, "NotFound", "the server could not find the requested resource")
    return Route((group, namespace, rest[0]), rest[1] if len(rest) == 2 else "")


def fault_response(fault: Fault) -> Response:
    """The answer a fault gives: status 0 (a reset) for the caller to raise, else a Status body."""
    if fault.status == 0:
        return Response(0)
    error = StatusError(fault.status, _REASONS.get(fault.status, "Unknown"), fault.message or "injected fault")
    headers = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
    return Response(fault.status, json.dumps(error.body()).encode(), headers)
