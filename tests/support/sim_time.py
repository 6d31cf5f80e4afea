"""Times for the kwok stages' `sim.airflow-broadcast.io/fail-until` annotation."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime


def fail_until(seconds: float) -> str:
    """An RFC 3339 UTC time `seconds` from now (rounded up): pods created before it fail, later ones succeed."""
    return datetime.fromtimestamp(math.ceil(time.time() + seconds), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
