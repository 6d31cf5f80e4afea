"""A LIST page whose items stay raw JSON until one is needed.

An informer's periodic relist mostly finds what it already holds: each item's name and resourceVersion
decide, and only a newer item is parsed in full. Parsing every page of 500 pods into dicts first raised a
process's peak by some 20 MiB, and a trigger runner of 1,000 idle jobs stayed 21 MiB larger after the first
relist of their pods (the heap it grew to is not handed back whole). A raw item is a view into the page's
one buffer.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec

from airflow_broadcast.cluster.api_errors import TransportError
from airflow_broadcast.specs.api_types import JsonDict

OFFLOAD_PARSE_BYTES = 256 * 1024  # a larger answer is parsed in a worker thread, off the event loop
Item = msgspec.Raw | JsonDict  # dicts when msgspec refused the page (NaN, lone surrogates) and json parsed it


class _Metadata(msgspec.Struct):
    name: str | None = None
    namespace: str | None = None
    resourceVersion: str | None = None  # noqa: N815 - the API's own field name


class _Head(msgspec.Struct):
    metadata: _Metadata = msgspec.field(default_factory=_Metadata)


class _Page(msgspec.Struct):
    metadata: JsonDict = msgspec.field(default_factory=dict)
    items: list[msgspec.Raw] | None = None


_PAGE = msgspec.json.Decoder(_Page)
_HEAD = msgspec.json.Decoder(_Head)
_OBJECT = msgspec.json.Decoder()


def parse_page(raw: bytes) -> JsonDict:
    """A LIST answer as {"metadata": ..., "items": [raw item, ...]}; ValueError when it is not JSON."""
    try:
        page = _PAGE.decode(raw)
    except msgspec.DecodeError:
        parsed: JsonDict = json.loads(raw)  # the judge of what msgspec refuses; ValueError when not JSON
        return {"metadata": parsed.get("metadata") or {}, "items": parsed.get("items") or []}
    return {"metadata": page.metadata, "items": page.items or []}


async def read_page(raw: bytes, path: str) -> JsonDict:
    """parse_page, in a worker thread for a large page; a page that is not JSON is a transport failure."""
    try:
        return await asyncio.to_thread(parse_page, raw) if len(raw) > OFFLOAD_PARSE_BYTES else parse_page(raw)
    except ValueError as exc:
        raise TransportError(0, "Malformed", f"the answer ({len(raw)} bytes) is not JSON: {exc}",
                             verb="GET", target=path) from exc


def version_number(value: Any) -> int:
    """A resourceVersion as a number to compare (etcd's revision), 0 when there is none."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def metadata_of(item: Item) -> dict[str, str]:
    """The item's name, namespace and resourceVersion, without parsing the rest of it."""
    if isinstance(item, dict):
        meta = item.get("metadata") or {}
        return {"name": str(meta.get("name", "")), "namespace": str(meta.get("namespace") or ""),
                "resourceVersion": str(meta.get("resourceVersion", ""))}
    head = _HEAD.decode(item).metadata
    return {"name": head.name or "", "namespace": head.namespace or "", "resourceVersion": head.resourceVersion or ""}


def object_of(item: Item) -> JsonDict:
    """The whole item as a dict."""
    if isinstance(item, dict):
        return item
    try:
        parsed: JsonDict = _OBJECT.decode(item)
    except msgspec.DecodeError:
        parsed = json.loads(bytes(item))
    return parsed
