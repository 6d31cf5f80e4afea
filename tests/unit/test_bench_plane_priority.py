"""The triggerer benchmark lowers the control plane's priority for its run, every thread and its session's
scheduler autogroup, and restores it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.plane_share import autogroup, lowered_priority

THREADS = "import threading, time; [threading.Thread(target=time.sleep, args=(60,)).start() for _ in range(3)]; " \
          "time.sleep(60)"


@pytest.fixture(params=[True, False], ids=["own-session", "benchmark-session"])
def plane_process(request: pytest.FixtureRequest) -> Iterator[subprocess.Popen[bytes]]:
    """A stand-in for a control-plane binary: one process with several threads, in a session of its own (as the
    plane's binaries run) or in the benchmark's."""
    child = subprocess.Popen([sys.executable, "-c", THREADS], start_new_session=request.param)
    try:
        deadline = time.monotonic() + 10
        while len(list(Path(f"/proc/{child.pid}/task").iterdir())) < 4:
            assert time.monotonic() < deadline, "the stand-in's threads did not start"
            time.sleep(0.01)
        yield child
    finally:
        child.kill()
        child.wait()


def _niceness(pid: int) -> set[int]:
    return {os.getpriority(os.PRIO_PROCESS, int(t.name)) for t in Path(f"/proc/{pid}/task").iterdir()}


def test_every_thread_runs_lowered_inside_the_block_and_is_restored_after(
        plane_process: subprocess.Popen[bytes], capsys: pytest.CaptureFixture[str]) -> None:
    start, group = _niceness(plane_process.pid), autogroup(plane_process.pid)
    own_group = group is not None and group == autogroup("self")
    with lowered_priority([plane_process.pid], 7) as lowered:
        assert lowered
        assert _niceness(plane_process.pid) == {7}
        if group is not None:  # the kernel groups sessions: the plane's group is lowered, the benchmark's never
            assert autogroup(plane_process.pid) == (group[0], group[1] if own_group else 7)
    if os.geteuid() == 0:
        assert _niceness(plane_process.pid) == start
        assert autogroup(plane_process.pid) == group
        assert "could not restore" not in capsys.readouterr().out
    else:  # an unprivileged user may not lower niceness again: the run says so
        assert "could not restore" in capsys.readouterr().out


def test_no_processes_means_nothing_was_lowered() -> None:
    with lowered_priority([], 7) as lowered:
        assert not lowered
