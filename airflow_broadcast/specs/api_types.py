"""What Kubernetes objects are made of on the wire: JSON objects, and the bounds of Go's int32/int64 fields."""

from __future__ import annotations

from typing import Any

JsonDict = dict[str, Any]
"""A decoded JSON object (a manifest, a status, a raw API object)."""

MAX_INT32 = 2**31 - 1
MAX_INT64 = 2**63 - 1

