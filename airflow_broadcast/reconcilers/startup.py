"""The start-up timeout: which pod of a job has been starting for too long.

A pod is starting while it is Pending: not scheduled yet, or scheduled with a container that
has not started (ContainerCreating, ErrImagePull, ImagePullBackOff, ...). Its clock is its own
creationTimestamp, so the check gives the same answer after a triggerer restart. Pure: the
caller passes `now`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from airflow_broadcast.reconcilers.observed import PodInfo

STARTING_PHASES = ("Pending", "")  # "" : created, no status written yet


@dataclass(frozen=True)
class StartupStall:
    """The pod that has been starting the longest past the timeout, and how many others are past it too."""

    pod: str
    node: str
    seconds: float
    cause: str
    others: int = 0

    def describe(self, timeout: float) -> str:
        where = f" on node {self.node}" if self.node else " (not scheduled to a node)"
        others = f"; {self.others} more pod(s) are past the start-up timeout too" if self.others else ""
        return (f"pod {self.pod}{where} has been starting for {self.seconds:.0f} s, longer than "
                f"startup_timeout_seconds={timeout:g}: {self.cause}{others}")


@dataclass(frozen=True)
class StartupCheck:
    """A stall, or when (epoch) the next starting pod would pass the timeout (None: no pod is starting)."""

    stall: StartupStall | None = None
    next_check: float | None = None


def is_starting(pod: PodInfo) -> bool:
    return pod.phase in STARTING_PHASES and not pod.deleting and pod.created_at > 0


def starting_cause(pod: PodInfo) -> str:
    """Why the pod has not started, in the words of its status: the scheduler's message, else the waiting reason."""
    if pod.waiting_reason:
        return pod.waiting_reason
    if pod.pending_message:
        return pod.pending_message
    return "Pending" if pod.node else "Pending: not scheduled yet"


def check_startup(pods: Iterable[PodInfo], now: float, timeout: float | None) -> StartupCheck:
    """The oldest pod starting for longer than `timeout` seconds; a timeout of None or 0 checks nothing."""
    if not timeout or timeout <= 0:
        return StartupCheck()
    starting = sorted((p for p in pods if is_starting(p)), key=lambda p: (p.created_at, p.name))
    overdue = [p for p in starting if now - p.created_at > timeout]
    if overdue:
        oldest = overdue[0]
        return StartupCheck(StartupStall(oldest.name, oldest.node, now - oldest.created_at, starting_cause(oldest),
                                         len(overdue) - 1))
    if starting:
        return StartupCheck(next_check=starting[0].created_at + timeout)
    return StartupCheck()
