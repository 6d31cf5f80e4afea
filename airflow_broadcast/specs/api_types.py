"""What Kubernetes objects are made of on the wire: JSON objects, and the bounds of Go's int32/int64 fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

JsonDict = dict[str, Any]
"""A decoded JSON object (a manifest, a status, a raw API object)."""

MAX_INT32 = 2**31 - 1
MAX_INT64 = 2**63 - 1


def object_meta(name: str, namespace: str, labels: Mapping[str, str], annotations: Mapping[str, str]) -> JsonDict:
    """`metadata` as Go serialises an ObjectMeta: empty labels and annotations are left out (omitempty)."""
    metadata: JsonDict = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    return metadata
