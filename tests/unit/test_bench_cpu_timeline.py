"""The triggerer benchmark's CPU timeline names who ran: the plane's binaries, the triggerer's two processes,
Airflow's others, the benchmark, anything else; and sums a stall's intervals by role."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.cpu_timeline import CpuTimeline, cpu_through, read

SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\n"


def test_each_process_gets_a_role_by_its_name_or_its_group() -> None:
    timeline = CpuTimeline(Path("unused"), {100: "triggerer", 200: "dag-processor"})
    assert timeline.role("kube-apiserver", 5, 5, 5) == "kube-apiserver"
    assert timeline.role("etcd", 6, 6, 6) == "etcd"
    assert timeline.role("airflow", 100, 100, 100) == "triggerer supervisor"
    assert timeline.role("airflow", 101, 100, 100) == "trigger runner"
    assert timeline.role("python", 202, 200, 200) == "airflow dag-processor"
    assert timeline.role("python", 7, 7, os.getsid(0)) == "benchmark"
    assert timeline.role("sleep", 8, 8, -1) == "other"


def test_a_process_that_spins_shows_under_its_group_and_the_intervals_sum_by_role(tmp_path: Path) -> None:
    path = tmp_path / "cpu.jsonl"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)\n" + SPIN], start_new_session=True)
    try:
        with CpuTimeline(path, {child.pid: "triggerer"}, every=0.1):
            start = time.time()
            child.wait(timeout=20)
            time.sleep(0.3)
            end = time.time()
    finally:
        child.kill()
    lines = read(path)
    assert lines and all({"t", "cpu", "idle", "steal"} <= set(line) for line in lines)
    through = cpu_through(lines, start, end)
    assert 0.4 <= through["triggerer supervisor"] <= 1.2  # its 0.6 s of spinning, in 0.01 s ticks, and its start
    assert cpu_through(lines, end + 10, end + 20) == {}
