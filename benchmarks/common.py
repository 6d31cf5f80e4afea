"""What every benchmark shares: the cluster it runs on, fake node pools, namespaces, clients, the machine.

A run at 1,000 nodes and more gets a private control plane (`BenchPlane`) whose controller-manager keeps
its default client limits (20 QPS, burst 30), so the DaemonSet and Job comparators run as a stock cluster
runs them; the local development cluster raises them to 500/1000 for its test suite. Its kwok holds node
Leases of a day instead of 40 s, so it renews none during a run (see BENCH_LEASE_SECONDS).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kubernetes import client, config

from devcluster.control_plane import REPO_ROOT, ControlPlane
from devcluster.fake_nodes import FakeNode, create_nodes, delete_nodes

RESULTS = REPO_ROOT / "benchmarks" / "results"
BENCH_PLANE_DIR = REPO_ROOT / ".airflow-bench" / "cluster"  # ignored by git, like the other bench state
SIM = "sim.airflow-broadcast.io"
KCM_RAISED_LIMITS = ("--kube-api-qps=", "--kube-api-burst=", "--concurrent-gc-syncs=")
# Real kubelets renew their node Leases from their own machines, and API Priority and Fairness gives those
# renewals a level of their own (system-node-high). Here one kwok process renews thousands, inside the plane's
# CPU quota, so at kwok's 40 s leases they were a third of the plane's requests during a storm, and how many fell
# into a method's window depended on that method's requests. Shorter leases than a day (600 s was tried) come
# back as waves of renewals that hit one round in three. The bench plane's Leases last a day, so none is renewed
# during a run.
BENCH_LEASE_SECONDS = 86_400
# Twice a Lease: kwok may renew late on a busy plane, and no node may turn NotReady for that.
BENCH_NODE_GRACE = f"--node-monitor-grace-period={2 * BENCH_LEASE_SECONDS}s"


class BenchPlane(ControlPlane):
    """A private control plane whose kube-controller-manager runs at its default API client limits."""

    def _kcm_args(self, info: Any, pki: Path) -> list[str]:
        kept = [a for a in super()._kcm_args(info, pki) if not a.startswith(KCM_RAISED_LIMITS)]
        return [BENCH_NODE_GRACE if a.startswith("--node-monitor-grace-period=") else a for a in kept]

    def _kwok_args(self, info: Any, binaries_dir: Path) -> list[str]:
        lease = "--node-lease-duration-seconds="
        return [f"{lease}{BENCH_LEASE_SECONDS}" if a.startswith(lease) else a
                for a in super()._kwok_args(info, binaries_dir)]


def start_bench_plane(directory: Path = BENCH_PLANE_DIR) -> tuple[BenchPlane, str]:
    plane = BenchPlane(directory)
    return plane, plane.start(timeout=120).kubeconfig


def core_api(kubeconfig: str) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))


def new_namespace(core: client.CoreV1Api, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": name}})
    return name


@contextmanager
def node_pool(kubeconfig: str, size: int, label: str, pods_per_node: int = 110) -> Iterator[tuple[list[str], float]]:
    """`size` fake nodes labelled bench-pool=<label> (their names, seconds until schedulable), deleted afterwards."""
    names, seconds = make_pool(kubeconfig, size, label, pods_per_node)
    try:
        yield names, seconds
    finally:
        delete_nodes(kubeconfig, names, workers=16)


def make_pool(kubeconfig: str, size: int, label: str, pods_per_node: int = 110) -> tuple[list[str], float]:
    """`size` fake nodes labelled bench-pool=<label>; returns their names and the seconds until schedulable."""
    from tests.support.waits import wait_nodes_schedulable

    allocatable = {"cpu": "32", "memory": "256Gi", "pods": str(pods_per_node), "ephemeral-storage": "1Ti"}
    t0 = time.monotonic()
    names = create_nodes(kubeconfig, [FakeNode(name=f"b{label}-{i:05d}", labels={"bench-pool": label},
                                               allocatable=allocatable) for i in range(size)], workers=16)
    wait_nodes_schedulable(core_api(kubeconfig), names, timeout=900)
    return names, time.monotonic() - t0


async def raw_client(kubeconfig: str, qps: float = 0.0, burst: int = 1) -> Any:
    """The provider's raw-JSON client without a rate limit (qps 0): what the benchmark itself watches with."""
    from kubernetes_asyncio import client as async_client
    from kubernetes_asyncio import config as async_config

    from airflow_broadcast.cluster.http_session import api_client_for
    from airflow_broadcast.cluster.kube_client import KubeClient

    cfg = async_client.Configuration()
    await async_config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    return KubeClient(api_client_for(cfg), qps=qps, burst=burst)


def _command(*args: str) -> str:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine(kubeconfig: str | None = None) -> dict[str, Any]:
    """Cores, RAM, kernel and versions, saved with every result."""
    from importlib.metadata import version

    meminfo = Path("/proc/meminfo").read_text().splitlines() if Path("/proc/meminfo").exists() else []
    mem_kb = next((int(line.split()[1]) for line in meminfo if line.startswith("MemTotal:")), 0)
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "")
    kube_version = ""
    if kubeconfig:
        try:
            api = client.VersionApi(config.new_client_from_config(config_file=kubeconfig))
            kube_version = api.get_code().git_version
        except Exception as exc:  # the description must not fail a run
            kube_version = f"unknown ({type(exc).__name__})"
    return {
        "cores": os.cpu_count(), "cpu": cpu, "ram_gib": round(mem_kb / 2**20, 1),
        "kernel": platform.release(), "os": platform.platform(), "python": platform.python_version(),
        "airflow": version("apache-airflow"), "kubernetes_asyncio": version("kubernetes_asyncio"),
        "kubernetes": kube_version, "etcd": _command("etcd", "--version").splitlines()[:1],
        "commit": _command("git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"),
        "load_average_at_start": list(os.getloadavg()),
    }


def save(name: str, result: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def load(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]
