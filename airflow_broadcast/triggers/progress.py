"""Throttled lines for the task log: the kind's progress line, each new failure once, and Warnings per reason."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

try:
    from airflow.sdk.log import redact
except ImportError:  # pragma: no cover - Airflow 3.1
    from airflow.sdk.execution_time.secrets_masker import redact  # type: ignore[no-redef]

from airflow_broadcast.cluster.job_warnings import JobWarning
from airflow_broadcast.reconcilers.kind import JobKind
from airflow_broadcast.reconcilers.observed import JobRecord

MIN_INTERVAL_SECONDS = 10.0
WARNING_INTERVAL_SECONDS = 30.0
SummaryT = TypeVar("SummaryT")


class TaskLog(Protocol):
    """What is written to a task log: Airflow's structlog loggers and `logging.Logger` both fit."""

    def info(self, msg: str, /, *args: Any) -> object: ...

    def warning(self, msg: str, /, *args: Any) -> object: ...

    def error(self, msg: str, /, *args: Any) -> object: ...


class ProgressLog(Generic[SummaryT]):
    def __init__(self, log: TaskLog, kind: JobKind[Any, SummaryT]) -> None:
        self.log = log
        self.kind = kind
        self._last_line = ""
        self._last_time = 0.0
        self._failures_seen: dict[str, None] = {}  # an empty dict is a third of an empty set

    def update(self, record: JobRecord) -> None:
        summary = self.kind.summary(record)
        for unit, what in sorted(self.kind.failed_units(summary).items()):
            if unit not in self._failures_seen:
                self._failures_seen[unit] = None
                self.log.warning("%s failed: %s", unit, what)
        line = self.kind.progress_line(summary)
        now = time.monotonic()
        if line != self._last_line and now - self._last_time >= MIN_INTERVAL_SECONDS:
            self.log.info("%s", line)
            self._last_line, self._last_time = line, now


def masked(text: str) -> str:
    """Cluster text on its way to the task log, with every secret Airflow's masker knows as `***`."""
    return str(redact(text))


class WarningLog:
    """The job's warnings in the task log: at most one line per reason every `interval` seconds.

    The first warning of a reason shows at once; the ones that follow within the interval are
    held back and counted, and the next line of that reason (or `flush()`, when the job ends)
    says how many were not shown. A burst of 1,000 FailedScheduling events is two lines.
    Event messages are written by whoever can post Events: they pass Airflow's secrets masker.
    """

    def __init__(self, log: TaskLog, interval: float = WARNING_INTERVAL_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.log = log
        self.interval = interval
        self.clock = clock
        self._shown_at: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def add(self, warning: JobWarning) -> None:
        now = self.clock()
        shown_at = self._shown_at.get(warning.reason)
        if shown_at is not None and now - shown_at < self.interval:
            self._held[warning.reason] = self._held.get(warning.reason, 0) + 1
            return
        held = self._held.pop(warning.reason, 0)
        if held and shown_at is not None:
            self.log.warning("%s (and %d more %s warning(s) in the %.0f s before, not shown)",
                             masked(warning.describe()), held, warning.reason, now - shown_at)
        else:
            self.log.warning("%s", masked(warning.describe()))
        self._shown_at[warning.reason] = now

    def flush(self) -> None:
        """Say how many warnings were held back and never shown."""
        for reason, held in sorted(self._held.items()):
            self.log.warning("%d more %s warning(s) not shown (at most one line per reason every %.0f s)",
                             held, reason, self.interval)
        self._held.clear()
