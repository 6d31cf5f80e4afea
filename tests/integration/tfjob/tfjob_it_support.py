"""Manifests, cluster reads and watch recorders shared by the TFJob integration tests (engine, no Airflow)."""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kubernetes import client, watch

from airflow_broadcast.cluster.job_records import record_name
from airflow_broadcast.cluster.kinds.registry import driver_for
from airflow_broadcast.cluster.reconcile_loop import LoopOutcome, run_reconcile_loop

SIM = "sim.airflow-broadcast.io"
KIND = "TFJob"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
OPERATOR_LABEL = "training.kubeflow.org/operator-name"
TYPE_LABEL = "training.kubeflow.org/replica-type"
INDEX_LABEL = "training.kubeflow.org/replica-index"
ROLE_LABEL = "training.kubeflow.org/job-role"
EXPIRES_AT = "airflow-broadcast.io/expires-at"
RESULT_READ = "airflow-broadcast.io/result-read"


def replica(replicas: int | None = 1, policy: str | None = "Never", *, annotations: dict[str, str] | None = None,
            labels: dict[str, str] | None = None, containers: list[dict[str, Any]] | None = None,
            **pod_spec: Any) -> dict[str, Any]:
    """One replica spec; pods are not pinned (the fake and demo nodes are all schedulable)."""
    metadata: dict[str, Any] = {}
    if annotations:
        metadata["annotations"] = dict(annotations)
    if labels:
        metadata["labels"] = dict(labels)
    body: dict[str, Any] = {"template": {
        "metadata": metadata,
        "spec": {"containers": copy.deepcopy(containers) if containers is not None else [
            {"name": "tensorflow", "image": "tensorflow/tensorflow:2.9.1"}], **pod_spec},
    }}
    if replicas is not None:
        body["replicas"] = replicas
    if policy is not None:
        body["restartPolicy"] = policy
    return body


def tf_manifest(name: str, replicas: dict[str, dict[str, Any]], *, run_policy: dict[str, Any] | None = None,
                **spec: Any) -> dict[str, Any]:
    """A TFJob exactly as a user writes it for the Kubeflow training-operator."""
    body: dict[str, Any] = {"tfReplicaSpecs": copy.deepcopy(replicas), **spec}
    if run_policy is not None:
        body["runPolicy"] = dict(run_policy)
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name}, "spec": body}


def succeed(after: str = "1s", **extra: str) -> dict[str, str]:
    """Pod annotations: Running for `after`, then Succeeded with exit 0."""
    return {f"{SIM}/result": "Succeeded", f"{SIM}/after": after, **{f"{SIM}/{k.replace('_', '-')}": v
                                                                  for k, v in extra.items()}}


def fail(exit_code: int, after: str = "1s", reason: str = "Error") -> dict[str, str]:
    return {f"{SIM}/result": "Failed", f"{SIM}/after": after, f"{SIM}/exit-code": str(exit_code),
            f"{SIM}/reason": reason}


def rfc3339(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


# ---- cluster reads ------------------------------------------------------------------------------

def job_pods(core: client.CoreV1Api, namespace: str, job: str) -> dict[str, Any]:
    pods = core.list_namespaced_pod(namespace, label_selector=f"{JOB_NAME_LABEL}={job}").items
    return {p.metadata.name: p for p in pods}


def job_services(core: client.CoreV1Api, namespace: str, job: str) -> dict[str, Any]:
    services = core.list_namespaced_service(namespace, label_selector=f"{JOB_NAME_LABEL}={job}").items
    return {s.metadata.name: s for s in services}


def live_pods(core: client.CoreV1Api, namespace: str, job: str) -> dict[str, Any]:
    """Pods not being deleted."""
    return {n: p for n, p in job_pods(core, namespace, job).items() if p.metadata.deletion_timestamp is None}


def condition(status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c["type"] == kind), None)


def is_true(status: dict[str, Any], kind: str) -> bool:
    found = condition(status, kind)
    return found is not None and found["status"] == "True"


def condition_summary(status: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c["reason"]) for c in status.get("conditions") or []]


def tf_config_of(pod: Any) -> list[str]:
    """Every TF_CONFIG value of every container, as `<container>=<value>`."""
    found = []
    for container in pod.spec.containers:
        for env in container.env or []:
            if env.name == "TF_CONFIG":
                found.append(f"{container.name}={env.value}")
    return found


def event_pairs(engine: Any, job: str) -> list[tuple[str, str]]:
    return [(e.reason, e.message) for e in engine.events(KIND, job)]


# ---- driving the loop ---------------------------------------------------------------------------

def drive_with_resync(engine: Any, submission: Any, *, resync: float, timeout: float,
                      options: dict[str, Any] | None = None) -> LoopOutcome:
    """`Engine.drive` with a chosen resync period (to prove a wake-up comes from a timer, not a resync)."""
    driver = driver_for(KIND, dict(options or {}))

    async def body(kube: Any) -> LoopOutcome:
        return await asyncio.wait_for(run_reconcile_loop(kube, driver, engine.namespace, submission.name,
                                                         submission.uid, resync=resync), timeout)

    result: LoopOutcome = engine.run_async(body)
    return result


class Background:
    """Run a callable in a thread; `result()` joins (bounded) and re-raises its exception."""

    def __init__(self, target: Callable[[], Any]) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(target,), daemon=True)
        self._thread.start()

    def _run(self, target: Callable[[], Any]) -> None:
        try:
            self._value = target()
        except BaseException as exc:  # handed to the test thread
            self._error = exc

    def result(self, timeout: float = 180.0) -> Any:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"background call still running after {timeout} s")
        if self._error is not None:
            raise self._error
        return self._value


class Recorder:
    """Watch one collection from a thread and keep every event (type, transformed object), in order.

    Started before the action under test, so nothing is missed; `stop()` ends it.
    """

    def __init__(self, list_call: Callable[..., Any], namespace: str, transform: Callable[[Any], Any],
                 **selectors: str) -> None:
        self.list_call = list_call
        self.namespace = namespace
        self.transform = transform
        self.selectors = selectors
        self.events: list[tuple[str, Any]] = []
        self._stop = threading.Event()
        self._version = list_call(namespace, **selectors).metadata.resource_version
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            w = watch.Watch()
            for event in w.stream(self.list_call, self.namespace, resource_version=self._version,
                                  timeout_seconds=1, **self.selectors):
                obj = event["object"]
                self._version = obj.metadata.resource_version
                self.events.append((event["type"], self.transform(obj)))
                if self._stop.is_set():
                    w.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def record_statuses(core: client.CoreV1Api, namespace: str, job: str) -> Recorder:
    """Every status the job record ever had (one entry per write)."""
    return Recorder(core.list_namespaced_config_map, namespace,
                    lambda cm: json.loads((cm.data or {}).get("status") or "{}"),
                    field_selector=f"metadata.name={record_name(KIND, job)}")


def pod_events(core: client.CoreV1Api, namespace: str, job: str) -> Recorder:
    """(event type, (pod name, uid, phase)) for every pod event of the job."""
    return Recorder(core.list_namespaced_pod, namespace,
                    lambda p: (p.metadata.name, p.metadata.uid, p.status.phase),
                    label_selector=f"{JOB_NAME_LABEL}={job}")
