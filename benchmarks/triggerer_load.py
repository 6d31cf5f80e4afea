"""Many idle BroadcastJobs in ONE real `airflow triggerer` process: loop lag, blocked warnings, RSS, requests.

A real stack (api-server, dag-processor, triggerer; no scheduler, so nothing else competes) parses DAGs
with one BroadcastJobOperator task per job, 50 per DAG. A run of each is created through the REST API; the benchmark
writes each job's record (as the operator does before it defers) and defers the task instances onto the
provider's JobReconcileTrigger (`benchmarks/defer_rows.py`, as the execution API does). Each job
covers one node and its pod stays Running, so once every pod runs the jobs are idle. At each job count
the benchmark measures over a window: the loop lag sampled by a probe trigger inside the same loop, the
"Triggerer's async thread was blocked" warnings in the triggerer's log, the RSS of the triggerer's
processes, and the provider's API requests per second.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.common import REPO_ROOT, core_api, new_namespace, node_pool, percentile, raw_client
from benchmarks.cpu_timeline import CpuTimeline
from benchmarks.methods import Task, broadcast_manifest
from benchmarks.stall_causes import gc_summary
from devcluster.airflow_env import AirflowEnv
from devcluster.airflow_stack import AirflowStack, StackSettings

HOME = REPO_ROOT / ".airflow-bench" / "triggerer"
PER_DAG = 50  # jobs per DAG (idle_dags/bench_idle.py says why the jobs are spread over DAGs)
PROBE_DAG = "bench_idle_probe"
ARRIVAL_CHUNK, ARRIVAL_PAUSE = 50, 1.0  # jobs defer 50 at a time, a second apart, as DAG runs start over time
BLOCKED = "async thread was blocked"


def group_rss_kib(pgid: int) -> int:
    """Resident memory of every process in the triggerer's process group (supervisor and trigger runner)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE") // 1024
        except (OSError, IndexError, ValueError):
            continue
    return total


async def _submit(kubeconfig: str, namespace: str, label: str, names: list[str]) -> list[dict[str, str]]:
    """Write the jobs' records, as BroadcastJobOperator.execute does before it defers."""
    from airflow_broadcast.cluster.job_submission import submit_job
    from airflow_broadcast.cluster.kinds.registry import driver_for
    from airflow_broadcast.specs.broadcast_job import parse_broadcast_job, to_manifest

    kube = await raw_client(kubeconfig)
    kind = driver_for("BroadcastJob").kind
    task = Task("engine-affinity", kubeconfig, namespace, label, ())
    sem = asyncio.Semaphore(20)

    async def one(name: str) -> dict[str, str]:
        spec = parse_broadcast_job(broadcast_manifest(task, name.replace("_", "-")), namespace=namespace)
        async with sem:
            record, _ = await submit_job(kube, kind, spec.name, namespace, to_manifest(spec), submitter="benchmarks",
                                         reattach=True)
        return {"task_id": name, "record_name": record.name, "uid": record.uid}

    try:
        return list(await asyncio.gather(*(one(n) for n in names)))
    finally:
        await kube.close()


def _dag_of(job: int) -> str:
    return f"bench_idle_{job // PER_DAG:03d}"


def _running_pods(core: Any, namespace: str) -> int:
    """Pods Running in the namespace: the server filters and the raw JSON is counted, because the benchmark runs
    beside the triggerer while the jobs arrive, and building 1,000 client models every 2 s cost it a CPU-second
    in ten (the CPU timeline's `benchmark`)."""
    response = core.list_namespaced_pod(namespace, field_selector="status.phase=Running", _preload_content=False)
    return len(json.loads(response.data)["items"])


class Load:
    """The stack, the DAG run and the probe's file for one benchmark run."""

    def __init__(self, stack: AirflowStack, kubeconfig: str, namespace: str, label: str, floor: bool) -> None:
        self.stack, self.kubeconfig, self.namespace, self.label = stack, kubeconfig, namespace, label
        self.floor = floor  # the jobs are Airflow's DateTimeTriggers
        self.core = core_api(kubeconfig)
        self.probe = stack.airflow_env.home / "probe.jsonl"
        self.stop_file = stack.airflow_env.home / "probe.stop"
        self.runs: dict[str, str] = {}  # DAG id → its run's id
        self.jobs = 0

    def run(self, counts: list[int], window: float, settle: float) -> list[dict[str, Any]]:
        """Defer the probe, measure with no jobs, then at each count once the jobs have arrived and settled."""
        self.begin(max(counts))
        time.sleep(settle)
        steps = [self.measure(window)]
        print(f"[triggerer] {steps[-1]}", flush=True)
        for count in counts:
            if self.floor:
                self.grow_floor(count)
                time.sleep(settle)
                steps.append(self.measure(window))
            else:
                grow_seconds = self.grow(count, timeout=max(600.0, count * 2.0))
                time.sleep(settle)
                steps.append({**self.measure(window), "seconds_to_all_running": round(grow_seconds, 1)})
            print(f"[triggerer] {steps[-1]}", flush=True)
        return steps

    def begin(self, jobs: int) -> None:
        """Wait until every DAG is parsed, start one run of each, and defer the probe."""
        for dag_id in (PROBE_DAG, *dict.fromkeys(_dag_of(i) for i in range(jobs))):
            self.stack.wait_for_dag(dag_id, timeout=600)
            self.runs[dag_id] = self.stack.api("POST", f"/api/v2/dags/{dag_id}/dagRuns",
                                               {"logical_date": None})["dag_run_id"]
        self._defer([], probe=True)

    def _defer(self, jobs: list[dict[str, str]], probe: bool = False, floor: bool = False) -> None:
        spec = {"runs": self.runs, "namespace": self.namespace, "jobs": jobs, "floor": floor,
                "chunk": ARRIVAL_CHUNK, "pause": ARRIVAL_PAUSE,
                "probe": {"dag_id": PROBE_DAG, "task_id": "lag_probe", "path": str(self.probe),
                          "stop_path": str(self.stop_file)} if probe else None}
        path = self.stack.airflow_env.home / "defer.json"
        path.write_text(json.dumps(spec))
        subprocess.run([sys.executable, "-m", "benchmarks.defer_rows", str(path)], env=self.stack.env,
                       cwd=REPO_ROOT, check=True, capture_output=True, timeout=900)

    def grow(self, count: int, timeout: float) -> float:
        """Add jobs up to `count`, wait until every job's pod runs; returns the seconds it took."""
        t0 = time.monotonic()
        names = [f"job_{i:05d}" for i in range(self.jobs, count)]
        jobs = [{**job, "dag_id": _dag_of(i)} for i, job in enumerate(
            asyncio.run(_submit(self.kubeconfig, self.namespace, self.label, names)), start=self.jobs)]
        self._defer(jobs)
        self.jobs = count
        deadline = time.monotonic() + timeout
        while _running_pods(self.core, self.namespace) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{count} jobs: only {_running_pods(self.core, self.namespace)} pods Running")
            time.sleep(2)
        return time.monotonic() - t0

    def grow_floor(self, count: int) -> None:
        """Add Airflow DateTimeTriggers up to `count`: nothing to create in the cluster, nothing to wait for."""
        self._defer([{"task_id": f"job_{i:05d}", "dag_id": _dag_of(i)} for i in range(self.jobs, count)], floor=True)
        self.jobs = count

    def measure(self, window: float) -> dict[str, Any]:
        triggerer = next(c for c in self.stack.processes if c.name == "triggerer")
        blocked0 = triggerer.log.read_text(errors="replace").count(BLOCKED)
        rss0, t0 = group_rss_kib(triggerer.pid), time.time()
        time.sleep(window)
        rss1, t1 = group_rss_kib(triggerer.pid), time.time()
        for variable, step in (("BENCH_TRACEMALLOC_DIR", f"jobs-{self.jobs:05d}"),
                               ("BENCH_GC_CENSUS_DIR", f"{'floor' if self.floor else 'provider'}-{self.jobs:05d}")):
            if os.environ.get(variable):
                _request_snapshot(Path(os.environ[variable]), step)
        lines = [json.loads(x) for x in self.probe.read_text().splitlines()] if self.probe.exists() else []
        inside = [x for x in lines if t0 <= x["t"] <= t1]
        lag = [s for x in inside for s in x["lag"]]
        requests = (inside[-1]["requests"] - inside[0]["requests"]) if len(inside) > 1 else None
        routes = _route_counts(inside[0], inside[-1]) if len(inside) > 1 else {}
        span = (inside[-1]["t"] - inside[0]["t"]) if len(inside) > 1 else None
        return {
            "jobs": self.jobs, "window_seconds": round(t1 - t0, 1), "lag_samples": len(lag),
            "loop_lag_p50_ms": _ms(percentile(lag, 0.5)), "loop_lag_p99_ms": _ms(percentile(lag, 0.99)),
            "loop_lag_max_ms": _ms(max(lag, default=None)),
            "blocked_warnings_in_window": triggerer.log.read_text(errors="replace").count(BLOCKED) - blocked0,
            "triggerer_rss_mib": round((rss0 + rss1) / 2 / 1024, 1),
            "runner_rss_mib": round(inside[-1]["runner_rss_kib"] / 1024, 1) if inside else None,
            "provider_requests_per_second": round(requests / span, 3) if requests is not None and span else None,
            "provider_requests_in_window": routes,
        }


def _route_counts(first: dict[str, Any], last: dict[str, Any]) -> dict[str, int]:
    """The requests sent between two probe lines, by route (`LIST pods`, `WATCH configmaps`, ...)."""
    before, after = first.get("routes") or {}, last.get("routes") or {}
    counts = {route: n - before.get(route, 0) for route, n in after.items()}
    return {route: n for route, n in sorted(counts.items()) if n}


def _request_snapshot(folder: Path, step: str) -> None:
    """Ask the probe for an allocation snapshot and wait (bounded) until it is written."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{step}.request").touch()
    deadline = time.monotonic() + 300
    while (folder / f"{step}.request").exists() and time.monotonic() < deadline:
        time.sleep(1)


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 1)


def bench_triggerer(kubeconfig: str, counts: list[int], window: float = 60.0,
                    settle: float = 15.0, floor: bool = True) -> dict[str, Any]:
    """Idle jobs in one triggerer at each of `counts` (growing), each step measured over `window` seconds.

    With `floor`, a second triggerer then runs the same counts of Airflow's own DateTimeTrigger: what
    Airflow itself spends per deferred task, so the provider's share can be told apart.
    """
    result = _bench(kubeconfig, counts, window, settle, floor=False)
    if floor:
        comparator = _bench(kubeconfig, counts, window, settle, floor=True)
        result["floor"] = {k: v for k, v in comparator.items() if k != "benchmark"}
    return result


def _bench(kubeconfig: str, counts: list[int], window: float, settle: float, floor: bool) -> dict[str, Any]:
    core = core_api(kubeconfig)
    label = uuid.uuid4().hex[:6]
    namespace = new_namespace(core, "bench-idle")
    env = AirflowEnv.create(HOME, REPO_ROOT / "benchmarks" / "idle_dags", kubeconfig)
    settings = StackSettings(triggerer_heartbeat_seconds=5, triggerer_health_check_threshold=60, extra_env={
        "BENCH_IDLE_TASKS": str(max(counts)), "BENCH_IDLE_PER_DAG": str(PER_DAG),
        "AIRFLOW__TRIGGERER__CAPACITY": str(max(counts) + 10),
        "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "600", "AIRFLOW__DAG_PROCESSOR__DAG_FILE_PROCESSOR_TIMEOUT": "600"})
    with node_pool(kubeconfig, 1, label, pods_per_node=max(counts) + 50) as (_, pool_seconds), \
            AirflowStack(env, components=("api-server", "dag-processor", "triggerer"), settings=settings) as stack:
        load = Load(stack, kubeconfig, namespace, label, floor)
        timeline = stack.airflow_env.home / "cpu.jsonl"
        groups = {process.pid: process.name for process in stack.processes}  # each runs in a session of its own
        with CpuTimeline(timeline, groups):
            steps = load.run(counts, window, settle)
        load.stop_file.touch()
        triggerer = next(c for c in stack.processes if c.name == "triggerer")
        blocked_total = triggerer.log.read_text(errors="replace").count(BLOCKED)
        kept = HOME.with_name(f"triggerer-{'floor' if floor else 'provider'}.log")  # the next run replaces HOME
        shutil.copyfile(triggerer.log, kept)
        for path, suffix in ((load.probe, ".probe.jsonl"), (timeline, ".cpu.jsonl")):
            if path.exists():
                shutil.copyfile(path, kept.with_suffix(suffix))
        collections = gc_summary(triggerer.log.read_text(errors="replace"), load.probe, timeline)
    core.delete_namespace(namespace)
    return {"benchmark": "triggerer_idle_jobs", "counts": counts, "pool_seconds": round(pool_seconds, 1),
            "steps": steps, "blocked_warnings_total": blocked_total, **collections, **_derived(steps)}


def _derived(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """RSS per idle job between the smallest and largest job counts measured, and the request-rate trend."""
    loaded = [s for s in steps if s["jobs"] > 0]
    if len(loaded) < 2:
        return {}
    low, high = loaded[0], loaded[-1]
    jobs = high["jobs"] - low["jobs"]
    per_job = (high["triggerer_rss_mib"] - low["triggerer_rss_mib"]) * 1024 / jobs
    runner = None
    if high.get("runner_rss_mib") is not None and low.get("runner_rss_mib") is not None:
        runner = round((high["runner_rss_mib"] - low["runner_rss_mib"]) * 1024 / jobs, 1)
    return {"rss_kib_per_idle_job": round(per_job, 1), "runner_rss_kib_per_idle_job": runner,
            "requests_per_second_by_jobs": {s["jobs"]: s["provider_requests_per_second"] for s in steps},
            "loop_lag_p99_ms_by_jobs": {s["jobs"]: s["loop_lag_p99_ms"] for s in steps}}
