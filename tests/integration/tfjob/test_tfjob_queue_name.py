"""N8 on the real cluster: `queue_name` labels the job for Kueue after checking its LocalQueue.

The Kueue LocalQueue CRD is installed in the test cluster (devcluster/crds), so a queue can be
found (200) or missing (404); the `restricted` user may not read queues (403).
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from tfjob_it_support import KIND, replica, tf_manifest

from airflow_broadcast.cluster.job_records import read_manifest
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.specs.tf_job.spec import QUEUE_NAME_LABEL

pytestmark = pytest.mark.cluster


def local_queue(kubeconfig: str, namespace: str, name: str) -> None:
    from kubernetes import config

    api = client.CustomObjectsApi(config.new_client_from_config(config_file=kubeconfig))
    api.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta1", namespace, "localqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": "cluster-queue"}})


def pre_submit_warnings(engine: Any, namespace: str, queue: str) -> tuple[list[str], Any]:
    """The operator's own parse and pre-submit check, as its execute() runs them."""
    operator = TFJobOperator(task_id="train", manifest=tf_manifest("queued", {"Worker": replica(1)}),
                             queue_name=queue)
    job = operator.parse(operator.manifest, namespace, "default")

    async def check(kube: KubeClient) -> list[str]:
        return await operator.before_submit(kube, job)

    return engine.run_async(check), job


def submit_with_queue(engine: Any, namespace: str, queue: str) -> list[str]:
    warnings, job = pre_submit_warnings(engine, namespace, queue)
    engine.submit(dict(job.manifest))
    return warnings


def test_N8_an_existing_local_queue_labels_the_job_without_warning(engine: Any, namespace: str,
                                                                   kubeconfig: str) -> None:
    local_queue(kubeconfig, namespace, "team-a")
    warnings = submit_with_queue(engine, namespace, "team-a")

    assert warnings == []
    stored = read_manifest(engine.record(KIND, "queued").to_dict())
    assert stored["metadata"]["labels"][QUEUE_NAME_LABEL] == "team-a"


def test_N8_a_missing_local_queue_warns_and_still_labels(engine: Any, namespace: str) -> None:
    warnings = submit_with_queue(engine, namespace, "nowhere")

    assert len(warnings) == 1 and f"Kueue LocalQueue {namespace}/nowhere was not found" in warnings[0]
    stored = read_manifest(engine.record(KIND, "queued").to_dict())
    assert stored["metadata"]["labels"][QUEUE_NAME_LABEL] == "nowhere"


def test_N8_no_permission_to_read_queues_warns(cluster: Any, namespace: str, core_api: client.CoreV1Api,
                                              kubeconfig: str) -> None:
    from support.engine import Engine

    local_queue(kubeconfig, namespace, "team-a")
    restricted = Engine(cluster.restricted_kubeconfig, namespace, core_api)
    warnings, _ = pre_submit_warnings(restricted, namespace, "team-a")
    assert len(warnings) == 1 and f"not allowed to read Kueue LocalQueue {namespace}/team-a" in warnings[0]
