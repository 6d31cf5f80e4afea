"""The methods compared side by side, each run in a fresh child process that reports its own cost.

raw-affinity / raw-nodename: one async client creates one pod per node at once, pinned by required
node affinity (the scheduler binds) or by `nodeName` (no scheduler). daemonset: a DaemonSet over the
pool, run by the controller-manager. job: an Indexed batch Job with N completions and parallelism N,
unpinned (a nodeSelector on the pool; the scheduler places the pods). engine-*: the provider's
trigger (`JobReconcileTrigger.run`, the triggerer's code path and shared client) driving a
BroadcastJob record, pinned by affinity or by nodeName, at the default client limits or with them lifted.
"""

from __future__ import annotations

import asyncio
import cProfile
import json
import multiprocessing
import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import REPO_ROOT, SIM
from benchmarks.overhead_storms import SHAPED, STORMS, WATCHED, watched_storm

METHODS = ("raw-affinity", "raw-nodename", "daemonset", "job", "engine-affinity", "engine-nodename",
           "engine-affinity-lifted", "engine-nodename-lifted")
PINNING = {"raw-affinity": "affinity", "raw-nodename": "nodename", "daemonset": "affinity", "job": "unpinned",
           "engine-affinity": "affinity", "engine-nodename": "nodename",
           "engine-affinity-lifted": "affinity", "engine-nodename-lifted": "nodename"}
PINNING.update({WATCHED: "nodename", SHAPED: "nodename"})
DIAGNOSTIC = STORMS  # not in METHODS: run on request (`benchmarks.run overhead`), see overhead_storms
COMPLETING = ("raw-affinity", "raw-nodename", "job", "engine-affinity", "engine-nodename")


@dataclass(frozen=True)
class Task:
    """What one child process runs: a method over a pool, in a namespace."""

    method: str
    kubeconfig: str
    namespace: str
    label: str
    nodes: tuple[str, ...]
    complete: bool = False


def pod_spec(task: Task, restart: str = "Never") -> dict[str, Any]:
    """The pod every method creates: one small container; kwok runs it (and ends it when `complete`)."""
    annotations = {f"{SIM}/result": "Succeeded", f"{SIM}/after": "0s"} if task.complete else {}
    return {"metadata": {"labels": {"bench": task.method}, "annotations": annotations},
            "spec": {"restartPolicy": restart, "nodeSelector": {"bench-pool": task.label},
                     "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}]}}


def raw_pod(task: Task, index: int, node: str) -> dict[str, Any]:
    pod = pod_spec(task)
    pod["metadata"]["name"] = f"raw-{index:05d}"
    if task.method.startswith("raw-nodename"):
        pod["spec"]["nodeName"] = node
    else:
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term]}}}
    return pod


def _workload(task: Task) -> tuple[str, dict[str, Any]]:
    """The DaemonSet or Job manifest and the path it is created at."""
    meta = {"name": task.method}
    if task.method == "daemonset":
        template = pod_spec(task, restart="Always")
        template["metadata"]["labels"] = {"bench": "daemonset"}
        return (f"/apis/apps/v1/namespaces/{task.namespace}/daemonsets",
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta,
                 "spec": {"selector": {"matchLabels": {"bench": "daemonset"}}, "template": template}})
    n = len(task.nodes)
    return (f"/apis/batch/v1/namespaces/{task.namespace}/jobs",
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
             "spec": {"completions": n, "parallelism": n, "completionMode": "Indexed", "backoffLimit": n,
                      "template": pod_spec(task)}})


async def _raw(task: Task, kube: Any) -> dict[str, Any]:
    path = f"/api/v1/namespaces/{task.namespace}/pods"
    t0 = time.monotonic()
    await asyncio.gather(*(kube.create(path, raw_pod(task, i, node)) for i, node in enumerate(task.nodes)))
    return {"create_seconds": round(time.monotonic() - t0, 2)}


async def _controller(task: Task, kube: Any) -> dict[str, Any]:
    path, body = _workload(task)
    await kube.create(path, body)
    return {}


def _configure_engine(task: Task) -> None:
    """The child's Airflow settings: the connection to this cluster, and the lifted limit if asked."""
    home = REPO_ROOT / ".airflow-bench" / "engine"
    home.mkdir(parents=True, exist_ok=True)
    os.environ["AIRFLOW_HOME"] = str(home)
    os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"] = json.dumps(
        {"conn_type": "kubernetes", "extra": {"kube_config_path": task.kubeconfig}})
    if task.method.endswith("-lifted"):
        os.environ["AIRFLOW__AIRFLOW_BROADCAST__CLIENT_QPS"] = "0"


def broadcast_manifest(task: Task, name: str = "bench") -> dict[str, Any]:
    template = pod_spec(task)
    return {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": name},
            "spec": {"template": template}}


async def _engine(task: Task, stop: Any) -> dict[str, Any]:
    from airflow_broadcast.cluster.job_submission import submit_job
    from airflow_broadcast.cluster.kinds.registry import driver_for, options_for
    from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
    from airflow_broadcast.specs.broadcast_job import parse_broadcast_job, to_manifest
    from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger, JobTriggerArgs

    options = options_for("BroadcastJob", {"assign_by_scheduler": PINNING[task.method] == "affinity"})
    kube = await BroadcastKubernetesHook().kube_client()
    for profiler in _PROFILER:
        profiler.enable()
    cpu0 = time.process_time()
    spec = parse_broadcast_job(broadcast_manifest(task), namespace=task.namespace)
    driver = driver_for("BroadcastJob", options)
    record, _ = await submit_job(kube, driver.kind, spec.name, task.namespace, to_manifest(spec),
                                 submitter="benchmarks", reattach=True)
    trigger = JobReconcileTrigger(JobTriggerArgs(kind="BroadcastJob", namespace=task.namespace,
                                                 record_name=record.name, uid=record.uid, options=options))

    JobReconcileTrigger.resumed_after_event = True  # iterated on after its event, as Airflow's triggerer does

    async def first_event() -> dict[str, Any]:
        fired: dict[str, Any] = {}
        async for event in trigger.run():
            fired = fired or {"event": event.payload, "event_epoch": time.time()}
        return fired

    run = asyncio.get_running_loop().create_task(first_event())
    waits: list[asyncio.Future[Any]] = [run]
    if not task.complete:  # pods that never end: run until the parent has seen them all Running
        waits.append(asyncio.ensure_future(asyncio.to_thread(stop.wait, 3600)))
    await asyncio.wait(waits, timeout=3600, return_when=asyncio.FIRST_COMPLETED)
    cpu = time.process_time() - cpu0
    result: dict[str, Any] = run.result() if run.done() else {}
    if not run.done():
        run.cancel()
        await asyncio.sleep(1.0)  # let the events the loop posts in the background go out before closing
    await _close_engine()
    result.update(cpu_seconds=round(cpu, 3), api_requests=kube.requests_sent,
                  client_qps=kube.limiter.qps, client_burst=kube.limiter.burst)
    return result


async def _close_engine() -> None:
    from airflow_broadcast.cluster.informers import stop_informers
    from airflow_broadcast.cluster.shared_clients import close_clients_on_this_loop

    await stop_informers()
    await close_clients_on_this_loop()


def spawn(target: Any, *args: Any) -> tuple[Any, Any, Any]:
    """Start `target(*args, stop, results)` in a fresh interpreter; returns (process, stop event, result queue)."""
    ctx = multiprocessing.get_context("spawn")
    stop, results = ctx.Event(), ctx.Queue()
    child = ctx.Process(target=target, args=(*args, stop, results), daemon=True)
    child.start()
    return child, stop, results


def rss_mib() -> float:
    """This process's resident memory now (ru_maxrss is the peak)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def child_main(task: Task, stop: Any, results: Any) -> None:
    """Run one method until `stop` is set; put its cost (CPU, peak RSS, requests) on `results`."""
    try:
        if task.method.startswith("engine"):
            _configure_engine(task)
            outcome = _profiled(task, lambda: asyncio.run(_engine(task, stop)))
        else:
            outcome = asyncio.run(_plain(task, stop))
        outcome["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        results.put(outcome)
    except BaseException as exc:
        results.put({"error": f"{type(exc).__name__}: {exc}"})
        raise


_PROFILER: list[cProfile.Profile] = []  # the child's profiler, when it has one


def _profiled(task: Task, run: Any) -> Any:
    """`run()`, under cProfile when BENCH_PROFILE_DIR names a directory (a stats file per method and size).

    The engine turns the profiler on where its CPU clock starts, after imports and the client's set-up.

    Passes over many objects run in a worker thread, which cProfile does not see: set
    AIRFLOW__AIRFLOW_BROADCAST__THREAD_THRESHOLD high as well to keep them on the loop while profiling.
    """
    target = os.environ.get("BENCH_PROFILE_DIR")
    if not target:
        return run()
    profiler = cProfile.Profile()
    _PROFILER.append(profiler)
    try:
        return run()
    finally:
        profiler.disable()
        profiler.dump_stats(Path(target) / f"{task.method}-{len(task.nodes)}-complete{int(task.complete)}.prof")


async def _plain(task: Task, stop: Any) -> dict[str, Any]:
    from benchmarks.common import raw_client

    kube = await raw_client(task.kubeconfig)
    cpu0 = time.process_time()
    if task.method in STORMS:
        outcome = await watched_storm(task, kube, stop)
    else:
        outcome = await (_raw(task, kube) if task.method.startswith("raw") else _controller(task, kube))
        await asyncio.to_thread(stop.wait, 3600)
    outcome.update(cpu_seconds=round(time.process_time() - cpu0, 3), api_requests=kube.requests_sent)
    await kube.close()
    return outcome
