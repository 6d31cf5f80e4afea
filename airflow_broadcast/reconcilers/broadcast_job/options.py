"""Switches of the BroadcastJob engine: the pinning mode, and upstream-compat for the [F] items."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BroadcastOptions:
    """Switches that change behaviour: pinning mode (P4/P5) and upstream-compat for [F] items."""

    assign_by_scheduler: bool = True
    kruise_compat: bool = False
    cleanup_succeeded_pods: bool = False
