"""What the fault proxy injects (rules), and what it saw (a request log with the figures drawn from it).

A rule matches by method, path regex and watch-or-not; it fires on a seeded random
draw, after letting `skip` matching requests through, at most `times` times.
"""

from __future__ import annotations

import random
import re
import threading
from collections import Counter
from dataclasses import dataclass, field

# The faults the proxy knows; see FaultProxy for how each one is answered.
STATUS = "status"  # an HTTP error status with a Kubernetes Status body (429 + Retry-After, 500, 503, 410)
RESET = "reset"  # the connection is closed before the request reaches the apiserver
RESET_AFTER = "reset_after"  # the apiserver applied the request, then the connection dies before the answer
DELAY = "delay"  # the request is held `delay` seconds, then forwarded
WATCH_GONE = "watch_gone"  # a watch answers 200, then an ERROR event with a 410 Expired Status
WATCH_CUT = "watch_cut"  # a watch forwards `after_events` events, then half of the next line, then dies
WATCH_END = "watch_end"  # a watch answers 200 and ends at once, without an event
GARBLE = "garble"  # the apiserver's answer arrives cut to half its length (a 200 that is not JSON)
FAULTS = (STATUS, RESET, RESET_AFTER, DELAY, WATCH_GONE, WATCH_CUT, WATCH_END, GARBLE)
WATCH_ONLY = (WATCH_GONE, WATCH_CUT, WATCH_END)


@dataclass
class FaultRule:
    """One kind of fault for the requests that match; `fired` counts how often it was injected."""

    fault: str
    method: str = "*"
    path: str = ""
    watch: bool | None = None
    status: int = 503
    retry_after: int | None = None
    delay: float = 5.0
    after_events: int = 0
    times: int = 1
    skip: int = 0
    probability: float = 1.0
    fired: int = 0
    matched: int = 0

    def __post_init__(self) -> None:
        if self.fault not in FAULTS:
            raise ValueError(f"unknown fault {self.fault!r}; one of {', '.join(FAULTS)}")
        if self.fault in WATCH_ONLY:
            self.watch = True
        elif self.fault == GARBLE:
            self.watch = False
        self._pattern = re.compile(self.path)

    def matches(self, method: str, path: str, watch: bool) -> bool:
        if self.method not in ("*", method):
            return False
        if self.watch is not None and self.watch != watch:
            return False
        return bool(self._pattern.search(path))

    def draw(self, rng: random.Random) -> bool:
        """Count a matching request and decide (seeded) whether this one gets the fault."""
        self.matched += 1
        if self.matched <= self.skip or (self.times and self.fired >= self.times):
            return False
        if self.probability < 1.0 and rng.random() >= self.probability:
            return False
        self.fired += 1
        return True

    def describe(self) -> str:
        what = {STATUS: f"HTTP {self.status}" + (f" + Retry-After {self.retry_after}" if self.retry_after else ""),
                DELAY: f"{self.delay:g} s delay", WATCH_CUT: f"watch cut after {self.after_events} event(s)",
                WATCH_GONE: "watch ERROR 410 Expired", WATCH_END: "watch ends at once",
                RESET: "connection reset before the apiserver", GARBLE: "answer body cut in half",
                RESET_AFTER: "connection reset after the apiserver applied it"}[self.fault]
        return f"{what} on {self.method} {self.path or '*'}" + (" (watch)" if self.watch else "")


@dataclass(frozen=True)
class RequestRecord:
    """One request as the proxy saw it; `key` identifies a retry of the same request."""

    at: float
    method: str
    path: str
    key: str
    watch: bool
    fault: str = ""
    status: int = 0
    retry_after: int | None = None


@dataclass
class RequestLog:
    """Every request, in arrival order (thread-safe: the proxy appends, tests read)."""

    records: list[RequestRecord] = field(default_factory=list)
    watch_cuts: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, record: RequestRecord) -> None:
        with self._lock:
            self.records.append(record)

    def count_cut(self) -> None:
        """A watch stream was really cut mid-event (the rule only asked for it when the watch began)."""
        with self._lock:
            self.watch_cuts += 1

    def snapshot(self) -> list[RequestRecord]:
        with self._lock:
            return list(self.records)

    def injected(self) -> Counter[str]:
        """How many requests got each fault (a watch cut counts when it happened, not when it was asked)."""
        found = Counter(r.fault for r in self.snapshot() if r.fault and r.fault != WATCH_CUT)
        if self.watch_cuts:
            found[WATCH_CUT] = self.watch_cuts
        return found

    def between(self, start: float, end: float) -> list[RequestRecord]:
        return [r for r in self.snapshot() if start <= r.at < end]

    def rate(self, start: float, end: float) -> tuple[float, int]:
        """(mean requests per second, busiest single second) over [start, end)."""
        seen = self.between(start, end)
        if end <= start:
            return 0.0, 0
        per_second = Counter(int(r.at - start) for r in seen)
        return len(seen) / (end - start), max(per_second.values(), default=0)

    def retry_gaps(self) -> list[tuple[int, float]]:
        """(Retry-After asked, seconds until the same request came again) for every 429 the proxy sent.

        A throttled watch counts as retried by the next request for the same collection (a relist or a watch).
        """
        seen = self.snapshot()
        gaps: list[tuple[int, float]] = []
        for i, record in enumerate(seen):
            if record.status != 429 or record.retry_after is None:
                continue
            again = next((r for r in seen[i + 1:] if r.key == record.key
                          or (record.watch and (r.method, r.path) == (record.method, record.path))), None)
            if again is not None:
                gaps.append((record.retry_after, again.at - record.at))
        return gaps
