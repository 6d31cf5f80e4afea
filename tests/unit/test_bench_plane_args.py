"""The benchmark's private plane: stock controller-manager limits, and node Leases renewed rarely."""

from __future__ import annotations

from pathlib import Path

from benchmarks.common import BENCH_LEASE_SECONDS, BENCH_NODE_GRACE, KCM_RAISED_LIMITS, BenchPlane
from devcluster.control_plane import ClusterInfo, ControlPlane


def _info(tmp_path: Path) -> ClusterInfo:
    return ClusterInfo(marker="m", directory=str(tmp_path), kubeconfig=str(tmp_path / "kubeconfig"),
                       restricted_kubeconfig="", server="https://127.0.0.1:1",
                       ports={"kcm": 1, "kwok": 2, "scheduler": 3})


def test_kwok_renews_leases_rarely_and_the_node_grace_outlasts_a_late_renewal(tmp_path: Path) -> None:
    info, binaries = _info(tmp_path), tmp_path / "bin"
    for name in ("dev", "bench"):
        (tmp_path / name).mkdir()
    stock = ControlPlane(tmp_path / "dev")._kwok_args(info, binaries)
    bench = BenchPlane(tmp_path / "bench")._kwok_args(info, binaries)

    assert "--node-lease-duration-seconds=40" in stock
    assert f"--node-lease-duration-seconds={BENCH_LEASE_SECONDS}" in bench
    assert [a for a in bench if "lease" not in a and "--config=" not in a] == [
        a for a in stock if "lease" not in a and "--config=" not in a]  # nothing else changes

    kcm = BenchPlane(tmp_path / "bench")._kcm_args(info, tmp_path)
    graces = [a for a in kcm if a.startswith("--node-monitor-grace-period=")]
    assert graces == [BENCH_NODE_GRACE]
    grace = int(BENCH_NODE_GRACE.split("=")[1].rstrip("s"))
    assert grace >= 2 * BENCH_LEASE_SECONDS  # kwok may renew late on a busy plane; no node turns NotReady
    assert not [a for a in kcm if a.startswith(KCM_RAISED_LIMITS)]  # the comparators see stock limits
