"""Deep copies of JSON-shaped data, which every pass makes of the status and of pod templates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def clone(value: Any) -> Any:
    """Deep copy of JSON-shaped data (dicts, lists, scalars); several times faster than copy.deepcopy."""
    if isinstance(value, Mapping):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clone(v) for v in value]
    return value
