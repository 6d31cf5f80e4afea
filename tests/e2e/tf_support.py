"""Manifests and cluster reads shared by the TFJob end-to-end tests."""

from __future__ import annotations

import copy
import json
from typing import Any

from kubernetes import client

SIM = "sim.airflow-broadcast.io"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
RECORD_SELECTOR = "app.kubernetes.io/managed-by=airflow-broadcast"


def replica(replicas: int = 1, policy: str = "Never", annotations: dict[str, str] | None = None,
            containers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A replica spec as users write it; pods are not pinned to nodes."""
    return {
        "replicas": replicas,
        "restartPolicy": policy,
        "template": {
            "metadata": {"annotations": copy.deepcopy(annotations or {})},
            "spec": {"containers": copy.deepcopy(containers) if containers is not None else [
                {"name": "tensorflow", "image": "kubeflow/tf-dist-mnist-test:latest",
                 "command": ["python", "/var/tf_dist_mnist/dist_mnist.py"]}]},
        },
    }


def tf_manifest(name: str, replicas: dict[str, Any], run_policy: dict[str, Any] | None = None,
                **spec: Any) -> dict[str, Any]:
    """A TFJob exactly as a user writes it for the Kubeflow training-operator."""
    body: dict[str, Any] = {"tfReplicaSpecs": copy.deepcopy(replicas), **spec}
    if run_policy is not None:
        body["runPolicy"] = dict(run_policy)
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name}, "spec": body}


def succeed(after: str = "1s") -> dict[str, str]:
    return {f"{SIM}/result": "Succeeded", f"{SIM}/after": after}


def record(core: client.CoreV1Api, namespace: str, name: str) -> Any | None:
    records = core.list_namespaced_config_map(
        namespace, label_selector=f"airflow-broadcast.io/kind=TFJob,airflow-broadcast.io/job-name={name}")
    return records.items[0] if records.items else None


def record_status(core: client.CoreV1Api, namespace: str, name: str) -> dict[str, Any]:
    found = record(core, namespace, name)
    return {} if found is None else dict(json.loads(found.data["status"]))


def job_pods(core: client.CoreV1Api, namespace: str, name: str) -> dict[str, Any]:
    pods = core.list_namespaced_pod(namespace, label_selector=f"{JOB_NAME_LABEL}={name}").items
    return {p.metadata.name: p for p in pods}


def job_services(core: client.CoreV1Api, namespace: str, name: str) -> dict[str, Any]:
    services = core.list_namespaced_service(namespace, label_selector=f"{JOB_NAME_LABEL}={name}").items
    return {s.metadata.name: s for s in services}


def phases(core: client.CoreV1Api, namespace: str, name: str) -> dict[str, str]:
    return {n: p.status.phase for n, p in job_pods(core, namespace, name).items()}


def running_pod(core: client.CoreV1Api, namespace: str, pod: str) -> bool:
    try:
        return bool(core.read_namespaced_pod(pod, namespace).status.phase == "Running")
    except client.ApiException as exc:
        if exc.status == 404:
            return False
        raise


def finish_pod(core: client.CoreV1Api, namespace: str, pod: str, after: str = "0s") -> None:
    """The training process of one replica ends: kwok moves the pod to Succeeded (exit 0)."""
    core.patch_namespaced_pod(pod, namespace, {"metadata": {"annotations": succeed(after)}})


def condition(status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c["type"] == kind), None)


def true_types(conditions: list[dict[str, Any]]) -> list[str]:
    return [c["type"] for c in conditions if c["status"] == "True"]
