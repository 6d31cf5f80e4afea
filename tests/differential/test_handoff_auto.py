"""controller="auto" against the real controllers, and the two engines side by side: auto hands a job to a
controller that acts on it and keeps it when none does or the CRD is not served; a TFJob run with Airflow as
the controller is never reconciled by the training-operator running beside it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from handoff_support import Runner, broadcast_task, custom_resources, job_records, pod_owners, task_runner, tf_job
from kubernetes import client
from support.waits import wait_until

from airflow_broadcast.operators.tf_job import TFJobOperator
from devcluster.control_plane import ClusterInfo, ControlPlane
from devcluster.upstream import UpstreamControllers

TFJOB_CRD = "tfjobs.kubeflow.org"
pytestmark = [pytest.mark.cluster, pytest.mark.differential]


@pytest.fixture
def as_task(kubeconfig: str, upstream: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runner]:
    yield from task_runner(kubeconfig, monkeypatch)


@pytest.fixture
def controllers_stopped(cluster: ClusterInfo, upstream: Any) -> Iterator[UpstreamControllers]:
    """Both controllers stopped, their CRDs still installed; started again (CRDs reinstalled) afterwards."""
    controllers = UpstreamControllers(ControlPlane(Path(cluster.directory)))
    controllers.stop()
    try:
        yield controllers
    finally:
        controllers.start()


def test_handoff_auto_picks_cluster_when_the_controller_acts(
        as_task: Runner, api_client: client.ApiClient, core_api: client.CoreV1Api, node_factory: Any,
        upstream_namespace: str) -> None:
    result, _, log = as_task(broadcast_task(node_factory, upstream_namespace, "bcj-auto", "Succeeded",
                                            controller="auto"))

    assert "controller='cluster' runs BroadcastJob" in log
    (resource,) = custom_resources(api_client, "BroadcastJob", upstream_namespace)
    assert result["uid"] == resource["metadata"]["uid"] and result["phase"] == "completed"
    assert job_records(core_api, upstream_namespace) == []


def test_handoff_airflow_mode_tfjob_is_not_reconciled_by_training_operator(
        as_task: Runner, api_client: client.ApiClient, core_api: client.CoreV1Api, upstream: Any,
        upstream_namespace: str) -> None:
    ns = upstream_namespace
    manifest = tf_job("tf-ours", "Succeeded", managedBy="kubeflow.org/training-operator")
    task = TFJobOperator(task_id="tf", manifest=manifest, namespace=ns, deferrable=False)

    result, _, _ = as_task(task)

    assert result["phase"] == "Succeeded" and result["record"] == "tfjob-tf-ours"
    assert custom_resources(api_client, "TFJob", ns) == []  # nothing for training-operator to reconcile
    assert pod_owners(core_api, ns) == {("ConfigMap", True)}  # and no orphan pod it could adopt
    assert ns not in Path(upstream.directory, "logs", "training-operator.log").read_text()


def test_handoff_auto_keeps_airflow_when_no_controller_acts(
        as_task: Runner, controllers_stopped: Any, api_client: client.ApiClient, core_api: client.CoreV1Api,
        node_factory: Any, upstream_namespace: str) -> None:
    ns = upstream_namespace
    task = broadcast_task(node_factory, ns, "bcj-none", "Succeeded", controller="auto", handoff_probe_seconds=3)

    result, _, log = as_task(task)

    assert "controller='airflow' runs BroadcastJob" in log and "no controller wrote" in log
    assert custom_resources(api_client, "BroadcastJob", ns) == []  # the probe's resource was deleted
    assert job_records(core_api, ns) == ["bcj-bcj-none"]
    assert (result["phase"], result["succeeded"]) == ("completed", 2)


def test_handoff_auto_keeps_airflow_when_the_crd_is_not_served(
        as_task: Runner, controllers_stopped: Any, kubeconfig: str, core_api: client.CoreV1Api,
        upstream_namespace: str) -> None:
    from kubernetes import config

    extensions = client.ApiextensionsV1Api(config.new_client_from_config(config_file=kubeconfig))
    extensions.delete_custom_resource_definition(TFJOB_CRD)
    wait_until(lambda: TFJOB_CRD not in {c.metadata.name for c in extensions.list_custom_resource_definition().items},
               timeout=60, what="the TFJob CRD to be gone")  # a terminating CRD still answers a LIST
    task = TFJobOperator(task_id="tf", manifest=tf_job("tf-nocrd", "Succeeded"), namespace=upstream_namespace,
                         controller="auto", deferrable=False)

    result, _, log = as_task(task)

    assert "controller='airflow' runs TFJob" in log and "TFJob CRD (kubeflow.org/v1) is not served" in log
    assert result["phase"] == "Succeeded"
    assert job_records(core_api, upstream_namespace) == ["tfjob-tf-nocrd"]
