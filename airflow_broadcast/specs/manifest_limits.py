"""The bounds a manifest is decoded within, so that hostile input is refused cheaply and by name.

A job record is a ConfigMap, which holds at most 1 MiB, so no larger text can be a job.
The decoded manifest is stored as JSON next to the job's status, so it may take half of
that. Values are counted as they are decoded (an alias or a shared Python object counts
each time it is used), so a few hundred bytes of YAML aliases can never expand into
megabytes, and nesting is bounded before anything recursive runs. The bounds are far
above any real manifest and keep every pass of the reconcile loop, which validates the
stored manifest again, within a few tens of milliseconds.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

MAX_SOURCE_BYTES = 1024 * 1024
"""YAML/JSON text longer than a ConfigMap can hold is refused before it is parsed."""
MAX_MANIFEST_BYTES = 512 * 1024
"""The decoded manifest, as JSON; the other half of the record is left for the status."""
MAX_VALUES = 20_000
"""Keys, scalars, lists and objects in one manifest, aliases and shared objects counted at each use."""
MAX_DEPTH = 100
"""Nested lists and objects; a pod template with affinity terms needs about 12."""
MAX_EXACT_FLOAT = 2**53
_KEY_IN_PATH = 64
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ManifestError(ValueError):
    """The manifest could not be decoded into exactly one mapping within the bounds above.

    `path` names the field ("" when the problem is the text as a whole); `reason` is the
    message without the leading description of the manifest.
    """

    def __init__(self, message: str, *, path: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.reason = reason or message


def field_error(what: str, path: str, problem: str) -> ManifestError:
    """A ManifestError at `path` ("<root>" for the document itself)."""
    where = path or "<root>"
    return ManifestError(f"{what}: {where}: {problem}", path=where, reason=problem)


def child_path(path: str, key: str) -> str:
    """`spec.template` for a field, `metadata.labels[app.kubernetes.io/name]` for any other key."""
    if len(key) <= _KEY_IN_PATH and _IDENTIFIER.fullmatch(key):
        return f"{path}.{key}" if path else key
    return key_path(path, key)


def key_path(path: str, key: str) -> str:
    """`path[key]`, the key clipped so that paths stay short whatever the keys are."""
    shown = key if len(key) <= _KEY_IN_PATH else key[:_KEY_IN_PATH] + "…"
    return f"{path}[{shown}]"


def json_scalar(value: Any) -> tuple[Any, int] | str:
    """(the value as JSON holds it, its encoded size), or why it is no JSON value.

    A float without a fraction becomes an int, as the API server stores it (`3.0` → `3`).
    """
    if value is None:
        return None, 4
    if isinstance(value, bool):
        return value, 5
    if isinstance(value, str):
        return value, (len(value) + 2 if value.isascii() else len(json.dumps(value)))
    if isinstance(value, int):
        return value, value.bit_length() // 3 + 2
    if isinstance(value, float):
        if not math.isfinite(value):
            return "must be a finite number (JSON has no NaN or infinity)"
        if value.is_integer() and abs(value) <= MAX_EXACT_FLOAT:
            return int(value), len(repr(value))
        return value, len(repr(value))
    return f"must be a string, number, boolean, null, list or object, not {type(value).__name__}"


class Budget:
    """What a decoded manifest holds so far; `add` says which bound is passed, if any."""

    def __init__(self) -> None:
        self.values = 0
        self.size = 0

    def add(self, values: int, size: int) -> str | None:
        self.values += values
        self.size += size
        if self.values > MAX_VALUES:
            return (f"the manifest holds more than {MAX_VALUES} keys and values (aliases counted at each use); "
                    "this provider refuses larger manifests")
        if self.size > MAX_MANIFEST_BYTES:
            return (f"the manifest is larger than {MAX_MANIFEST_BYTES // 1024} KiB as JSON "
                    "(aliases counted at each use); a job record cannot hold it")
        return None


def count_values(value: Any) -> int:
    """The keys and values `value` holds, itself included (a decoded manifest is a tree), without recursion."""
    count, pending = 0, [value]
    while pending:
        item = pending.pop()
        count += 1
        if isinstance(item, Mapping):
            count += len(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return count


def depth_problem(depth: int) -> str | None:
    if depth > MAX_DEPTH:
        return f"nested more than {MAX_DEPTH} levels deep; this provider refuses deeper manifests"
    return None


def source_problem(text: str) -> str | None:
    """Why a text is too long to be a manifest, checked before any parsing (and without copying a long one)."""
    too_long = len(text) > MAX_SOURCE_BYTES or (
        len(text) * 4 > MAX_SOURCE_BYTES and len(text.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES)
    if too_long:
        return (f"is longer than {MAX_SOURCE_BYTES // 1024} KiB; a job record is a ConfigMap, "
                "which holds at most 1 MiB")
    return None
