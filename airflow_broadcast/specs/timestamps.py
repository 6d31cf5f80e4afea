"""RFC 3339 timestamps as Kubernetes writes them, converted without reading the clock."""

from __future__ import annotations

from datetime import UTC, datetime


def to_rfc3339(epoch: float) -> str:
    """Seconds since the epoch → `2026-11-29T20:00:00Z` (whole seconds, like metav1.Time)."""
    return datetime.fromtimestamp(int(epoch), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def from_rfc3339(value: str | None) -> float | None:
    """`2026-11-29T20:00:00Z` (or with fractions/offset) → seconds since the epoch; None stays None."""
    if not value:
        return None
    text = value.replace("Z", "+00:00")
    return datetime.fromisoformat(text).timestamp()
