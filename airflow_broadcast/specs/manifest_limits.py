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

from airflow_broadcast.specs.field_errors import MAX_PATH_CHARS, clip

MAX_SOURCE_BYTES = 1024 * 1024
"""YAML/JSON text longer than a ConfigMap can hold is refused before it is parsed."""
MAX_MANIFEST_BYTES = 512 * 1024
"""The decoded manifest, as JSON; the other half of the record is left for the status."""
MAX_VALUES = 20_000
"""Keys, scalars, lists and objects in one manifest, aliases and shared objects counted at each use."""
MAX_DEPTH = 100
"""Nested lists and objects; a pod template with affinity terms needs about 12."""
MAX_STORED_MANIFEST_BYTES = MAX_MANIFEST_BYTES + 64 * 1024
"""What the reconcile loop reads from a record: a valid manifest plus the defaults it is stored with."""
MAX_EXACT_FLOAT = 2**53
SEPARATOR = 2  # ", " after a value, ": " after a key
_NEEDS_NO_ESCAPE = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]*")
_KEY_IN_PATH = 64


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
    where = clip(path or "<root>", MAX_PATH_CHARS)
    return ManifestError(f"{what}: {where}: {problem}", path=where, reason=problem)


def child_path(path: str, key: str) -> str:
    """`spec.template` for a field, `metadata.labels[app.kubernetes.io/name]` for any other key."""
    if len(key) <= _KEY_IN_PATH and key.isascii() and key.isidentifier():
        return f"{path}.{key}" if path else key
    return key_path(path, key)


def item_path(path: str, key: str | int) -> str:
    """The path of a list item (`[3]`) or of an object member (see `child_path`)."""
    return f"{path}[{key}]" if isinstance(key, int) else child_path(path, key)


def key_path(path: str, key: str) -> str:
    """`path[key]`, the key clipped so that paths stay short whatever the keys are."""
    shown = key if len(key) <= _KEY_IN_PATH else key[:_KEY_IN_PATH] + "…"
    return f"{path}[{shown}]"


def json_size(text: str) -> int:
    """The length of `text` as a JSON string (the record's encoder escapes all but printable ASCII)."""
    return len(text) + 2 if _NEEDS_NO_ESCAPE.fullmatch(text) else len(json.dumps(text))


def json_scalar(value: Any) -> tuple[Any, int] | str:
    """(the value as JSON holds it, the bytes it takes there with a separator), or why it is no JSON value.

    A float without a fraction becomes an int, as the API server stores it (`3.0` → `3`);
    an integer beyond 64 bits is refused (nothing in Kubernetes holds one, and it could not be printed).
    """
    if value is None:
        return None, 4 + SEPARATOR
    if isinstance(value, bool):
        return value, 5 + SEPARATOR
    if isinstance(value, str):
        return value, json_size(value) + SEPARATOR
    if isinstance(value, int):
        if not -(2**63) <= value < 2**64:
            return f"is a {value.bit_length()}-bit integer: JSON integers in Kubernetes must fit in 64 bits"
        return value, value.bit_length() // 3 + 2 + SEPARATOR
    if isinstance(value, float):
        if not math.isfinite(value):
            return "must be a finite number (JSON has no NaN or infinity)"
        if value.is_integer() and abs(value) <= MAX_EXACT_FLOAT:
            return int(value), len(repr(value)) + SEPARATOR
        return value, len(repr(value)) + SEPARATOR
    return f"must be a string, number, boolean, null, list or object, not {type(value).__name__}"


def key_size(key: str) -> int:
    return json_size(key) + SEPARATOR


COLLECTION_SIZE = 2 + SEPARATOR
"""`[]` or `{}` and a separator; their items are counted on their own."""


class Budget:
    """What a decoded manifest holds so far; `add` says which bound is passed, if any."""

    def __init__(self) -> None:
        self.values = 0
        self.size = 0

    def left(self) -> tuple[int, int]:
        """The values and bytes still allowed."""
        return MAX_VALUES - self.values, MAX_MANIFEST_BYTES - self.size

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


def check_stored_manifest(text: str) -> None:
    """Raise ManifestError for a stored manifest larger than any valid job gives, before it is decoded.

    The reconcile loop reads the record at every pass: this keeps decoding a hand-edited one cheap.
    """
    if len(text) > MAX_STORED_MANIFEST_BYTES:
        raise ManifestError(f"the stored manifest is {len(text)} characters long; a valid job stores at most "
                            f"{MAX_STORED_MANIFEST_BYTES // 1024} KiB (edited by hand?)")


def depth_problem(depth: int) -> str | None:
    if depth > MAX_DEPTH:
        return f"nested more than {MAX_DEPTH} levels deep; this provider refuses deeper manifests"
    return None


def source_problem(text: str) -> str | None:
    """Why a text is too long to be a manifest, checked before any parsing (and without copying a long one)."""
    too_long = len(text) > MAX_SOURCE_BYTES or (
        len(text) * 4 > MAX_SOURCE_BYTES and len(text.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES)
    if too_long:
        return f"is longer than {MAX_SOURCE_BYTES // 1024} KiB, more than a job record (a ConfigMap) can hold"
    return None
