"""Detection in a real deployment: last pod done to task success, through scheduler, triggerer and executor.

A real stack (api-server, scheduler, dag-processor, triggerer; LocalExecutor) runs `bench_broadcast_job`
several times, one run after another, each a small BroadcastJob whose pods succeed at once. The pod
watch of this process stamps the last pod's Succeeded event; the task instance's end_date (from the
REST API) is when Airflow recorded success.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from datetime import datetime
from typing import Any

from benchmarks.common import REPO_ROOT, core_api, new_namespace, node_pool, raw_client
from benchmarks.methods import Task, broadcast_manifest
from benchmarks.podclock import PodClock
from devcluster.airflow_env import AirflowEnv
from devcluster.airflow_stack import AirflowStack, StackSettings

DAG = "bench_broadcast_job"
DAG_ENDS_IN_TRIGGERER = "bench_broadcast_job_ends_in_triggerer"


async def _one(stack: AirflowStack, kubeconfig: str, nodes: list[str], label: str, namespace: str,
               timeout: float, dag: str = DAG) -> dict[str, Any]:
    task = Task("engine-affinity", kubeconfig, namespace, label, tuple(nodes), complete=True)
    kube = await raw_client(kubeconfig)
    clock = PodClock(kube, namespace, len(nodes))
    await clock.start()
    run = await asyncio.to_thread(stack.api, "POST", f"/api/v2/dags/{dag}/dagRuns",
                                  {"logical_date": None, "conf": {"namespace": namespace,
                                                                  "manifest": broadcast_manifest(task)}})
    run_id = run["dag_run_id"]
    await clock.wait("succeeded", timeout)
    deadline = time.monotonic() + timeout
    ti: dict[str, Any] = {}
    while time.monotonic() < deadline:
        ti = await asyncio.to_thread(stack.api, "GET", f"/api/v2/dags/{dag}/dagRuns/{run_id}/taskInstances/bcj")
        if ti.get("state") in ("success", "failed", "upstream_failed"):
            break
        await asyncio.sleep(0.5)
    await clock.stop()
    await kube.close()
    last = clock.summary()["last_succeeded_epoch"]
    end = datetime.fromisoformat(ti["end_date"]).timestamp() if ti.get("end_date") else None
    return {"dag": dag, "run_id": run_id, "state": ti.get("state"), "pods_succeeded": len(clock.succeeded_at),
            "last_done_to_task_success_seconds": round(end - last, 3) if end and last else None}


def bench_detection(kubeconfig: str, runs: int = 5, nodes: int = 5, timeout: float = 300.0) -> dict[str, Any]:
    core = core_api(kubeconfig)
    label = uuid.uuid4().hex[:6]
    env = AirflowEnv.create(REPO_ROOT / ".airflow-bench" / "detection", REPO_ROOT / "benchmarks" / "dags", kubeconfig)
    rows: list[dict[str, Any]] = []
    with node_pool(kubeconfig, nodes, label) as (names, _), \
            AirflowStack(env, settings=StackSettings(parallelism=4)) as stack:
        for dag in (DAG, DAG_ENDS_IN_TRIGGERER):
            stack.wait_for_dag(dag)
            stack.api("PATCH", f"/api/v2/dags/{dag}", {"is_paused": False})
        for _ in range(runs):  # the two modes alternate, so both see the same conditions
            for dag in (DAG, DAG_ENDS_IN_TRIGGERER):
                namespace = new_namespace(core, "bench-detect")
                rows.append(asyncio.run(_one(stack, kubeconfig, names, label, namespace, timeout, dag)))
                print(f"[detection] {rows[-1]}", flush=True)
                core.delete_namespace(namespace)
    resumed = _summary([r for r in rows if r["dag"] == DAG])
    ended = _summary([r for r in rows if r["dag"] == DAG_ENDS_IN_TRIGGERER])
    return {"benchmark": "detection", "runs": runs, "nodes": nodes, "rows": rows,
            "task_states": sorted({str(r["state"]) for r in rows}), **resumed,
            **{f"{key}_finish_in_triggerer": value for key, value in ended.items()}}


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    values = sorted(r["last_done_to_task_success_seconds"] for r in rows
                    if r["last_done_to_task_success_seconds"] is not None)
    return {"last_done_to_task_success_p50_seconds": round(statistics.median(values), 3) if values else None,
            "last_done_to_task_success_max_seconds": values[-1] if values else None}
