"""Probe: N idle BroadcastJobs driven by their triggers in ONE asyncio process: memory per job and loop lag.

Run it ad hoc against a cluster (`KUBECONFIG=... python -m probes.idle_jobs 300` from tests/). Each job
covers one node of a one-node pool and its pod stays Running, so once every pod runs the jobs are idle.
It prints the traced memory per idle job, the biggest allocation sites, and the loop lag over a window
that spans a resync; it asserts nothing about time.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import tracemalloc
import uuid
from typing import Any

from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger, JobTriggerArgs
from airflow_broadcast.triggers.loop_lag import LoopLag
from benchmarks.common import core_api, new_namespace, node_pool
from benchmarks.triggerer_load import _submit

BATCH = 50
FRAMES = int(os.environ.get("PROBE_FRAMES", "4"))  # frames shown per allocation site


async def _drive(jobs: list[dict[str, str]], namespace: str, window: float) -> dict[str, Any]:
    from airflow_broadcast.cluster.kinds.registry import options_for

    options = options_for("BroadcastJob", None)
    lag = LoopLag()
    monitor = asyncio.get_running_loop().create_task(lag.run())
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, _dump_tasks)

    async def one(job: dict[str, str]) -> None:
        trigger = JobReconcileTrigger(JobTriggerArgs(kind="BroadcastJob", namespace=namespace,
                                                     record_name=job["record_name"], uid=job["uid"],
                                                     options=options))
        async for _ in trigger.run():
            return

    first = asyncio.get_running_loop().create_task(one(jobs[0]))
    await asyncio.sleep(10)  # informers synced, shared client built
    tracemalloc.start(10)
    base = tracemalloc.take_snapshot()
    t0 = time.monotonic()
    tasks: list[asyncio.Task[None]] = []
    for start in range(1, len(jobs), BATCH):  # as a triggerer starts them: at most 50 per second
        tasks += [asyncio.get_running_loop().create_task(one(j)) for j in jobs[start:start + BATCH]]
        await asyncio.sleep(1.0)
    startup = lag.report()
    while await asyncio.to_thread(_running, namespace) < len(jobs):  # noqa: ASYNC110 - the API has no event for it
        await asyncio.sleep(2)
    running_after = time.monotonic() - t0
    await asyncio.sleep(10)
    lag.samples.clear()
    lag.stalls.clear()
    requests0 = _requests()
    await asyncio.sleep(window)
    report = lag.report()
    requests = _requests() - requests0
    snap = tracemalloc.take_snapshot()
    stats = snap.compare_to(base, "traceback")
    per_job = sum(s.size_diff for s in stats) / max(1, len(tasks))
    top = [{"kib": round(s.size_diff / 1024, 1), "count": s.count_diff,
            "where": [f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno}" for f in s.traceback[-FRAMES:]]}
           for s in stats[:25]]
    for t in [first, *tasks]:
        t.cancel()
    await asyncio.gather(first, *tasks, return_exceptions=True)
    monitor.cancel()
    return {"jobs": len(jobs), "seconds_to_all_running": round(running_after, 1),
            "traced_kib_per_job": round(per_job / 1024, 1), "requests_per_second": round(requests / window, 2),
            "lag_while_starting": startup, "lag": report, "top": top}


def _dump_tasks() -> None:
    """SIGUSR1: where every task waits, grouped, to find a hang."""
    import collections

    where: collections.Counter[str] = collections.Counter()
    for task in asyncio.all_tasks():
        frames = task.get_stack(limit=12)
        where[" > ".join(f"{f.f_code.co_filename.rsplit('/', 1)[-1]}:{f.f_lineno}" for f in frames)] += 1
    for key, count in where.most_common(25):
        print(f"TASKS {count} {key}", flush=True)


def _running(namespace: str) -> int:
    core = core_api(os.environ["KUBECONFIG"])
    return sum(1 for p in core.list_namespaced_pod(namespace).items if p.status.phase == "Running")


def _requests() -> int:
    from airflow_broadcast.cluster.shared_clients import _clients

    return sum(c.requests_sent for clients in _clients.values() for c in clients.values())


SLOW: list[tuple[float, str]] = []
SAMPLES: dict[str, int] = {}
_began: list[float] = [0.0]


def _trace_slow_steps(threshold: float = 0.05) -> None:
    """Sample the loop thread's stack while one callback has run longer than `threshold`."""
    import collections
    import threading
    import traceback

    original = asyncio.events.Handle._run
    main = threading.get_ident()

    def timed(handle: Any) -> None:
        _began[0] = time.perf_counter()
        try:
            original(handle)
        finally:
            _began[0] = 0.0

    def sampler() -> None:
        counts: collections.Counter[str] = collections.Counter()
        while True:
            time.sleep(0.005)
            began = _began[0]
            if not began or time.perf_counter() - began < threshold:
                continue
            frame = sys._current_frames().get(main)
            if frame is None:
                continue
            stack = [f"{'/'.join(f.filename.split('/')[-2:])}:{f.lineno}:{f.name}"
                     for f in traceback.extract_stack(frame)]
            ours = [x for x in stack if "airflow_broadcast" in x or "cluster/" in x or "reconcilers/" in x
                    or "specs/" in x or "triggers/" in x]
            key = " > ".join((ours[-3:] if ours else []) + stack[-2:])
            counts[key] += 1
            SAMPLES.clear()
            SAMPLES.update(counts)

    asyncio.events.Handle._run = timed  # type: ignore[method-assign]
    threading.Thread(target=sampler, daemon=True).start()


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    window = float(sys.argv[2]) if len(sys.argv) > 2 else 40.0
    kubeconfig = os.environ["KUBECONFIG"]
    os.environ.setdefault("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(
        {"conn_type": "kubernetes", "extra": {"kube_config_path": kubeconfig}}))
    label = uuid.uuid4().hex[:6]
    if os.environ.get("PROBE_TRACE"):
        _trace_slow_steps()
    core = core_api(kubeconfig)
    namespace = new_namespace(core, "probe-idle")
    try:
        with node_pool(kubeconfig, 1, label, pods_per_node=count + 10):
            jobs = asyncio.run(_submit(kubeconfig, namespace, label, [f"job-{i:05d}" for i in range(count)]))
            result = asyncio.run(_drive(jobs, namespace, window))
    finally:
        core.delete_namespace(namespace)
    print(json.dumps(result, indent=1))
    for key, count in sorted(SAMPLES.items(), key=lambda kv: -kv[1])[:40]:
        print(count, key)


if __name__ == "__main__":
    main()
