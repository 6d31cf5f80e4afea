"""What held the triggerer's loop through each "async thread was blocked" warning, from the probe's samples.

The probe (`benchmarks/lag_probe.py`) keeps each stall of the loop of 0.1 s or more with the CPU time its thread
and the whole process got through it (Stalls), and reads the loop thread's stack every 20 ms while the loop has
not ticked for 50 ms (StallStacks). A warning's samples and stall are those that ended inside the block it
reports. They name the cause, the first that holds:
- `log_write`: a sample stands in structlog's write of a line to the socket that carries the runner's logs to
  Airflow's supervisor (the write blocks while the supervisor does not drain that socket);
- `descheduled`: through the stall the whole trigger runner got less than half of it in CPU time: the process
  waited for a CPU (a collection that ended inside it took its CPU share, no more);
- `other_threads`: the process's other threads ran for at least half of it (the loop's thread waited for the
  interpreter lock they held); the busiest is named;
- `collector`: the loop's thread ran, and a garbage collection of 0.1 s or more ended inside the block, or a
  sample stands in the probe's collection callback (the thread that collects holds the interpreter lock, so
  the sampler runs only as the collection ends, inside that callback);
- `provider`: the loop's thread ran, and a sample's stack passes through the provider (`airflow_broadcast/`);
- `other`: the loop's thread ran other code (the innermost frame is kept, to be read);
- `unsampled`: no sample inside the block.
Results from before the stalls kept the process's CPU time have no `descheduled` or `other_threads`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

CAUSES = ("log_write", "descheduled", "other_threads", "collector", "provider", "other", "unsampled")
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


def cause_of(stacks: list[list[str]], collected: bool, stall: tuple[float, ...] | None = None) -> str:
    """The cause of one block, from the stacks sampled inside it (innermost frame last), whether a long
    collection ended inside it, and its stall (end, gap, loop thread CPU-s, process CPU-s), when one was seen."""
    innermost = [stack[-1] for stack in stacks if stack]
    if any(LOG_WRITE in frame for frame in innermost):
        return "log_write"
    if stall is not None and len(stall) > 3:
        gap, loop, process = stall[1], stall[2], stall[3]
        if process < gap / 2:
            return "descheduled"
        if process - loop >= gap / 2:
            return "other_threads"
    if collected or any(PROBE_CALLBACK in frame for frame in innermost):
        return "collector"
    if any(PROVIDER in frame for stack in stacks for frame in stack):
        return "provider"
    return "other" if innermost else "unsampled"


def warning_causes(warnings: list[tuple[float, float]], pauses: list[tuple[float, int, float]],
                   samples: list[tuple[Any, ...]], stalls: list[tuple[float, ...]] | None = None) -> dict[str, Any]:
    """Each warning (when logged, seconds blocked) with its cause, and the count by cause.

    `samples`: (time, seconds late, log queue bytes, stack, {thread: CPU-s since the sample before}); the
    last item is missing in results from before the probe kept it.
    """
    details = []
    for when, took in warnings:
        inside = [s for s in samples if ended_inside(s[0], when, took)]
        stall = max((s for s in stalls or [] if ended_inside(s[0], when, took)), key=lambda s: s[1], default=None)
        collected = any(ended_inside(end, when, took) for end, _, _ in pauses)
        cause = cause_of([s[3] for s in inside], collected, stall)
        longest = max(inside, key=lambda s: s[1], default=None)
        busy: Counter[str] = Counter()
        for sample in inside:
            busy.update(sample[4] if len(sample) > 4 else {})
        details.append({"at": round(when, 3), "seconds": took, "cause": cause,
                        "loop_thread_cpu": stall[2] if stall else None,
                        "process_cpu": stall[3] if stall and len(stall) > 3 else None,
                        "busiest_thread": busy.most_common(1)[0][0] if busy else None,
                        "log_queue_bytes": longest[2] if longest else None,
                        "frame": longest[3][-1] if longest and longest[3] else None})
    counts = Counter(d["cause"] for d in details)
    return {"blocked_warnings_by_cause": {cause: counts.get(cause, 0) for cause in CAUSES},
            "blocked_warning_details": details}


def recount(results: Path, kept: Path) -> dict[str, Any]:
    """Name the causes again in a triggerer result, from the log and probe its run kept in `kept`
    (`triggerer-provider.log`, `triggerer-provider.probe.jsonl`, and the comparator's `triggerer-floor.*`):
    after a change of these rules, without another 40-minute run. Only the keys read from them change."""
    from benchmarks.triggerer_load import gc_summary

    result = json.loads(results.read_text())
    for part, holder in (("provider", result), ("floor", result.get("floor"))):
        log, probe = kept / f"triggerer-{part}.log", kept / f"triggerer-{part}.probe.jsonl"
        if holder is not None and log.exists() and probe.exists():
            holder.update(gc_summary(log.read_text(errors="replace"), probe))
    results.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    from benchmarks.common import REPO_ROOT

    recount(REPO_ROOT / "benchmarks" / "results" / "triggerer.json", REPO_ROOT / ".airflow-bench")
