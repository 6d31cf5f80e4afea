"""The storms run with the control plane under a CPU quota (a cgroup), and every process goes home after."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks import plane_share
from benchmarks.plane_share import GROUP, cpu_quota
from benchmarks.run import parser, plane_cpus


@pytest.fixture
def plane_process() -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield child
    finally:
        child.kill()
        child.wait()


def _fake_v2(root: Path) -> Path:
    """A cgroup v2 tree shaped like the kernel's: the root delegates the CPU controller."""
    root.mkdir()
    (root / "cgroup.subtree_control").write_text("cpu memory\n")
    (root / "cgroup.procs").write_text("")
    return root


def test_v2_quota_is_written_and_the_processes_move_in_and_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plane_process: subprocess.Popen[bytes]) -> None:
    root = _fake_v2(tmp_path / "cgroup")
    monkeypatch.setattr(plane_share, "CGROUP_ROOT", root)
    pid = plane_process.pid
    home = root / Path(f"/proc/{pid}/cgroup").read_text().split("0::", 1)[1].split()[0].lstrip("/")
    home.mkdir(parents=True, exist_ok=True)
    with cpu_quota([pid], 1.5) as quota:
        assert quota == 1.5
        assert (root / GROUP / "cpu.max").read_text() == "150000 100000"
        assert (root / GROUP / "cpu.weight").read_text() == "1600"  # 16 times the default of 100
        assert (root / GROUP / "cgroup.procs").read_text() == str(pid)
    assert (home / "cgroup.procs").read_text() == str(pid)  # written back to the group it came from


def test_v1_quota_uses_the_cfs_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     plane_process: subprocess.Popen[bytes]) -> None:
    root = tmp_path / "cgroup"
    (root / "cpu").mkdir(parents=True)
    (root / "cpu" / "cpu.cfs_quota_us").write_text("-1")
    monkeypatch.setattr(plane_share, "CGROUP_ROOT", root)
    with cpu_quota([plane_process.pid], 0.75) as quota:
        assert quota == 0.75
        assert (root / "cpu" / GROUP / "cpu.cfs_quota_us").read_text() == "75000"
        assert (root / "cpu" / GROUP / "cpu.cfs_period_us").read_text() == "100000"
        assert (root / "cpu" / GROUP / "cpu.shares").read_text() == "16384"  # 16 times the default of 1024


def test_without_a_cpu_cgroup_the_plane_shares_the_machine_and_the_run_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plane_process: subprocess.Popen[bytes]) -> None:
    monkeypatch.setattr(plane_share, "CGROUP_ROOT", tmp_path / "nothing")
    with cpu_quota([plane_process.pid], 1.5) as quota:
        assert quota == 0.0


def test_a_refused_write_falls_back_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str],
                                                  plane_process: subprocess.Popen[bytes]) -> None:
    root = _fake_v2(tmp_path / "cgroup")
    (root / GROUP).mkdir()
    (root / GROUP / "cpu.max").mkdir()  # writing it fails, as a read-only or undelegated file would
    monkeypatch.setattr(plane_share, "CGROUP_ROOT", root)
    with cpu_quota([plane_process.pid], 1.5) as quota:
        assert quota == 0.0
    assert "quota was not set" in capsys.readouterr().out


def test_zero_cores_means_no_quota(plane_process: subprocess.Popen[bytes]) -> None:
    with cpu_quota([plane_process.pid], 0) as quota:
        assert quota == 0.0


def test_the_default_quota_leaves_the_clients_half_a_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert plane_cpus(parser().parse_args(["compare"])) == 1.5
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert plane_cpus(parser().parse_args(["compare"])) == 7.5
    assert plane_cpus(parser().parse_args(["compare", "--plane-cpus", "0"])) == 0.0
    assert plane_cpus(parser().parse_args(["compare", "--plane-cpus", "1"])) == 1.0


def test_on_this_machine_the_quota_holds_a_real_process_and_leaves_no_group(
        plane_process: subprocess.Popen[bytes], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The real kernel interface where it can be written; the recorded fallback where it cannot."""
    group = f"{GROUP}-test-{os.getpid()}"  # not the group of a benchmark running beside the tests
    monkeypatch.setattr(plane_share, "GROUP", group)
    where = plane_share._hierarchy()
    with cpu_quota([plane_process.pid], 0.5) as quota:
        if quota:
            assert where is not None
            assert str(plane_process.pid) in (where.group / "cgroup.procs").read_text().split()
            usage = Path(f"/proc/{plane_process.pid}/cgroup").read_text()
            assert group in usage
            weight = where.group / ("cpu.weight" if where.v2 else "cpu.shares")
            assert int(weight.read_text()) == (plane_share.WEIGHT_V2 if where.v2 else plane_share.SHARES_V1)
    if quota:
        assert where is not None and not where.group.exists()
        assert group not in Path(f"/proc/{plane_process.pid}/cgroup").read_text()
    else:
        assert where is None or "quota was not set" in capsys.readouterr().out
