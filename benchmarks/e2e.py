"""The large single jobs: a TFJob (1 chief, P PS, W workers) in the engine's own process, and a BroadcastJob
through `airflow dags test` for the end-to-end figure (last pod done to the command's exit)."""

from __future__ import annotations

import asyncio
import json
import queue
import time
import uuid
from typing import Any

from benchmarks.common import REPO_ROOT, SIM, core_api, new_namespace, node_pool, raw_client
from benchmarks.methods import Task, broadcast_manifest, rss_mib, spawn
from benchmarks.podclock import PodClock
from devcluster.airflow_env import AirflowEnv

CHIEF_SECONDS = 90
"""How long the chief runs: the job succeeds with its chief, so the chief outlives the creation of every replica
(a pass creates at most 256 pods, and the 1+4+1,000 job took about 15 s to create); with a chief that succeeded
5 s after it started, the job succeeded with 768 of its 1,005 pods created."""


def tf_manifest(label: str, ps: int, workers: int) -> dict[str, Any]:
    def replica(count: int, annotations: dict[str, str], policy: str) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": policy, "template": {
            "metadata": {"annotations": annotations},
            "spec": {"nodeSelector": {"bench-pool": label},
                     "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.15.0"}]}}}

    done = {f"{SIM}/result": "Succeeded", f"{SIM}/after": "5s"}
    chief_done = {f"{SIM}/result": "Succeeded", f"{SIM}/after": f"{CHIEF_SECONDS}s"}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "bench"},
            "spec": {"runPolicy": {"cleanPodPolicy": "None"}, "tfReplicaSpecs": {
                "Chief": replica(1, chief_done, "OnFailure"), "PS": replica(ps, {}, "Never"),
                "Worker": replica(workers, done, "OnFailure")}}}


async def _tf_engine(task: Task, manifest: dict[str, Any]) -> dict[str, Any]:
    from airflow_broadcast.cluster.job_submission import submit_job
    from airflow_broadcast.cluster.kinds.registry import driver_for, options_for
    from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
    from airflow_broadcast.specs.tf_job import parse_tf_job
    from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger, JobTriggerArgs
    from benchmarks.methods import _close_engine

    kube = await BroadcastKubernetesHook().kube_client()
    rss_before, cpu0, t0 = rss_mib(), time.process_time(), time.monotonic()
    spec = parse_tf_job(manifest, namespace=task.namespace)
    record, _ = await submit_job(kube, driver_for("TFJob").kind, spec.name, task.namespace, manifest,
                                 submitter="benchmarks", reattach=True)
    args = JobTriggerArgs(kind="TFJob", namespace=task.namespace, record_name=record.name, uid=record.uid,
                          options=options_for("TFJob"))
    event: dict[str, Any] = {}
    async for fired in JobReconcileTrigger(args).run():
        event = dict(fired.payload)
        break
    result = {"event": event, "job_seconds": round(time.monotonic() - t0, 1),
              "engine_cpu_seconds": round(time.process_time() - cpu0, 2), "engine_rss_before_mib": rss_before,
              "api_requests": kube.requests_sent}
    await _close_engine()
    return result


def _tf_child(task: Task, manifest: dict[str, Any], stop: Any, results: Any) -> None:
    import resource

    from benchmarks.methods import _configure_engine

    _configure_engine(task)
    try:
        outcome = asyncio.run(_tf_engine(task, manifest))
        outcome["engine_peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    except Exception as exc:
        outcome = {"error": f"{type(exc).__name__}: {exc}"}
    results.put(outcome)


def bench_tfjob(kubeconfig: str, workers: int, ps: int, timeout: float = 3600.0) -> dict[str, Any]:
    core = core_api(kubeconfig)
    label = uuid.uuid4().hex[:6]
    nodes = max(4, (workers + ps + 1) // 200 + 1)
    namespace = new_namespace(core, "bench-tf")
    task = Task("engine-tfjob", kubeconfig, namespace, label, ())
    with node_pool(kubeconfig, nodes, label, pods_per_node=250):
        child, _, results = spawn(_tf_child, task, tf_manifest(label, ps, workers))
        try:
            outcome = results.get(True, timeout)
        except queue.Empty:
            outcome = {"error": f"no result in {timeout} s"}
        child.join(30)
        outcome["condition"] = _last_condition(core, namespace, outcome.get("event", {}).get("record_name"))
        pods = core.list_namespaced_pod(namespace).items
        services = len(core.list_namespaced_service(namespace).items)
    core.delete_namespace(namespace)
    succeeded = sum(1 for pod in pods if pod.status.phase == "Succeeded")
    return {"benchmark": "tf_job", "chief": 1, "ps": ps, "workers": workers, "nodes": nodes,
            "chief_seconds": CHIEF_SECONDS, "pods": len(pods), "pods_succeeded": succeeded, "services": services,
            **outcome}


def _last_condition(core: Any, namespace: str, record: str | None) -> str | None:
    """The newest True condition of the job's status in its record (Succeeded, Failed, ...)."""
    if not record:
        return None
    try:
        status = json.loads(core.read_namespaced_config_map(record, namespace).data.get("status") or "{}")
    except Exception:
        return None
    true = [c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"]
    return true[-1] if true else None


async def _bcj_dags_test(kubeconfig: str, nodes: list[str], label: str, namespace: str) -> dict[str, Any]:
    env = AirflowEnv.create(REPO_ROOT / ".airflow-bench" / "dags-test", REPO_ROOT / "benchmarks" / "dags", kubeconfig)
    task = Task("engine-affinity", kubeconfig, namespace, label, tuple(nodes), complete=True)
    kube = await raw_client(kubeconfig)
    clock = PodClock(kube, namespace, len(nodes))
    await clock.start()
    t0 = time.monotonic()
    result = await asyncio.to_thread(env.dags_test, "bench_broadcast_job",
                                     {"namespace": namespace, "manifest": broadcast_manifest(task)})
    ended, wall = time.time(), time.monotonic() - t0
    await clock.stop()
    await kube.close()
    summary = result.xcoms.get("bcj") or {}
    timing = clock.summary()
    last = timing["last_succeeded_epoch"]
    return {"benchmark": "broadcast_job", "nodes": len(nodes), "task_state": result.task_states.get("bcj"),
            "dags_test_wall_seconds": round(wall, 1), **timing,
            "last_done_to_dags_test_exit_seconds": round(ended - last, 2) if last else None,
            "nodes_accounted": summary.get("succeeded", summary.get("desired"))}


def bench_bcj(kubeconfig: str, nodes: int) -> dict[str, Any]:
    core = core_api(kubeconfig)
    label = uuid.uuid4().hex[:6]
    namespace = new_namespace(core, "bench-bcj")
    with node_pool(kubeconfig, nodes, label) as (names, setup):
        result = asyncio.run(_bcj_dags_test(kubeconfig, names, label, namespace))
    core.delete_namespace(namespace)
    return {**result, "node_setup_seconds": round(setup, 1)}
