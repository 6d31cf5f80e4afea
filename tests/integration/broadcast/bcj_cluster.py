"""Helpers for the BroadcastJob checklist integration tests (real API server, scheduler and kwok).

Every job selects only its test's nodes: nodes get the label `pool=<namespace>` and the
template's nodeSelector (or required affinity) asks for it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from support.engine import Engine, kube_client
from support.waits import wait_until

from airflow_broadcast.cluster.job_records import record_name
from airflow_broadcast.cluster.kinds.registry import driver_for
from airflow_broadcast.cluster.reconcile_loop import LoopOutcome, run_reconcile_loop
from airflow_broadcast.reconcilers.broadcast_job.pods import JOB_NAME_LABEL, JOB_UID_LABEL
from airflow_broadcast.reconcilers.observed import JobRecord

SIM = "sim.airflow-broadcast.io"
KIND = "BroadcastJob"
NODE_ANNOTATION = "airflow-broadcast.io/node"
ATTEMPT_ANNOTATION = "airflow-broadcast.io/attempt"
PAUSED_BY_POLICY = "airflow-broadcast.io/paused-by-failure-policy"
HOLD_FINALIZER = "tests.airflow-broadcast.io/hold"


def bcj(name: str, pool: str, *, result: str | None = "Succeeded", after: str | None = None,
        fail_nodes: list[str] | None = None, restarts: int | None = None, restart_policy: str = "Never",
        labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None,
        finalizers: list[str] | None = None, pod_spec: Mapping[str, Any] | None = None,
        node_selector: Mapping[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A BroadcastJob manifest whose pods run on the `pool=<pool>` nodes with a scripted kwok outcome.

    `result=None` makes pods run forever (unless `fail_nodes` names their node).
    """
    sim: dict[str, str] = {}
    if result is not None:
        sim[f"{SIM}/result"] = result
    if after is not None:
        sim[f"{SIM}/after"] = after
    if fail_nodes:
        sim[f"{SIM}/fail-nodes"] = ",".join(fail_nodes)
    if restarts is not None:
        sim[f"{SIM}/restarts"] = str(restarts)
    metadata: dict[str, Any] = {"annotations": {**sim, **(annotations or {})}}
    if labels:
        metadata["labels"] = dict(labels)
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    selector = {"pool": pool} if node_selector is None else dict(node_selector)
    body: dict[str, Any] = {"restartPolicy": restart_policy,
                            "containers": [{"name": "c", "image": "busybox"}], **(pod_spec or {})}
    if selector:
        body["nodeSelector"] = selector
    return {"apiVersion": "apps.kruise.io/v1beta1", "kind": KIND, "metadata": {"name": name},
            "spec": {"template": {"metadata": metadata, "spec": body}, **spec}}


def owned_pod(namespace: str, job: str, uid: str, node: str, name: str, *, labels: bool = True,
              owner: bool = True, result: str | None = "Succeeded") -> dict[str, Any]:
    """A pod as the engine would create it for `node` (or a variant without labels/ownerRef)."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace,
                                "annotations": {"airflow-broadcast.io/node": node}}
    if result:
        metadata["annotations"]["sim.airflow-broadcast.io/result"] = result
    if labels:
        metadata["labels"] = {JOB_NAME_LABEL: job, JOB_UID_LABEL: uid, "airflow-broadcast.io/job-uid": uid}
    if owner:
        metadata["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": record_name(KIND, job),
                                        "uid": uid, "controller": True, "blockOwnerDeletion": True}]
    pin = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"restartPolicy": "Never", "affinity": pin, "containers": [{"name": "c", "image": "busybox"}]}}


# ---- reading the cluster ----------------------------------------------------------------

def job_pods(engine: Engine, job: str) -> list[Any]:
    return engine.pods(f"broadcastjob-name={job}")


def pods_by_node(engine: Engine, job: str) -> dict[str, list[Any]]:
    """node → the job's pods pinned to it (by the node annotation the engine writes)."""
    result: dict[str, list[Any]] = {}
    for pod in job_pods(engine, job):
        result.setdefault(pod.metadata.annotations[NODE_ANNOTATION], []).append(pod)
    return result


def delete_pod_now(core_api: Any, name: str, namespace: str) -> None:
    """Delete a pod by hand with no grace period, so it is gone at once.

    A graceful delete leaves the pod for kwok to remove, and kwok deletes it by name twice with no
    UID precondition; when the job's replacement (same deterministic name) is created between the
    two, kwok's second delete removes the replacement as well and the node's attempt count rightly
    rises by two. A kubelet deletes with the UID, so this is the test harness's race, not the job's.
    """
    core_api.delete_namespaced_pod(name, namespace, grace_period_seconds=0)


def events(engine: Engine, job: str) -> list[tuple[str, str, str]]:
    """(type, reason, message) of every event on the job record, in creation order."""
    items = sorted(engine.events(KIND, job), key=lambda e: int(e.metadata.resource_version))
    return [(e.type, e.reason, e.message) for e in items]


def reasons(engine: Engine, job: str) -> list[str]:
    return [reason for _, reason, _ in events(engine, job)]


def wait_status(engine: Engine, job: str, predicate: Callable[[dict[str, Any]], Any], timeout: float = 60.0,
                what: str = "job status") -> dict[str, Any]:
    """Poll the record until its status satisfies `predicate`; return that status."""
    def check() -> dict[str, Any] | None:
        status = engine.status(KIND, job)
        return status if status and predicate(status) else None

    result: dict[str, Any] = wait_until(check, timeout=timeout, what=what)
    return result


def wait_pod_phase(engine: Engine, job: str, node: str, phase: str, timeout: float = 60.0) -> Any:
    def check() -> Any:
        pods = [p for p in pods_by_node(engine, job).get(node, []) if not p.metadata.deletion_timestamp]
        return pods[0] if len(pods) == 1 and pods[0].status.phase == phase else None

    return wait_until(check, timeout=timeout, what=f"pod of {job} on {node} {phase}")


def wait_events(engine: Engine, job: str, reason: str, count: int = 1, timeout: float = 60.0) -> list[str]:
    """Wait until `count` events with `reason` exist; return all their messages."""
    def check() -> list[str] | None:
        found = [m for _, r, m in events(engine, job) if r == reason]
        return found if len(found) >= count else None

    result: list[str] = wait_until(check, timeout=timeout, what=f"{count} {reason} event(s)")
    return result


def condition(status: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in status.get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


# ---- a reconcile loop in a thread that the test can stop ----------------------------------

class BackgroundLoop:
    """The real reconcile loop on its own event loop in a thread, as a triggerer would run it."""

    def __init__(self, engine: Engine, submission: JobRecord, options: Mapping[str, Any] | None = None,
                 resync: float = 5.0) -> None:
        self.engine = engine
        self.submission = submission
        self.options = dict(options or {})
        self.resync = resync
        self.outcome: LoopOutcome | None = None
        self.error: BaseException | None = None
        self.cancelled = False
        self._started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"loop {submission.name}")
        self._thread.start()
        self._started.wait(30)

    def _run(self) -> None:
        driver = driver_for(KIND, self.options)

        async def main() -> LoopOutcome:
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.current_task()
            self._started.set()
            kube = await kube_client(self.engine.kubeconfig)
            try:
                return await run_reconcile_loop(kube, driver, self.engine.namespace, self.submission.name,
                                                self.submission.uid, resync=self.resync)
            finally:
                await kube.close()

        try:
            self.outcome = asyncio.run(main())
        except asyncio.CancelledError:
            self.cancelled = True
        except BaseException as exc:
            self.error = exc
        finally:
            self._started.set()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def wait(self, timeout: float = 90.0) -> LoopOutcome:
        """Wait for the loop to return by itself (finished, settled, gone)."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"reconcile loop of {self.submission.name} still running after {timeout} s")
        if self.error is not None:
            raise self.error
        assert self.outcome is not None, "the loop was cancelled"
        return self.outcome

    def stop(self) -> None:
        """Cancel the loop (a triggerer stopping) and re-raise anything it failed with."""
        if self._thread.is_alive() and self._loop is not None and self._task is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(30)
        assert not self._thread.is_alive(), "the reconcile loop did not stop"
        if self.error is not None:
            raise self.error


def pause_until(epoch: float) -> None:
    """Sleep until a wall-clock instant (used to let an active deadline or a TTL pass)."""
    left = epoch - time.time()
    if left > 0:
        time.sleep(left)
