"""Manifests and cluster reads shared by the BroadcastJob end-to-end tests."""

from __future__ import annotations

import copy
from typing import Any

from kubernetes import client

SIM = "sim.airflow-broadcast.io"


def bcj_manifest(name: str, selector: dict[str, str], *, annotations: dict[str, str] | None = None,
                 restart_policy: str = "Never", **spec: Any) -> dict[str, Any]:
    """A BroadcastJob exactly as a user writes it for OpenKruise, restricted to the test's nodes."""
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "BroadcastJob",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"annotations": copy.deepcopy(annotations or {})},
                "spec": {
                    "nodeSelector": dict(selector),
                    "containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}],
                    "restartPolicy": restart_policy,
                },
            },
            **spec,
        },
    }


def job_pods(core: client.CoreV1Api, namespace: str, name: str) -> list[Any]:
    return list(core.list_namespaced_pod(namespace, label_selector=f"broadcastjob-name={name}").items)


def record(core: client.CoreV1Api, namespace: str, name: str) -> Any | None:
    records = core.list_namespaced_config_map(
        namespace, label_selector=f"airflow-broadcast.io/kind=BroadcastJob,airflow-broadcast.io/job-name={name}")
    return records.items[0] if records.items else None
