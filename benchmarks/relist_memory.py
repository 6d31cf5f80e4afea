"""What a periodic relist of N unchanged pods costs an informer's process in memory, items raw against parsed.

`python -m benchmarks.relist_memory [--pods 1000] [--relists 5] [--kubeconfig K]` runs the same informer in
fresh processes side by side, in both orders: one whose relists keep each item raw until it is newer than the
cache (the provider's way) and one that parses every page into dicts first (as before). Each child starts its
informer on an empty namespace, creates N pods on one kwok node, so that they reach its cache through the watch
as a triggerer's jobs' pods do, waits until all run (then nothing changes them), and relists. It reports its RSS
before the relists, its peak (VmHWM) over them, and its RSS after them with the freed heap handed back. Without
`--kubeconfig` it starts the private plane and stops it after.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.common import (
    REPO_ROOT,
    core_api,
    machine,
    new_namespace,
    node_pool,
    raw_client,
    save,
    start_bench_plane,
)

MODES = ("raw", "parsed")


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM starts again from the current RSS


class _Parsed:
    """The client with every LIST page parsed into dicts, as relists were before items stayed raw."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def list_pages(self, path: str, **query: Any) -> Any:
        query.pop("lazy_items", None)
        return self._client.list_pages(path, **query)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


async def _child(kubeconfig: str, namespace: str, node: str, pods: int, mode: str, relists: int) -> dict[str, Any]:
    from airflow_broadcast.cluster import heap_release
    from airflow_broadcast.cluster.informers import Informer
    from airflow_broadcast.cluster.observation import pod_info

    trim = heap_release._libc_trim() or (lambda: 0)
    client = await raw_client(kubeconfig)
    try:
        lister = client if mode == "raw" else _Parsed(client)
        informer: Informer[Any] = Informer(client=lister, path=f"/api/v1/namespaces/{namespace}/pods",
                                           transform=pod_info)
        informer.start()  # LIST (empty), then WATCH: the pods come through the watch, as in a triggerer
        await informer.wait_synced()
        await _create_pods(client, namespace, node, pods)
        for _ in range(900):  # the watch fills the cache
            if sum(1 for pod in informer.values.values() if pod.phase == "Running") >= pods:
                break
            await asyncio.sleep(1)
        await asyncio.sleep(2)
        gc.collect()
        trim()
        before, versions = _status_kib("VmRSS"), dict(informer._versions)
        _reset_peak()
        for _ in range(relists):
            await informer._relist()
        peak = _status_kib("VmHWM")
        reapplied = sum(1 for key, version in informer._versions.items() if versions.get(key) != version)
        gc.collect()
        trim()
        return {"mode": mode, "pods": len(informer.values), "reapplied": reapplied, "rss_before_kib": before,
                "peak_kib": peak, "rss_after_kib": _status_kib("VmRSS")}
    finally:
        await client.close()


async def _create_pods(client: Any, namespace: str, node: str, count: int) -> None:
    sem = asyncio.Semaphore(20)

    async def one(i: int) -> None:
        body = {"metadata": {"name": f"relist-{i:05d}", "labels": {"app": "relist", "index": str(i)}},
                "spec": {"nodeName": node, "containers": [
                    {"name": "main", "image": "busybox", "command": ["sleep", "3600"],
                     "env": [{"name": f"VAR_{k}", "value": f"value-{k}"} for k in range(5)]}]}}
        async with sem:
            await client.create(f"/api/v1/namespaces/{namespace}/pods", body)

    await asyncio.gather(*(one(i) for i in range(count)))


def relist_memory(kubeconfig: str, pods: int, relists: int) -> dict[str, Any]:
    core = core_api(kubeconfig)
    runs = []
    with node_pool(kubeconfig, 1, uuid.uuid4().hex[:6], pods_per_node=pods + 10) as (nodes, _):
        for order in (MODES, MODES[::-1]):
            for mode in order:
                namespace = new_namespace(core, "bench-relist")
                try:
                    out = subprocess.run([sys.executable, "-m", "benchmarks.relist_memory", "--child", mode,
                                          "--kubeconfig", kubeconfig, "--namespace", namespace, "--node", nodes[0],
                                          "--pods", str(pods), "--relists", str(relists)],
                                         cwd=REPO_ROOT, check=True, capture_output=True, text=True, timeout=900)
                    runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
                finally:
                    core.delete_namespace(namespace)
                    _wait_gone(core, namespace)
    by_mode = {m: [r for r in runs if r["mode"] == m] for m in MODES}
    return {"pods": pods, "relists": relists, "runs": runs, "median_kib": {
        m: {key: sorted(r[key] - r["rss_before_kib"] for r in rs)[len(rs) // 2]
            for key in ("peak_kib", "rss_after_kib")} for m, rs in by_mode.items()}}


def _wait_gone(core: Any, namespace: str, timeout: float = 600) -> None:
    """The node's pod slots free again before the next child creates its pods."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            core.read_namespace(namespace)
        except Exception:  # 404: gone
            return
        time.sleep(2)


def summary(result: dict[str, Any] | None) -> str:
    """The recorded run in a sentence, for docs/performance.md."""
    if result is None:
        return "no run recorded yet"
    mib = {mode: {key: f"{kib / 1024:.1f}" for key, kib in figures.items()}
           for mode, figures in result["median_kib"].items()}
    runs = len(result["runs"]) // len(MODES)
    return (f"run at {result['machine']['commit']}, {result['pods']:,} pods, {result['relists']} relists, {runs} "
            f"processes each way, medians: parsing each page into dicts first, the peak over the relists was "
            f"{mib['parsed']['peak_kib']} MiB above the RSS before them, and {mib['parsed']['rss_after_kib']} MiB "
            f"stayed once the freed heap was handed back; with the items raw, {mib['raw']['peak_kib']} and "
            f"{mib['raw']['rss_after_kib']} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.relist_memory")
    parser.add_argument("--kubeconfig")
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--relists", type=int, default=5)
    parser.add_argument("--child", choices=MODES)
    parser.add_argument("--namespace")
    parser.add_argument("--node")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_child(args.kubeconfig, args.namespace, args.node, args.pods, args.child,
                                                  args.relists))))
        return
    plane = None
    if args.kubeconfig is None:
        plane, args.kubeconfig = start_bench_plane()
    try:
        result = {"machine": machine(args.kubeconfig), **relist_memory(args.kubeconfig, args.pods, args.relists)}
        print(f"saved {save('relist_memory', result)}: {summary(result)}")
    finally:
        if plane is not None:
            plane.stop()


if __name__ == "__main__":
    main()
