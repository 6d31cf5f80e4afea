"""Run one small job with the real engine through the fault proxy, and reduce it to its result.

Shared by the fault tests and `python -m benchmarks.faults`: the engine talks to the
proxy's kubeconfig; results are read straight from the cluster, past the proxy.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from airflow_broadcast.cluster.kinds.registry import driver_for
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.reconcile_loop import run_reconcile_loop
from devcluster.fault_proxy import FaultProxy
from devcluster.fault_rules import FaultRule
from tests.support.engine import Engine
from tests.support.waits import wait_until

SIM = "sim.airflow-broadcast.io"
BCJ = "BroadcastJob"
TF = "TFJob"
TF_JOB_LABEL = "training.kubeflow.org/job-name"
FINAL = ("Succeeded", "Failed")


def bcj_manifest(name: str, pool: str, after: str = "2s") -> dict[str, Any]:
    """A BroadcastJob on the `pool=<pool>` nodes whose pods run `after`, then succeed."""
    return {"apiVersion": "apps.kruise.io/v1beta1", "kind": BCJ, "metadata": {"name": name}, "spec": {"template": {
        "metadata": {"annotations": {f"{SIM}/result": "Succeeded", f"{SIM}/after": after}},
        "spec": {"nodeSelector": {"pool": pool}, "restartPolicy": "Never",
                 "containers": [{"name": "c", "image": "busybox"}]}}}}


def tf_manifest(name: str, pool: str, after: str = "2s") -> dict[str, Any]:
    """A TFJob with one chief and two workers on the `pool=<pool>` nodes that run `after`, then succeed.

    Pinned to the test's own nodes: other tests delete theirs, and a pod on a deleted node never finishes.
    """
    def replica(count: int) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": "Never", "template": {
            "metadata": {"annotations": {f"{SIM}/result": "Succeeded", f"{SIM}/after": after}},
            "spec": {"nodeSelector": {"pool": pool},
                     "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.15.0"}]}}}

    return {"apiVersion": "kubeflow.org/v1", "kind": TF, "metadata": {"name": name},
            "spec": {"runPolicy": {"cleanPodPolicy": "None"},
                     "tfReplicaSpecs": {"Chief": replica(1), "Worker": replica(2)}}}


EXPECTED: dict[str, dict[str, Any]] = {
    BCJ: {"phase": "completed", "active": 0, "succeeded": 3, "failed": 0, "desired": 3, "pods_per_node": [1, 1, 1],
          "pod_phases": ["Succeeded"] * 3},
    TF: {"succeeded": "True", "failed": None, "chief": {"succeeded": 1},
         "pods": [("chief-0", "Succeeded"), ("worker-0", "Succeeded"), ("worker-1", "Succeeded")]},
}


def manifest_for(kind: str, pool: str, name: str = "faulty") -> dict[str, Any]:
    """The job every fault case runs: a BroadcastJob on the 3 `pool` nodes, or a 1 chief + 2 workers TFJob."""
    return bcj_manifest(name, pool) if kind == BCJ else tf_manifest(name, pool)


def job_result(core: client.CoreV1Api, namespace: str, kind: str, name: str, status: dict[str, Any]) -> dict[str, Any]:
    """What a job produced, free of names, times and uids: equal for equal outcomes."""
    if kind == BCJ:
        pods = core.list_namespaced_pod(namespace, label_selector=f"broadcastjob-name={name}").items
        per_node = Counter(p.spec.node_name for p in pods)
        return {"phase": status.get("phase"), "active": status.get("active"), "succeeded": status.get("succeeded"),
                "failed": status.get("failed"), "desired": status.get("desired"),
                "pods_per_node": sorted(per_node.values()), "pod_phases": sorted(p.status.phase for p in pods)}
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
    selector = f"{TF_JOB_LABEL}={name}"
    wait_until(lambda: all(p.status.phase in FINAL for p in core.list_namespaced_pod(namespace, label_selector=selector)
                           .items), timeout=30, what="every replica pod finished")
    pods = core.list_namespaced_pod(namespace, label_selector=selector).items
    # The chief decides the job (upstream's default success policy); workers may still run when it does.
    return {"succeeded": conditions.get("Succeeded"), "failed": conditions.get("Failed"),
            "chief": (status.get("replicaStatuses") or {}).get("Chief"),
            "pods": sorted((p.metadata.name.removeprefix(f"{name}-"), p.status.phase) for p in pods)}


@dataclass
class JobRun:
    """One job driven to its end, and what the proxy did meanwhile."""

    kind: str
    outcome: str
    seconds: float
    result: dict[str, Any]
    injected: dict[str, int] = field(default_factory=dict)
    retry_gaps: list[tuple[int, float]] = field(default_factory=list)
    requests: int = 0


def run_job(core: client.CoreV1Api, namespace: str, proxy: FaultProxy, manifest: dict[str, Any],
            timeout: float = 120.0) -> JobRun:
    """Submit and drive `manifest` through the proxy until the loop returns; read the result past the proxy."""
    kind, name = manifest["kind"], manifest["metadata"]["name"]
    engine = Engine(str(proxy.kubeconfig), namespace, core)
    started = time.monotonic()
    try:
        outcome = engine.drive(engine.submit(manifest), kind, timeout=timeout)
    except TimeoutError:
        raise AssertionError(f"{kind} {name} not done in {timeout} s; {_diagnosis(core, namespace, kind, name, proxy)}"
                             ) from None
    seconds = time.monotonic() - started
    status = engine.status(kind, name)
    return JobRun(kind, outcome.reason, round(seconds, 2), job_result(core, namespace, kind, name, status),
                  dict(proxy.log.injected()), proxy.log.retry_gaps(), len(proxy.log.snapshot()))


@dataclass
class Disrupted:
    """A job driven through a disruption: its outcome, when the trouble was, and when the job finished."""

    outcome: str
    result: dict[str, Any]
    begin: float
    end: float
    finished: float
    client_requests: int

    @property
    def recovery_seconds(self) -> float:
        """From the end of the trouble to the end of the job (0 when the job finished first)."""
        return round(max(0.0, self.finished - self.end), 1)

    @property
    def seconds(self) -> float:
        return round(self.end - self.begin, 1)


def run_disrupted(core: client.CoreV1Api, namespace: str, kubeconfig: str, manifest: dict[str, Any],
                  disrupt: Callable[[], object], *, once_pods_exist: bool = True,
                  timeout: float = 180.0) -> Disrupted:
    """Drive the job; once its pods exist (or at once), run the blocking `disrupt()`; then let the job finish."""
    kind, name = manifest["kind"], manifest["metadata"]["name"]
    engine = Engine(kubeconfig, namespace, core)
    submission = engine.submit(manifest)

    async def body(kube: KubeClient) -> Disrupted:
        loop = asyncio.create_task(run_reconcile_loop(kube, driver_for(kind), namespace, submission.name,
                                                      submission.uid, resync=5.0))
        if once_pods_exist:
            await _until(lambda: len(_pods(core, namespace, kind, name)) == 3, loop)
        sent, begin = kube.requests_sent, time.monotonic()
        await asyncio.to_thread(disrupt)
        end = time.monotonic()
        client_requests = kube.requests_sent - sent
        outcome = await asyncio.wait_for(loop, timeout)
        return Disrupted(outcome.reason, {}, begin, end, time.monotonic(), client_requests)

    run = engine.run_async(body)
    run.result = job_result(core, namespace, kind, name, engine.status(kind, name))
    return run


@dataclass
class OutageRun:
    """A job that lived through an outage, and the requests the proxy saw while the API was away."""

    job: Disrupted
    proxy_requests: int
    mean_rps: float
    peak_rps: int
    halves: tuple[int, int]
    paths: dict[str, int]


def run_through_outage(core: client.CoreV1Api, namespace: str, proxy: FaultProxy, manifest: dict[str, Any],
                       seconds: float, mode: str = "reset", *, rules: Sequence[FaultRule] = ()) -> OutageRun:
    """Drive the job through `seconds` of trouble, then let it finish.

    Without `rules` the whole API goes away (`mode`: reset or 503) once the job's pods exist;
    with `rules`, those faults apply from the start for `seconds` instead.
    """
    def disrupt() -> None:
        if rules:
            proxy.add_rules(*rules)
        else:
            proxy.begin_outage(mode)
        time.sleep(seconds)
        proxy.end_outage()
        proxy.clear_rules()

    run = run_disrupted(core, namespace, str(proxy.kubeconfig), manifest, disrupt, once_pods_exist=not rules)
    mean, peak = proxy.log.rate(run.begin, run.end)
    during = proxy.log.between(run.begin, run.end)
    middle = run.begin + (run.end - run.begin) / 2
    return OutageRun(run, len(during), round(mean, 2), peak,
                     (sum(r.at < middle for r in during), sum(r.at >= middle for r in during)),
                     dict(Counter(f"{'WATCH' if r.watch else r.method} {r.path}" for r in during)))


def _diagnosis(core: client.CoreV1Api, namespace: str, kind: str, name: str, proxy: FaultProxy) -> str:
    """What a stuck job looked like: its status, its pods, and the last requests through the proxy."""
    status = Engine(str(proxy.kubeconfig), namespace, core).status(kind, name)
    pods = [(p.metadata.name, p.spec.node_name, p.status.phase) for p in _pods(core, namespace, kind, name)]
    last = [(round(r.at, 1), r.method, r.path, r.watch, r.fault, r.status) for r in proxy.log.snapshot()[-15:]]
    return f"status {status}; pods {pods}; injected {dict(proxy.log.injected())}; last requests {last}"


def _pods(core: client.CoreV1Api, namespace: str, kind: str, name: str) -> list[Any]:
    selector = f"broadcastjob-name={name}" if kind == BCJ else f"{TF_JOB_LABEL}={name}"
    return list(core.list_namespaced_pod(namespace, label_selector=selector).items)


async def _until(predicate: Callable[[], bool], task: asyncio.Task[Any], timeout: float = 60.0) -> None:
    """Poll a blocking predicate off the loop until it holds (or the task ended early, which is a failure)."""
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(predicate):
        if task.done():
            raise AssertionError(f"the reconcile loop ended early: {task.result()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout} s")
        await asyncio.sleep(0.2)
