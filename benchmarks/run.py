"""Benchmarks on the local control plane: `python -m benchmarks.run bcj|tfjob|many [options]`.

Each benchmark prints and saves figures (wall time, throughput, event-loop lag, API
requests); none of them asserts a time. Results go to benchmarks/results/<name>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
import uuid
from typing import Any

from kubernetes import client, config

from devcluster.airflow_env import AirflowEnv
from devcluster.control_plane import REPO_ROOT, ControlPlane
from devcluster.fake_nodes import FakeNode, create_nodes

RESULTS = REPO_ROOT / "benchmarks" / "results"
SIM = "sim.airflow-broadcast.io"
LAG_LINE = re.compile(r"event loop lag while reconciling: (\{.*?\}) \((\d+) API requests\)")


def _cluster() -> tuple[str, client.CoreV1Api]:
    info = ControlPlane().start()
    return info.kubeconfig, client.CoreV1Api(config.new_client_from_config(config_file=info.kubeconfig))


def _namespace(core: client.CoreV1Api, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": name}})
    return name


def _pool(kubeconfig: str, core: client.CoreV1Api, size: int, label: str) -> float:
    """Create `size` fake nodes labelled bench-pool=<label>; returns seconds until all are schedulable."""
    from tests.support.waits import wait_nodes_schedulable

    t0 = time.monotonic()
    names = create_nodes(kubeconfig, [FakeNode(name=f"b{label}-{i:05d}", labels={"bench-pool": label})
                                      for i in range(size)], workers=16)
    wait_nodes_schedulable(core, names, timeout=600)
    return time.monotonic() - t0


def _airflow(kubeconfig: str) -> AirflowEnv:
    env = AirflowEnv.create(REPO_ROOT / ".airflow-bench", REPO_ROOT / "benchmarks" / "dags", kubeconfig, fresh=False)
    env.env["AIRFLOW__AIRFLOW_BROADCAST__MEASURE_LOOP_LAG"] = "True"
    return env


def _lag(output: str) -> dict[str, Any]:
    found = LAG_LINE.findall(output)
    if not found:
        return {}
    lag, requests = found[-1]
    return {"loop_lag_seconds": json.loads(lag), "api_requests": int(requests)}


def bench_bcj(nodes: int) -> dict[str, Any]:
    kubeconfig, core = _cluster()
    label = uuid.uuid4().hex[:6]
    node_seconds = _pool(kubeconfig, core, nodes, label)
    namespace = _namespace(core, "bench-bcj")
    manifest = {
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": "bench"},
        "spec": {"template": {
            "metadata": {"annotations": {f"{SIM}/result": "Succeeded", f"{SIM}/after": "1s"}},
            "spec": {"nodeSelector": {"bench-pool": label}, "restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}]},
        }},
    }
    env = _airflow(kubeconfig)
    t0 = time.monotonic()
    result = env.dags_test("bench_broadcast_job", conf={"namespace": namespace, "manifest": manifest})
    wall = time.monotonic() - t0
    summary = result.xcoms.get("bcj") or {}
    job_seconds = _span(summary)
    return {
        "benchmark": "broadcast_job", "nodes": nodes, "node_setup_seconds": round(node_seconds, 1),
        "task_state": result.task_states.get("bcj"), "dags_test_wall_seconds": round(wall, 1),
        "job_seconds": job_seconds, "pods_per_second": round(nodes / job_seconds, 1) if job_seconds else None,
        "nodes_accounted": len(summary.get("nodes", {})), "succeeded": summary.get("succeeded"),
        **_lag(result.output),
    }


def bench_tfjob(workers: int, ps: int) -> dict[str, Any]:
    kubeconfig, core = _cluster()
    label = uuid.uuid4().hex[:6]
    _pool(kubeconfig, core, 10, label)
    namespace = _namespace(core, "bench-tf")

    def replica(count: int, annotations: dict[str, str], policy: str) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": policy, "template": {
            "metadata": {"annotations": annotations},
            "spec": {"nodeSelector": {"bench-pool": label},
                     "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.15.0"}]}}}

    done = {f"{SIM}/result": "Succeeded", f"{SIM}/after": "5s"}
    manifest = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "bench"},
                "spec": {"runPolicy": {"cleanPodPolicy": "None"}, "tfReplicaSpecs": {
                    "Chief": replica(1, done, "OnFailure"), "PS": replica(ps, {}, "Never"),
                    "Worker": replica(workers, done, "OnFailure")}}}
    env = _airflow(kubeconfig)
    t0 = time.monotonic()
    result = env.dags_test("bench_tf_job", conf={"namespace": namespace, "manifest": manifest})
    wall = time.monotonic() - t0
    summary = result.xcoms.get("tfjob") or {}
    pods = core.list_namespaced_pod(namespace).items
    services = core.list_namespaced_service(namespace).items
    return {
        "benchmark": "tf_job", "chief": 1, "ps": ps, "workers": workers, "task_state": result.task_states.get("tfjob"),
        "phase": summary.get("phase"), "dags_test_wall_seconds": round(wall, 1), "job_seconds": _span(summary),
        "pods": len(pods), "services": len(services), "replicaStatuses": summary.get("replicaStatuses"),
        **_lag(result.output),
    }


def bench_many(jobs: int, nodes_per_job: int) -> dict[str, Any]:
    """Many BroadcastJobs reconciled at once in one event loop with the shared client (one triggerer's load)."""
    from airflow_broadcast.cluster.job_submission import submit_job
    from airflow_broadcast.cluster.kinds.registry import driver_for
    from airflow_broadcast.cluster.reconcile_loop import run_reconcile_loop
    from airflow_broadcast.specs.broadcast_job import parse_broadcast_job, to_manifest
    from airflow_broadcast.triggers.loop_lag import LoopLag
    from tests.support.engine import kube_client

    kubeconfig, core = _cluster()
    label = uuid.uuid4().hex[:6]
    _pool(kubeconfig, core, nodes_per_job, label)
    namespace = _namespace(core, "bench-many")

    async def main() -> dict[str, Any]:
        kube = await kube_client(kubeconfig)
        lag = LoopLag()
        monitor = asyncio.get_running_loop().create_task(lag.run())
        driver = driver_for("BroadcastJob")

        async def one(i: int) -> str:
            done = {f"{SIM}/result": "Succeeded", f"{SIM}/after": "2s"}
            raw = {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": f"job-{i:04d}"},
                   "spec": {"template": {"metadata": {"annotations": done},
                                         "spec": {"nodeSelector": {"bench-pool": label}, "restartPolicy": "Never",
                                                  "containers": [{"name": "c", "image": "busybox"}]}}}}
            spec = parse_broadcast_job(raw, namespace=namespace)
            record, _ = await submit_job(kube, driver.kind, spec.name, namespace, to_manifest(spec), submitter="bench",
                                         reattach=True)
            outcome = await run_reconcile_loop(kube, driver, namespace, record.name, record.uid, resync=30.0)
            return outcome.reason

        t0 = time.monotonic()
        reasons = await asyncio.gather(*(one(i) for i in range(jobs)))
        seconds = time.monotonic() - t0
        monitor.cancel()
        await kube.close()
        return {"benchmark": "many_jobs_one_loop", "jobs": jobs, "nodes_per_job": nodes_per_job,
                "pods": jobs * nodes_per_job, "finished": reasons.count("finished"), "seconds": round(seconds, 1),
                "loop_lag_seconds": lag.report(), "api_requests": kube.requests_sent}

    return asyncio.run(main())


def _span(summary: dict[str, Any]) -> float | None:
    from airflow_broadcast.specs.timestamps import from_rfc3339

    start, end = from_rfc3339(summary.get("startTime")), from_rfc3339(summary.get("completionTime"))
    return None if start is None or end is None else round(end - start, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run")
    sub = parser.add_subparsers(dest="name", required=True)
    bcj = sub.add_parser("bcj")
    bcj.add_argument("--nodes", type=int, default=1000)
    tf = sub.add_parser("tfjob")
    tf.add_argument("--workers", type=int, default=200)
    tf.add_argument("--ps", type=int, default=4)
    many = sub.add_parser("many")
    many.add_argument("--jobs", type=int, default=100)
    many.add_argument("--nodes-per-job", type=int, default=10)
    args = parser.parse_args(argv)
    if args.name == "bcj":
        result = bench_bcj(args.nodes)
    elif args.name == "tfjob":
        result = bench_tfjob(args.workers, args.ps)
    else:
        result = bench_many(args.jobs, args.nodes_per_job)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{result['benchmark']}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
