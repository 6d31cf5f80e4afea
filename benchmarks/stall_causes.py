"""What held the triggerer's loop through each "async thread was blocked" warning, from the probe's stack samples.

The probe (`benchmarks/lag_probe.py`, StallStacks) reads the loop thread's stack every 20 ms while the loop has
not ticked for 50 ms. A warning's samples are those taken inside the block it reports. Their frames name the
cause, in this order:
- `collector`: a garbage collection of 0.1 s or more ended inside the block, or a sample stands in the probe's
  collection callback (the thread that collects holds the interpreter lock, so the sampler runs only as the
  collection ends, inside that callback);
- `log_write`: a sample stands in structlog's write of a line to the socket that carries the runner's logs to
  Airflow's supervisor (the write blocks while the supervisor does not drain that socket);
- `provider`: a sample's stack passes through the provider's code (`airflow_broadcast/`);
- `other`: samples, none of the above (the innermost frame is kept, to be read);
- `unsampled`: no sample inside the block.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from typing import Any

CAUSES = ("collector", "log_write", "provider", "other", "unsampled")
PROBE_CALLBACK = "benchmarks/lag_probe.py"
LOG_WRITE = "structlog/_output.py"
PROVIDER = "airflow_broadcast/"


def blocked_warnings(log_text: str) -> list[tuple[float, float]]:
    """(when logged, seconds blocked) of each "async thread was blocked" line of a triggerer log."""
    found = []
    for match in re.finditer(r"^(\S+Z) .*?async thread was blocked for ([0-9.]+) seconds", log_text, re.M):
        when = datetime.fromisoformat(match.group(1).replace("Z", "+00:00")).timestamp()
        found.append((when, float(match.group(2))))
    return found


def ended_inside(end: float, when: float, took: float) -> bool:
    """Whether something that ended at `end` ended inside a block of `took` s that the watchdog logged at `when`."""
    return when - took - 0.15 <= end <= when + 0.05


def cause_of(stacks: list[list[str]], collected: bool) -> str:
    """The cause of one block, from the stacks sampled inside it (innermost frame last) and whether a long
    collection ended inside it."""
    innermost = [stack[-1] for stack in stacks if stack]
    if collected or any(PROBE_CALLBACK in frame for frame in innermost):
        return "collector"
    if any(LOG_WRITE in frame for frame in innermost):
        return "log_write"
    if any(PROVIDER in frame for stack in stacks for frame in stack):
        return "provider"
    return "other" if innermost else "unsampled"


def warning_causes(warnings: list[tuple[float, float]], pauses: list[tuple[float, int, float]],
                   samples: list[tuple[float, float, int, list[str]]]) -> dict[str, Any]:
    """Each warning (when logged, seconds blocked) with its cause, and the count by cause."""
    details = []
    for when, took in warnings:
        inside = [s for s in samples if ended_inside(s[0], when, took)]
        collected = any(ended_inside(end, when, took) for end, _, _ in pauses)
        cause = cause_of([s[3] for s in inside], collected)
        longest = max(inside, key=lambda s: s[1], default=None)
        details.append({"at": round(when, 3), "seconds": took, "cause": cause,
                        "log_queue_bytes": longest[2] if longest else None,
                        "frame": longest[3][-1] if longest and longest[3] else None})
    counts = Counter(d["cause"] for d in details)
    return {"blocked_warnings_by_cause": {cause: counts.get(cause, 0) for cause in CAUSES},
            "blocked_warning_details": details}
