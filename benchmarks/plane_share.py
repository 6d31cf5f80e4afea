"""The private control plane's CPU, held apart from the processes the benchmark measures.

Two ways, for two kinds of benchmark: the storms give the plane a CPU quota (`cpu_quota`), the triggerer
benchmark lowers its priority (`lowered_priority`), whose concern is the triggerer's loop lag rather than
throughput.

In production the API server, etcd and the kubelets do not run on the triggerer's cores. On a benchmark
machine they do, and a round saturates every core, so each CPU-second a client spends watching is taken
from the components that make its pods Running: the comparison would then measure the client's CPU as if
it were load on the cluster. `cpu_quota` gives the plane a fixed share of the machine (a cgroup CPU quota)
for every method alike, and a high CPU weight, so that it gets that share even while a client is busy (a
quota alone only caps the plane: a busy client could still take cycles from it). The clients run on what
is left: at least the cores the quota leaves, and whatever the plane does not use.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP = "airflow-broadcast-bench-plane"
PERIOD_US = 100_000
# The group's CPU weight, 16 times the default (v2 cpu.weight 100, v1 cpu.shares 1024): under contention the
# plane gets its quota first, so a busy client slows itself, not the cluster it is measured against.
WEIGHT_V2 = 1600
SHARES_V1 = 16384


class _Hierarchy:
    """Where the CPU controller is mounted (cgroup v2 or v1), and the group the benchmark makes there."""

    def __init__(self, mount: Path, v2: bool) -> None:
        self.mount, self.v2 = mount, v2
        self.group = mount / GROUP

    def home(self, pid: int) -> Path:
        """The cgroup directory `pid` is in now, in this hierarchy."""
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            hierarchy, controllers, path = line.split(":", 2)
            if (hierarchy == "0") if self.v2 else ("cpu" in controllers.split(",")):
                return self.mount / path.lstrip("/")
        return self.mount

    def limit(self, cores: float) -> None:
        quota = str(int(cores * PERIOD_US))
        if self.v2:
            (self.group / "cpu.max").write_text(f"{quota} {PERIOD_US}")
            (self.group / "cpu.weight").write_text(str(WEIGHT_V2))
        else:
            (self.group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (self.group / "cpu.cfs_quota_us").write_text(quota)
            (self.group / "cpu.shares").write_text(str(SHARES_V1))


def _hierarchy() -> _Hierarchy | None:
    """The v2 root if its CPU controller can be delegated, else the v1 CPU mount, else None."""
    for mount in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
        control = mount / "cgroup.subtree_control"
        if control.exists() and "cpu" in control.read_text().split():
            return _Hierarchy(mount, v2=True)
    v1 = CGROUP_ROOT / "cpu"
    return _Hierarchy(v1, v2=False) if (v1 / "cpu.cfs_quota_us").exists() else None


@contextmanager
def cpu_quota(pids: Iterable[int], cores: float) -> Iterator[float]:
    """Run the block with these processes (and their threads) limited to `cores` CPUs together, and first
    in line for them.

    Yields the quota that took effect: 0.0 when `cores` is 0 or no writable CPU cgroup exists (then the
    plane shares the machine, and the caller records that). The processes go back to their own cgroup after.
    """
    pids = list(pids)
    where = _hierarchy() if cores > 0 and pids else None
    homes: dict[int, Path] = {}
    try:
        if where is not None:
            where.group.mkdir(exist_ok=True)
            where.limit(cores)
            for pid in pids:
                homes[pid] = where.home(pid)
                (where.group / "cgroup.procs").write_text(str(pid))
    except OSError as exc:
        print(f"warning: the control plane's CPU quota was not set ({exc}); it shares the machine", flush=True)
        _release(where, homes)
        where, homes = None, {}
    try:
        yield cores if where is not None else 0.0
    finally:
        _release(where, homes)


def _release(where: _Hierarchy | None, homes: dict[int, Path]) -> None:
    """Every process back to its own cgroup, then the benchmark's group removed."""
    if where is None:
        return
    for pid, home in homes.items():
        try:
            (home / "cgroup.procs").write_text(str(pid))
        except OSError:
            continue  # the process has ended
    try:
        where.group.rmdir()
    except FileNotFoundError:
        pass
    except OSError as exc:
        print(f"warning: could not remove the cgroup {where.group} ({exc})", flush=True)


@contextmanager
def lowered_priority(pids: Iterable[int], nice: int) -> Iterator[bool]:
    """Run the block with these processes (every thread, and their scheduler autogroups) at `nice`; yields whether
    it took effect.

    The triggerer benchmark lowers the private control plane: in production the triggerer does not share its cores
    with the API server, etcd and a simulator of every kubelet. Each plane binary runs in a session of its own, and
    where the kernel groups sessions (`sched_autogroup_enabled`) it shares the CPUs between the groups first: a
    thread's niceness then counts only inside its group, so the group's niceness is lowered too (the benchmark's
    own group is left alone). Restoring a lower niceness may need privilege; when it fails, the plane stays lowered
    until it stops, and a warning says so.
    """
    before: dict[int, int] = {}
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            tid = int(task.name)
            try:
                before[tid] = os.getpriority(os.PRIO_PROCESS, tid)
                os.setpriority(os.PRIO_PROCESS, tid, nice)
            except OSError:
                continue
    groups = _lower_autogroups(pids, nice)
    try:
        yield bool(before)
    finally:
        for tid, value in before.items():
            try:
                os.setpriority(os.PRIO_PROCESS, tid, value)
            except ProcessLookupError:
                continue
            except PermissionError:
                print(f"warning: could not restore the control plane's priority (thread {tid})", flush=True)
                break
        for pid, value in groups.items():
            _set_autogroup(pid, value)


def autogroup(pid: int | str) -> tuple[str, int] | None:
    """(name, niceness) of a process's scheduler autogroup, or None where the kernel has none."""
    try:
        name, _, value = Path(f"/proc/{pid}/autogroup").read_text().split()
        return name, int(value)
    except (OSError, ValueError):
        return None


def _lower_autogroups(pids: Iterable[int], nice: int) -> dict[int, int]:
    """Set each process's autogroup (one per group, never the benchmark's own) to `nice`: {pid: niceness before}."""
    own, seen, before = autogroup("self"), set(), {}
    for pid in pids:
        group = autogroup(pid)
        if group is None or group[0] in seen or (own is not None and group[0] == own[0]):
            continue
        seen.add(group[0])
        if _set_autogroup(pid, nice):
            before[pid] = group[1]
    return before


def _set_autogroup(pid: int, nice: int) -> bool:
    try:
        Path(f"/proc/{pid}/autogroup").write_text(str(nice))
        return True
    except ProcessLookupError:
        return False
    except OSError as exc:
        print(f"warning: could not set the autogroup niceness of process {pid} to {nice} ({exc})", flush=True)
        return False
