"""Parsed JSON whose object keys are shared by every document in the process.

`json.loads` gives each document its own copy of every key. A triggerer with 1,000 idle jobs holds
1,000 records, statuses and pods that repeat the same few hundred keys ("resourceVersion",
"airflow-broadcast.io/job-uid", "lastTransitionTime", ...), 50-80 bytes each, so one shared copy of
each saves kilobytes per job. Values are left alone: most are unique.
"""

from __future__ import annotations

import sys
from typing import Any

SHARE_BELOW_CHARS = 16384  # larger documents (a big job's status) change every pass: the walk would cost more


def shared_keys(value: Any) -> Any:
    """`value` with every dict rebuilt on interned keys (lists and scalars as they are)."""
    if isinstance(value, dict):
        return {sys.intern(key): shared_keys(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shared_keys(item) for item in value]
    return value


def shared_key_dict(value: dict[str, Any]) -> dict[str, Any]:
    """One level only: a labels or annotations map."""
    return {sys.intern(key): item for key, item in value.items()}
