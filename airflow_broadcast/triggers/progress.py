"""Throttled progress lines for the task log: the kind's progress line, and each new failure once."""

from __future__ import annotations

import time
from typing import Any, Generic, Protocol, TypeVar

from airflow_broadcast.reconcilers.kind import JobKind
from airflow_broadcast.reconcilers.observed import JobRecord

MIN_INTERVAL_SECONDS = 10.0
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
        self._failures_seen: set[str] = set()

    def update(self, record: JobRecord) -> None:
        summary = self.kind.summary(record)
        for unit, what in sorted(self.kind.failed_units(summary).items()):
            if unit not in self._failures_seen:
                self._failures_seen.add(unit)
                self.log.warning("%s failed: %s", unit, what)
        line = self.kind.progress_line(summary)
        now = time.monotonic()
        if line != self._last_line and now - self._last_time >= MIN_INTERVAL_SECONDS:
            self.log.info("%s", line)
            self._last_line, self._last_time = line, now
