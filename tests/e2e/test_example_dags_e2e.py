"""Every example DAG, as shipped, through real Airflow (`airflow dags test`) on the local cluster.

The examples read their namespace and node pool from their `namespace` and `node_selector` params, so each
test points them at its own namespace and three fresh nodes with `--conf`; nothing else is changed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from support.waits import wait_until

from devcluster.airflow_env import AirflowEnv, DagRunResult
from devcluster.control_plane import ClusterInfo

pytestmark = [pytest.mark.airflow, pytest.mark.cluster]

EXAMPLES = Path(__file__).resolve().parents[2] / "example_dags"
RECORDS = "app.kubernetes.io/managed-by=airflow-broadcast"


@pytest.fixture(scope="module")
def examples_env(cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> AirflowEnv:
    """An isolated AIRFLOW_HOME whose DAG folder is `example_dags/` and whose `kubernetes_default` is the cluster."""
    return AirflowEnv.create(tmp_path_factory.mktemp("airflow-examples"), EXAMPLES, cluster.kubeconfig)


@pytest.fixture
def pool(node_factory: Any, namespace: str) -> tuple[list[str], dict[str, str]]:
    """Three fresh nodes that only this test's jobs select."""
    selector = {"example-pool": namespace}
    return sorted(node_factory(3, labels=selector)), selector


def run(env: AirflowEnv, dag_id: str, namespace: str, selector: dict[str, str]) -> DagRunResult:
    return env.dags_test(dag_id, conf={"namespace": namespace, "node_selector": selector})


def records(core: client.CoreV1Api, namespace: str) -> dict[str, Any]:
    return {r.metadata.name: r for r in core.list_namespaced_config_map(namespace, label_selector=RECORDS).items}


def assert_every_pool_node_succeeded(summary: dict[str, Any], nodes: list[str]) -> None:
    assert summary["phase"] == "completed"
    assert (summary["desired"], summary["succeeded"], summary["failed"], summary["active"]) == (3, 3, 0, 0)
    assert sorted(summary["nodes"]) == nodes
    assert all(r["phase"] == "Succeeded" for r in summary["nodes"].values())


def test_prepull_example_pulls_on_every_node_of_the_pool(examples_env: AirflowEnv, core_api: client.CoreV1Api,
                                                        namespace: str,
                                                        pool: tuple[list[str], dict[str, str]]) -> None:
    nodes, selector = pool
    result = run(examples_env, "example_broadcast_job_prepull", namespace, selector)

    assert result.task_states == {"prepull_images": "success"}, result.output[-4000:]
    summary = result.xcoms["prepull_images"]
    assert (summary["name"], summary["namespace"]) == ("prepull-images", namespace)
    assert_every_pool_node_succeeded(summary, nodes)
    kept = records(core_api, namespace)["bcj-prepull-images"]
    assert kept.metadata.annotations["airflow-broadcast.io/result-read"] == "true", "TTL 3600: kept, result read"


def test_sensor_example_submits_then_the_sensor_drives_the_job(examples_env: AirflowEnv, namespace: str,
                                                              pool: tuple[list[str], dict[str, str]]) -> None:
    nodes, selector = pool
    result = run(examples_env, "example_broadcast_job_sensor", namespace, selector)

    assert result.task_states == {"submit_node_check": "success", "wait_node_check": "success"}, \
        result.output[-4000:]
    submitted, sensed = result.xcoms["submit_node_check"], result.xcoms["wait_node_check"]
    assert (submitted["name"], submitted["phase"]) == ("node-check", "submitted")
    assert sensed["uid"] == submitted["uid"]
    assert_every_pool_node_succeeded(sensed, nodes)


def test_node_maintenance_example_sweeps_old_records_then_prunes_every_pool_node(
    examples_env: AirflowEnv, core_api: client.CoreV1Api, namespace: str, pool: tuple[list[str], dict[str, str]],
) -> None:
    nodes, selector = pool
    last_week = {  # a finished, read and expired record, as an earlier run leaves it
        "metadata": {"name": "bcj-prune-images-20260222", "labels": {
            "app.kubernetes.io/managed-by": "airflow-broadcast", "airflow-broadcast.io/kind": "BroadcastJob",
            "airflow-broadcast.io/job-name": "prune-images-20260222"}, "annotations": {
            "airflow-broadcast.io/expires-at": "2026-02-23T03:00:00Z", "airflow-broadcast.io/result-read": "true"}},
        "data": {"manifest": "{}", "status": json.dumps({"phase": "completed"})},
    }
    core_api.create_namespaced_config_map(namespace, last_week)
    result = run(examples_env, "example_node_maintenance", namespace, selector)

    assert result.task_states == {"delete_expired_records": "success", "prune_images": "success"}, \
        result.output[-4000:]
    assert result.xcoms["delete_expired_records"] == [f"{namespace}/bcj-prune-images-20260222"]
    summary = result.xcoms["prune_images"]
    assert re.fullmatch(r"prune-images-\d{8}", summary["name"]), summary["name"]
    assert_every_pool_node_succeeded(summary, nodes)
    assert set(records(core_api, namespace)) == {f"bcj-{summary['name']}"}


def test_tfjob_pipeline_prepares_trains_and_evaluates_on_the_pool(
    examples_env: AirflowEnv, core_api: client.CoreV1Api, namespace: str, pool: tuple[list[str], dict[str, str]],
) -> None:
    nodes, selector = pool
    result = run(examples_env, "tfjob_distributed_mnist", namespace, selector)

    assert result.task_states == {"prepare": "success", "train": "success", "evaluate": "success"}, \
        result.output[-4000:]
    assert_every_pool_node_succeeded(result.xcoms["prepare"], nodes)
    trained = result.xcoms["train"]
    assert re.fullmatch(r"mnist-dist-\d{8}", trained["name"]), trained["name"]
    assert (trained["phase"], trained["failure"]) == ("Succeeded", None)
    assert trained["replicaStatuses"]["Chief"]["succeeded"] == 1
    assert result.xcoms["evaluate"] == {"job": trained["name"], "publish": True,
                                        "workers": trained["replicaStatuses"]["Worker"],
                                        "reason": "every worker finished"}
    assert set(records(core_api, namespace)) == {f"tfjob-{trained['name']}"}, "prepare's TTL 0 deleted its record"

    selector_label = f"training.kubeflow.org/job-name={trained['name']}"
    pods = core_api.list_namespaced_pod(namespace, label_selector=selector_label).items
    assert pods and {p.spec.node_name for p in pods} <= set(nodes)
    wait_until(lambda: not [p for p in core_api.list_namespaced_pod(namespace, label_selector=selector_label).items
                            if p.status.phase in ("Pending", "Running")],
               timeout=60, what="cleanPodPolicy Running removed the parameter servers")
