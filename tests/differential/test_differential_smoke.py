"""The real controllers run a BroadcastJob and a TFJob on the local cluster, and our engine runs the same manifests
in another namespace; the differences are printed, and those not yet explained are listed in DIFFERENCES."""

from __future__ import annotations

from typing import Any

import pytest
from differential_harness import compare, create_upstream, run_ours, snapshot, wait_upstream
from kubernetes import client

SIM = "sim.airflow-broadcast.io"
pytestmark = [pytest.mark.cluster, pytest.mark.differential]


def broadcast_manifest(pool: str) -> dict[str, Any]:
    return {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": "bcj-smoke"},
            "spec": {"parallelism": 3, "completionPolicy": {"type": "Always"},
                     "template": {"metadata": {"annotations": {f"{SIM}/result": "Succeeded", f"{SIM}/after": "1s"}},
                                  "spec": {"nodeSelector": {"pool": pool}, "restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}


def tf_replica(replicas: int, outcome: dict[str, str]) -> dict[str, Any]:
    return {"replicas": replicas, "restartPolicy": "Never",
            "template": {"metadata": {"annotations": outcome},
                         "spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.9.1",
                                                  "ports": [{"name": "tfjob-port", "containerPort": 2222}]}]}}}


def tf_manifest() -> dict[str, Any]:
    # The workers finish before the chief, so that the job's end finds only the PS running (cleaned up).
    worker_done = {f"{SIM}/result": "Succeeded", f"{SIM}/after": "1s"}
    chief_done = {f"{SIM}/result": "Succeeded", f"{SIM}/after": "4s"}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "tf-smoke"},
            "spec": {"runPolicy": {"cleanPodPolicy": "Running"},
                     "tfReplicaSpecs": {"Chief": tf_replica(1, chief_done), "PS": tf_replica(1, {}),
                                        "Worker": tf_replica(2, worker_done)}}}


def test_D1_kruise_completes_a_broadcast_job_on_three_nodes(
        api_client: client.ApiClient, core_api: client.CoreV1Api, node_factory: Any, upstream_namespace: str,
        namespace: str, engine: Any) -> None:
    nodes = node_factory(3, labels={"pool": upstream_namespace})
    manifest = broadcast_manifest(upstream_namespace)

    name = create_upstream(api_client, "BroadcastJob", upstream_namespace, manifest)
    theirs = wait_upstream(api_client, "BroadcastJob", upstream_namespace, name)

    assert theirs["phase"] == "completed"
    assert (theirs["desired"], theirs["succeeded"], theirs.get("failed", 0)) == (3, 3, 0)
    pods = core_api.list_namespaced_pod(upstream_namespace).items
    assert sorted(p.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
                  .node_selector_terms[0].match_fields[0].values[0] for p in pods) == sorted(nodes)

    ours = run_ours(engine, "BroadcastJob", manifest)
    differences = compare(snapshot(core_api, "BroadcastJob", namespace, "bcj-smoke", ours),
                          snapshot(core_api, "BroadcastJob", upstream_namespace, "bcj-smoke", theirs))
    print("\n".join(["BroadcastJob differences:", *differences]))
    assert ours["phase"] == "completed"


def test_D2_training_operator_succeeds_a_tf_job_with_chief_ps_and_workers(
        api_client: client.ApiClient, core_api: client.CoreV1Api, upstream_namespace: str, namespace: str,
        engine: Any) -> None:
    manifest = tf_manifest()

    name = create_upstream(api_client, "TFJob", upstream_namespace, manifest)
    theirs = wait_upstream(api_client, "TFJob", upstream_namespace, name)

    succeeded = [c for c in theirs["conditions"] if c["type"] == "Succeeded"]
    assert succeeded and succeeded[0]["status"] == "True"
    assert theirs["replicaStatuses"]["Chief"].get("succeeded") == 1
    assert theirs["replicaStatuses"]["Worker"].get("succeeded") == 2

    ours = run_ours(engine, "TFJob", manifest)
    differences = compare(snapshot(core_api, "TFJob", namespace, "tf-smoke", ours),
                          snapshot(core_api, "TFJob", upstream_namespace, "tf-smoke", theirs))
    print("\n".join(["TFJob differences:", *differences]))
    assert any(c["type"] == "Succeeded" and c["status"] == "True" for c in ours["conditions"])
