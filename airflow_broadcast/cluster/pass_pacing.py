"""How soon a woken reconcile pass may run: proportional to what the last pass cost, never a fixed debounce."""

from __future__ import annotations

MIN_PASS_INTERVAL = 0.25  # the longest gap between passes that coalesces a burst of watch events
MIN_PASS_GAP = 0.002  # the shortest, so that a burst of events that arrive together costs one pass


def coalesce_gap(since_start: float, took: float) -> float:
    """How long to wait before a woken pass, so that a burst of watch events costs one pass.

    The gap after a pass is as long as the pass took (at least MIN_PASS_GAP, at most MIN_PASS_INTERVAL):
    a cheap pass runs again within milliseconds, so the last pod's event reaches the trigger at once,
    while an expensive pass can use at most about half of the loop's time. No fixed debounce remains.
    """
    gap = min(MIN_PASS_INTERVAL, max(MIN_PASS_GAP, took))
    return max(0.0, took + gap - since_start)
