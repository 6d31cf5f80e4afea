"""Checklist N2 on the real cluster: TFJobs built from an image or a function run through the engine.

kwok pods do not execute their containers, so each built template gets the outcome annotations
the fake nodes act on; everything else is the builder's output as is.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from tfjob_it_support import KIND, condition_summary, is_true, job_pods, job_services, succeed, tf_config_of

from airflow_broadcast.specs.tf_job.builder import tf_job_from_callable, tf_job_from_image

pytestmark = pytest.mark.cluster


def train(parameters: dict[str, Any]) -> None:
    print("epochs:", parameters["epochs"])


def with_outcome(manifest: dict[str, Any], outcome: dict[str, str]) -> dict[str, Any]:
    for spec in manifest["spec"]["tfReplicaSpecs"].values():
        spec["template"]["metadata"]["annotations"].update(outcome)
    return manifest


def test_N2_image_job_with_chief_ps_and_two_workers_runs_to_success(engine: Any, namespace: str,
                                                                   core_api: client.CoreV1Api) -> None:
    manifest = tf_job_from_image("built", base_image="registry.local/mnist:1", num_chief_replicas=1,
                                 num_ps_replicas=1, num_workers=2, env_vars={"MODE": "train"},
                                 resources_per_worker={"cpu": "250m", "memory": "128Mi"}, labels={"team": "ml"})

    outcome = engine.drive(engine.submit(with_outcome(manifest, succeed("1s"))), KIND, timeout=120)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "built")
    assert is_true(status, "Succeeded"), condition_summary(status)
    assert status["replicaStatuses"] == {"Chief": {"succeeded": 1}, "PS": {"succeeded": 1},
                                         "Worker": {"succeeded": 2}}
    pods = job_pods(core_api, namespace, "built")
    assert sorted(pods) == ["built-chief-0", "built-ps-0", "built-worker-0", "built-worker-1"]
    assert sorted(job_services(core_api, namespace, "built")) == sorted(pods)
    for pod in pods.values():
        assert pod.metadata.annotations["sidecar.istio.io/inject"] == "false"
        assert pod.spec.restart_policy == "Never", "restartPolicy unset in the job → Never"
        (container,) = pod.spec.containers
        assert (container.name, container.image) == ("tensorflow", "registry.local/mnist:1")
        assert container.command is None and container.args is None, "the image's own entrypoint"
        assert container.resources.requests == container.resources.limits == {"cpu": "250m", "memory": "128Mi"}
        assert [e.name for e in container.env] == ["MODE", "TF_CONFIG"] and container.env[0].value == "train"
        (config,) = tf_config_of(pod)
        cluster = json.loads(config.split("=", 1)[1])["cluster"]
        assert {k: len(v) for k, v in cluster.items()} == {"chief": 1, "ps": 1, "worker": 2}


def test_N2_function_job_carries_its_script_to_every_pod(engine: Any, namespace: str,
                                                        core_api: client.CoreV1Api) -> None:
    manifest = tf_job_from_callable("fromfunc", train, parameters={"epochs": 3}, num_workers=2,
                                    volumes=[{"name": "data", "emptyDir": {}}],
                                    volume_mounts=[{"name": "data", "mountPath": "/data"}])
    (script,) = manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["args"]

    outcome = engine.drive(engine.submit(with_outcome(manifest, succeed("1s"))), KIND, timeout=120)

    assert outcome.reason == "finished"
    assert is_true(engine.status(KIND, "fromfunc"), "Succeeded")
    pods = job_pods(core_api, namespace, "fromfunc")
    assert sorted(pods) == ["fromfunc-worker-0", "fromfunc-worker-1"]
    for pod in pods.values():
        (container,) = pod.spec.containers
        assert container.image == "docker.io/tensorflow/tensorflow:2.9.1"
        assert (container.command, container.args) == (["bash", "-c"], [script])
        assert "\ntrain({'epochs': 3})\n" in container.args[0]
        assert [(m.name, m.mount_path) for m in container.volume_mounts] == [("data", "/data")]
        assert [v.name for v in pod.spec.volumes] == ["data"]
