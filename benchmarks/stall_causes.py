"""What held the triggerer's loop through each "async thread was blocked" warning, from the probe's samples.

The probe (`benchmarks/lag_probe.py`) keeps each stall of the loop of 0.1 s or more with the CPU time its thread
and the whole process got through it (Stalls), and reads the loop thread's stack every 20 ms while the loop has
not ticked for 50 ms (StallStacks). A warning's samples and stall are those that ended inside the block it
reports. They name the cause, the first that holds:
- `log_write`: a sample stands in structlog's write of a line to the socket that carries the runner's logs to
  Airflow's supervisor (the write blocks while the supervisor does not drain that socket);
- `descheduled`: through the stall the whole trigger runner got less than half of it in CPU time, and the loop's
  thread spent at least half of the rest waiting on a run queue (or the kernel keeps no such wait): the process
  waited for a CPU (a collection that ended inside it took its CPU share, no more);
- `off_cpu`: the process got as little CPU, but the loop's thread was not waiting for one either: it was in a
  blocking call, or the machine's virtual CPU itself did not run;
- `other_threads`: the process's other threads ran for at least half of it (the loop's thread waited for the
  interpreter lock they held); the busiest is named;
- `collector`: the loop's thread ran, and a garbage collection of 0.1 s or more ended inside the block, or a
  sample stands in the probe's collection callback (the thread that collects holds the interpreter lock, so
  the sampler runs only as the collection ends, inside that callback);
- `provider`: the loop's thread ran, and a sample's stack passes through the provider (`airflow_broadcast/`);
- `other`: the loop's thread ran other code (the innermost frame is kept, to be read);
- `unsampled`: no sample inside the block.
Results from before the stalls kept the process's CPU time have no `descheduled` or `other_threads`, and those from
before they kept the run-queue wait no `off_cpu`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.cpu_timeline import cpu_through
from benchmarks.cpu_timeline import read as read_timeline

CAUSES = ("log_write", "descheduled", "off_cpu", "other_threads", "collector", "provider", "other", "unsampled")
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
    collection ended inside it, and its stall (end, gap, loop thread CPU-s, process CPU-s, loop thread's run-queue
    wait in s or -1), when one was seen."""
    innermost = [stack[-1] for stack in stacks if stack]
    if any(LOG_WRITE in frame for frame in innermost):
        return "log_write"
    if stall is not None and len(stall) > 3:
        gap, loop, process = stall[1], stall[2], stall[3]
        if process < gap / 2:
            waited = stall[4] if len(stall) > 4 else -1.0
            return "descheduled" if waited < 0 or waited >= (gap - loop) / 2 else "off_cpu"
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
                        "loop_thread_run_queue_wait": stall[4] if stall and len(stall) > 4 and stall[4] >= 0 else None,
                        "busiest_thread": busy.most_common(1)[0][0] if busy else None,
                        "log_queue_bytes": longest[2] if longest else None,
                        "frame": longest[3][-1] if longest and longest[3] else None})
    counts = Counter(d["cause"] for d in details)
    return {"blocked_warnings_by_cause": {cause: counts.get(cause, 0) for cause in CAUSES},
            "blocked_warning_details": details}


def gc_summary(log_text: str, probe: Path, timeline: Path | None = None) -> dict[str, Any]:
    """The collector's long pauses in the trigger runner, and how many blocked warnings one of them explains.

    The watchdog logs a block once it ends, so a pause explains a warning when it ended inside that block.
    """
    lines = [json.loads(x) for x in probe.read_text().splitlines()] if probe.exists() else []
    pauses = [tuple(p) for x in lines for p in x.get("gc", [])]
    warnings = blocked_warnings(log_text)
    explained = sum(1 for when, took in warnings if any(ended_inside(end, when, took) for end, _, _ in pauses))
    samples = [tuple(s) for x in lines for s in x.get("stall_stacks", [])]
    stalls = [tuple(s) for x in lines for s in x.get("stalls", [])]
    causes = warning_causes(warnings, pauses, samples, stalls) if any("stall_stacks" in x for x in lines) else {}
    if causes and timeline is not None and timeline.exists():
        _add_who_ran(causes, read_timeline(timeline))
    return {"gc_pauses_over_0_1s": len(pauses), "gc_pauses_over_0_2s": sum(1 for p in pauses if p[2] > 0.2),
            "gc_max_pause_seconds": max((p[2] for p in pauses), default=0.0),
            "gc_full_collections_over_0_1s": sum(1 for p in pauses if p[1] == 2),
            "blocked_warnings_during_gc": explained, **stall_summary(warnings, lines), **causes}


def stall_summary(warnings: list[tuple[float, float]], lines: list[dict[str, Any]]) -> dict[str, Any]:
    """For each blocked warning, the probe's stall that ended inside it: did the loop's thread run through it?

    At least half the stall in CPU time: code ran on the loop. Less: the thread did not run, kept off a CPU by
    the machine or by another thread of the process holding the interpreter lock. Results from before the probe
    kept stalls have none of these keys.
    """
    if not any("stalls" in x for x in lines):
        return {}
    stalls = [tuple(s) for x in lines for s in x.get("stalls", [])]
    on_loop = descheduled = 0
    for when, took in warnings:
        match = [s for s in stalls if ended_inside(s[0], when, took)]
        if not match:
            continue
        gap, cpu = max(match, key=lambda s: s[1])[1:3]
        if cpu >= gap / 2:
            on_loop += 1
        else:
            descheduled += 1
    return {"loop_stalls_over_0_2s": sum(1 for s in stalls if s[1] >= 0.2),
            "blocked_warnings_running_on_loop": on_loop, "blocked_warnings_descheduled": descheduled,
            "blocked_warnings_without_stall": len(warnings) - on_loop - descheduled}


def _add_who_ran(causes: dict[str, Any], timeline: list[dict[str, Any]]) -> None:
    """Each warning's CPU-s by process role through its block, and the sum over every warning."""
    total: Counter[str] = Counter()
    for detail in causes["blocked_warning_details"]:
        detail["cpu_by_role"] = cpu_through(timeline, detail["at"] - detail["seconds"], detail["at"])
        total.update(detail["cpu_by_role"])
    causes["cpu_by_role_through_warnings"] = {role: round(s, 2) for role, s in total.most_common()}


def recount(results: Path, kept: Path) -> dict[str, Any]:
    """Name the causes again in a triggerer result, from the log and probe its run kept in `kept`
    (`triggerer-provider.log`, `triggerer-provider.probe.jsonl`, `triggerer-provider.cpu.jsonl` where the run kept
    one, and the comparator's `triggerer-floor.*`):
    after a change of these rules, without another 40-minute run. Only the keys read from them change."""
    result = json.loads(results.read_text())
    for part, holder in (("provider", result), ("floor", result.get("floor"))):
        log, probe = kept / f"triggerer-{part}.log", kept / f"triggerer-{part}.probe.jsonl"
        if holder is not None and log.exists() and probe.exists():
            holder.update(gc_summary(log.read_text(errors="replace"), probe, kept / f"triggerer-{part}.cpu.jsonl"))
    results.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    from benchmarks.common import REPO_ROOT

    recount(REPO_ROOT / "benchmarks" / "results" / "triggerer.json", REPO_ROOT / ".airflow-bench")
