"""Which of the machine's processes ran, five times a second, while the triggerer benchmark runs.

A blocked warning through which the trigger runner got little CPU says the runner waited; this says who had
the CPUs meanwhile: the control plane's binaries (by name), the triggerer's supervisor and its trigger runner,
Airflow's other processes, the benchmark itself, or anything else. Each line of the file is one interval:
its end, and the CPU-s each role got in it (the sum over its processes' user and system time), with the
machine's steal time (a virtual CPU the host did not run).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TICK = os.sysconf("SC_CLK_TCK")
PLANE = ("etcd", "kube-apiserver", "kube-controller", "kube-scheduler", "kwok")  # comm is cut at 15 characters


def _stat(pid: str) -> tuple[str, int, int, float] | None:
    """(command, process group, session, CPU-s so far) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
    return comm, int(rest[2]), int(rest[3]), (int(rest[11]) + int(rest[12])) / TICK


def machine_seconds() -> tuple[float, float]:
    """The machine's (idle, steal) time so far, all CPUs summed (idle counts I/O wait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (fields[3] + fields[4]) / TICK, (fields[7] if len(fields) > 7 else 0) / TICK


class CpuTimeline:
    """Samples every process every `every` s in a thread of its own; `groups` names Airflow's process groups
    ({process group id: name}); the group named `triggerer` is split into its supervisor and its trigger runner."""

    def __init__(self, path: Path, groups: dict[int, str], every: float = 0.2) -> None:
        self.path, self.groups, self.every = path, groups, every
        self._own_session = os.getsid(0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="cpu-timeline")

    def __enter__(self) -> CpuTimeline:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def role(self, comm: str, pid: int, group: int, session: int) -> str:
        if comm in PLANE:
            return comm
        name = self.groups.get(group)
        if name == "triggerer":
            return "triggerer supervisor" if pid == group else "trigger runner"
        if name is not None:
            return f"airflow {name}"
        return "benchmark" if session == self._own_session else "other"

    def _run(self) -> None:
        _, before = self._sample()
        idle, steal = machine_seconds()
        with self.path.open("a") as out:
            while not self._stop.wait(self.every):
                now, used = self._sample()
                by_role: Counter[str] = Counter()
                for pid, (role, cpu) in used.items():
                    by_role[role] += cpu - before[pid][1] if pid in before else cpu  # a new process: all of it
                before = used
                idle_now, steal_now = machine_seconds()
                out.write(json.dumps({"t": round(now, 3), "cpu": {r: round(s, 2) for r, s in by_role.items() if s > 0},
                                      "idle": round(idle_now - idle, 2), "steal": round(steal_now - steal, 2)}) + "\n")
                idle, steal = idle_now, steal_now
                out.flush()

    def _sample(self) -> tuple[float, dict[int, tuple[str, float]]]:
        used = {}
        for entry in os.scandir("/proc"):
            if entry.name.isdigit() and (stat := _stat(entry.name)) is not None:
                comm, group, session, cpu = stat
                used[int(entry.name)] = (self.role(comm, int(entry.name), group, session), cpu)
        return time.time(), used


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def cpu_through(lines: Iterable[dict[str, Any]], start: float, end: float) -> dict[str, float]:
    """CPU-s by role in the intervals that end inside [start, end + one interval]: who ran through a stall."""
    total: Counter[str] = Counter()
    for line in lines:
        if start < line["t"] <= end + 0.2:
            total.update(line["cpu"])
            total["(idle)"] += line.get("idle", 0.0)
            total["(steal)"] += line.get("steal", 0.0)
    return {role: round(s, 2) for role, s in total.most_common() if s >= 0.01}
