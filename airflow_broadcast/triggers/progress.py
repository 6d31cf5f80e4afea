"""Throttled progress lines for the task log: done/desired, and each new failure once."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

MIN_INTERVAL_SECONDS = 10.0


class ProgressLog:
    def __init__(self, log: logging.Logger | Any, driver: Any, record: Mapping[str, Any] | None = None) -> None:
        self.log = log
        self.driver = driver
        self.record = record or {}
        self._last_line = ""
        self._last_time = 0.0
        self._failures_seen: set[str] = set()

    def update(self, status: Mapping[str, Any], record: Mapping[str, Any] | None = None) -> None:
        summary = self.driver.summary(record or self.record, status)
        for unit, what in sorted(self.driver.failed_units(summary).items()):
            if unit not in self._failures_seen:
                self._failures_seen.add(unit)
                self.log.warning("%s failed: %s", unit, what)
        line = self.driver.progress_line(summary)
        now = time.monotonic()
        if line != self._last_line and now - self._last_time >= MIN_INTERVAL_SECONDS:
            self.log.info("%s", line)
            self._last_line, self._last_time = line, now
