"""What the hand-off tests share: manifests whose pods kwok finishes as scripted, a task instance that records
its XCom, and readers of what each controller left in a namespace."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from kubernetes import client
from support.local_hook import LocalHook
from support.task_log import RecordingLog

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.reconcilers.handoff import RESOURCES

SIM = "sim.airflow-broadcast.io"
RECORD_KIND_LABEL = "airflow-broadcast.io/kind"


def notes(result: str | None, after: str = "1s") -> dict[str, str]:
    """Pod annotations for kwok: finish with `result` after `after` (None: run until deleted)."""
    return {f"{SIM}/after": after, **({f"{SIM}/result": result} if result else {})}


def broadcast_job(name: str, pool: str, result: str | None) -> dict[str, Any]:
    return {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": name},
            "spec": {"completionPolicy": {"type": "Always"},
                     "template": {"metadata": {"annotations": notes(result)},
                                  "spec": {"nodeSelector": {"pool": pool}, "restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}


def tf_job(name: str, worker_result: str | None, **run_policy: Any) -> dict[str, Any]:
    def replica(count: int, result: str | None) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": "Never",
                "template": {"metadata": {"annotations": notes(result)},
                             "spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.9.1",
                                                      "ports": [{"name": "tfjob-port", "containerPort": 2222}]}]}}}

    spec: dict[str, Any] = {"tfReplicaSpecs": {"Worker": replica(2, worker_result)}}
    if run_policy:
        spec["runPolicy"] = run_policy
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name}, "spec": spec}


class RecordingTI:
    """The parts of a task instance the operator and the sensor use; `xcom` holds what was pushed."""

    dag_id = "handoff"
    run_id = "manual__handoff"
    map_index = -1
    start_date = None

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.xcom: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcom[key] = value


def run_task(task: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, RecordingTI, str]:
    """Execute a task inline; its result, its task instance and its log (the task class's log is kept)."""
    ti = RecordingTI(task.task_id)
    log = RecordingLog()
    monkeypatch.setattr(type(task), "log", property(lambda _: log))
    try:
        return task.execute({"ti": ti}), ti, "\n".join(log.lines)
    except Exception as exc:
        exc.add_note("\n".join(log.lines))
        raise


def custom_resources(api: client.ApiClient, kind: str, namespace: str) -> list[dict[str, Any]]:
    api_version, plural = RESOURCES[kind]  # type: ignore[index]
    group, version = api_version.split("/")
    listed: Mapping[str, Any] = client.CustomObjectsApi(api).list_namespaced_custom_object(
        group, version, namespace, plural)
    return list(listed["items"])


def job_records(core: client.CoreV1Api, namespace: str) -> list[str]:
    """Names of the job record ConfigMaps: what our engine reconciles."""
    return [c.metadata.name for c in core.list_namespaced_config_map(namespace, label_selector=RECORD_KIND_LABEL).items]


def pod_owners(core: client.CoreV1Api, namespace: str) -> set[tuple[str, bool]]:
    """(owner kind, is it the controller) over every pod of the namespace."""
    return {(ref.kind, bool(ref.controller)) for pod in core.list_namespaced_pod(namespace).items
            for ref in pod.metadata.owner_references or []}


Runner = Callable[[Any], tuple[Any, RecordingTI, str]]


def task_runner(kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runner]:
    """For a fixture: run tasks inline, their cluster calls going to the test cluster, where the real controllers
    run."""
    hook = LocalHook(kubeconfig, monkeypatch)
    yield lambda task: run_task(task, monkeypatch)
    hook.close_now()


def broadcast_task(node_factory: Any, namespace: str, name: str, result: str | None,
                   **params: Any) -> BroadcastJobOperator:
    """A BroadcastJob task run inline, on a pool of two fake nodes of its own."""
    node_factory(2, labels={"pool": namespace})
    return BroadcastJobOperator(task_id="bcj", manifest=broadcast_job(name, namespace, result), namespace=namespace,
                                deferrable=False, **params)
