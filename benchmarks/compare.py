"""Every method side by side on one pool: same pods, same clock, interleaved rounds, ratios.

Each round runs every method once. Odd rounds run the round before backwards, and each pair of rounds starts
one method further on, so that noise (the other load on the machine, etcd compaction, GC in the control plane)
and drift over the plane's life fall on all methods alike: on one plane, a raw storm's round cost the plane
about 35 % more CPU for the same requests once a Job had run, and stayed so. Between
methods the namespace's pods are force-deleted, then the namespace, and the next method waits until both
are gone.
"""

from __future__ import annotations

import asyncio
import queue
import statistics
import time
import uuid
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.cluster.api_errors import NotFound
from benchmarks.common import core_api, new_namespace, node_pool, raw_client
from benchmarks.methods import COMPLETING, DIAGNOSTIC, METHODS, PINNING, Task, child_main, spawn
from benchmarks.plane_cost import cpu_spent, plane_cpu, read_requests, requests_made
from benchmarks.podclock import PodClock

RAW_OF = {"affinity": "raw-affinity", "nodename": "raw-nodename"}


async def _cpu_from_first_added(clock: PodClock, pids: Mapping[str, int]) -> dict[str, float]:
    await clock.added.wait()
    return plane_cpu(pids)


async def run_method(task: Task, timeout: float, plane_pids: Mapping[str, int] | None = None) -> dict[str, Any]:
    """One method in a child process, timed by a pod watch in this one; with `plane_pids`, also what the
    round cost the plane (plane_cost)."""
    kube = await raw_client(task.kubeconfig)
    pids = dict(plane_pids or {})
    requests_before = await read_requests(kube) if pids else None
    clock = PodClock(kube, task.namespace, len(task.nodes))
    await clock.start()
    cpu_before = asyncio.get_running_loop().create_task(_cpu_from_first_added(clock, pids))
    child, stop, results = spawn(child_main, task)
    done = "succeeded" if task.complete else "running"
    deadline = time.monotonic() + timeout
    reached = False
    bill: dict[str, Any] = {}
    while time.monotonic() < deadline and child.is_alive():
        if await clock.wait(done, timeout=2.0):
            reached = True
            break
    if reached and pids and cpu_before.done():
        spent = cpu_spent(cpu_before.result(), plane_cpu(pids))
        bill["plane_cpu_seconds"] = spent.pop("total")
        bill["plane_cpu_by_process"] = spent
        requests_after = await read_requests(kube)
        if requests_before is not None and requests_after is not None:
            bill.update(requests_made(requests_before, requests_after))
    cpu_before.cancel()
    if not (task.complete and task.method.startswith("engine") and reached):
        stop.set()  # a completing engine ends on its own: its event is what detection is timed to
    try:
        cost = await asyncio.to_thread(results.get, True, 300)
    except queue.Empty:
        cost = {"error": "the child process reported nothing"}
    stop.set()
    await asyncio.to_thread(child.join, 30)
    if child.is_alive():
        child.kill()
    await clock.stop()
    await _clean(kube, task.namespace)
    await kube.close()
    summary = clock.summary()
    row: dict[str, Any] = {"method": task.method, "pinning": PINNING[task.method], "nodes": len(task.nodes),
                           "namespace": task.namespace, "complete": task.complete, "reached": reached,
                           **summary, **cost, **bill}
    if row.get("event_epoch") and summary.get("last_succeeded_epoch"):
        row["last_done_to_event_seconds"] = round(row["event_epoch"] - summary["last_succeeded_epoch"], 3)
    if row.get("cpu_seconds") is not None and summary["pod_events"]:
        row["cpu_seconds_per_1000_pod_events"] = round(1000 * row["cpu_seconds"] / summary["pod_events"], 3)
    return row


async def _clean(kube: Any, namespace: str, timeout: float = 300.0) -> None:
    """Leave nothing that works on into the next method's round.

    The controllers go first, without cascading (they would re-create pods). Then every pod is
    force-deleted and awaited, before anything that owns them (an engine's record): deleting an owner
    with its dependents still there sets the garbage collector patching each of them. Last the
    namespace, awaited until it is gone, as the namespace controller's sweep would overlap the next round.
    """
    for path in (f"/apis/apps/v1/namespaces/{namespace}/daemonsets", f"/apis/batch/v1/namespaces/{namespace}/jobs"):
        items, _ = await kube.list_all(path)
        for item in items:
            await kube.delete(f"{path}/{item['metadata']['name']}", propagation="Orphan")
    pods = f"/api/v1/namespaces/{namespace}/pods"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        items, _ = await kube.list_all(pods)
        if not items:
            break
        await kube.request("DELETE", pods, body={"kind": "DeleteOptions", "apiVersion": "v1",
                                                 "gracePeriodSeconds": 0})
        await asyncio.sleep(1.0)
    await kube.delete(f"/api/v1/namespaces/{namespace}")
    while time.monotonic() < deadline:
        try:
            await kube.get(f"/api/v1/namespaces/{namespace}")
        except NotFound:
            return
        await asyncio.sleep(0.5)
    print(f"warning: namespace {namespace} was still being deleted after {timeout:.0f} s", flush=True)


def compare(kubeconfig: str, sizes: list[int], rounds: int, methods: tuple[str, ...] = METHODS,
            complete_rounds: int = 1, timeout: float = 1800.0,
            plane_pids: Mapping[str, int] | None = None) -> dict[str, Any]:
    """All methods at each size, `rounds` interleaved rounds to all Running, then `complete_rounds` rounds
    of the completing methods with pods that succeed at once (to all Succeeded). With `plane_pids` (name →
    PID of each plane process), every row also carries what it cost the plane."""
    core = core_api(kubeconfig)
    runs: list[dict[str, Any]] = []
    pools: dict[int, float] = {}
    for size in sizes:
        label = uuid.uuid4().hex[:6]
        plan = [(r, m, False) for r in range(rounds) for m in _round_order(methods, r)]
        plan += [(rounds + r, m, True) for r in range(complete_rounds) for m in _round_order(
            tuple(m for m in methods if m in COMPLETING), r)]
        with node_pool(kubeconfig, size, label) as (nodes, pools[size]):
            for round_no, method, complete in plan:
                namespace = new_namespace(core, f"bench-{method.split('-')[0]}")
                task = Task(method, kubeconfig, namespace, label, tuple(nodes), complete)
                row = asyncio.run(run_method(task, timeout, plane_pids))
                row["round"] = round_no
                print(_progress(row), flush=True)
                runs.append(row)
    return {"sizes": sizes, "rounds": rounds, "complete_rounds": complete_rounds,
            "node_setup_seconds": pools, "runs": runs, "table": ratio_table(runs)}


def _round_order(methods: tuple[str, ...], round_no: int) -> tuple[str, ...]:
    """The order of a round: a pair of rounds runs one order forwards, then backwards, so that a drift in the
    plane's cost over a pair falls on every method alike; the next pair starts one method further on."""
    k = (round_no // 2) % len(methods)
    order = methods[k:] + methods[:k]
    return order[::-1] if round_no % 2 else order


def _progress(row: dict[str, Any]) -> str:
    fields = ("to_all_added_seconds", "to_all_running_seconds", "to_all_succeeded_seconds", "pods_running",
              "cpu_seconds", "plane_cpu_seconds", "plane_requests", "error")
    shown = ", ".join(f"{f}={row[f]}" for f in fields if row.get(f) is not None)
    return f"[{row['nodes']} nodes, round {row['round']}] {row['method']}: {shown}"


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.median(values), 2) if values else None


def ratio_table(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per size and method: median time to all Running (and Succeeded), and its ratios to the raw storm of
    the same pinning mode and to the DaemonSet, from the medians of the same run."""
    table: list[dict[str, Any]] = []
    for size in sorted({r["nodes"] for r in runs}):
        held = [r for r in runs if r["nodes"] == size and not r["complete"]]
        completed = [r for r in runs if r["nodes"] == size and r["complete"]]
        known = (*METHODS, *DIAGNOSTIC)
        medians = {m: _median([r for r in held if r["method"] == m], "to_all_running_seconds") for m in known}
        done = {m: _median([r for r in completed if r["method"] == m], "to_all_succeeded_seconds") for m in known}
        for method in known:
            mine = [r for r in held if r["method"] == method]
            if not mine:
                continue
            raw = RAW_OF.get(PINNING[method], "raw-affinity")
            table.append({
                "nodes": size, "method": method, "pinning": PINNING[method], "runs": len(mine),
                "to_all_running_seconds": medians[method],
                "all_running_values": [r.get("to_all_running_seconds") for r in mine],
                "vs_raw_same_pinning": _ratio(medians[method], medians.get(raw)), "raw_compared": raw,
                "vs_daemonset": _ratio(medians[method], medians.get("daemonset")),
                "daemonset_vs_this": _ratio(medians.get("daemonset"), medians[method]),
                "to_all_succeeded_seconds": done.get(method),
                "succeeded_vs_raw": _ratio(done.get(method), done.get(raw)),
                "pods_accounted": min(r["pods_running"] for r in mine),
                "cpu_seconds": _median(mine, "cpu_seconds"),
                "cpu_seconds_per_1000_pod_events": _median(mine, "cpu_seconds_per_1000_pod_events"),
                "api_requests": _median(mine, "api_requests"), "peak_rss_mib": _median(mine, "peak_rss_mib"),
                "plane_cpu_seconds": _median(mine, "plane_cpu_seconds"),
                "plane_requests": _median(mine, "plane_requests"),
                "last_done_to_event_seconds": _median(
                    [r for r in completed if r["method"] == method], "last_done_to_event_seconds"),
                "errors": [r["error"] for r in mine if r.get("error")],
            })
    return table


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None
