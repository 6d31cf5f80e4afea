"""Section L on the real cluster: PodGroups for scheduler-plugins and Volcano (their CRDs, not their schedulers).

The test cluster serves both PodGroup APIs (devcluster/crds). The stock kube-scheduler stands in
for the gang scheduler (`gang_scheduler_name: default-scheduler`) so that pods run on the kwok
nodes; for Volcano, the test admits the gang by setting the PodGroup's phase as Volcano would.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client, config
from support.waits import wait_until
from tfjob_it_support import KIND, Background, event_pairs, is_true, job_pods, replica, succeed, tf_manifest

from airflow_broadcast.cluster.job_records import record_name

pytestmark = pytest.mark.cluster

PLUGINS = ("scheduling.x-k8s.io", "v1alpha1")
VOLCANO = ("scheduling.volcano.sh", "v1beta1")
TERMINATED = [("JobTerminated", "Job has been terminated. Deleting PodGroup"),
              ("SuccessfulDeletePodGroup", "Deleted PodGroup: {name}")]


@pytest.fixture
def custom(kubeconfig: str) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(config.new_client_from_config(config_file=kubeconfig))


def pod_group(custom: client.CustomObjectsApi, api: tuple[str, str], namespace: str, name: str) -> Any:
    try:
        return custom.get_namespaced_custom_object(api[0], api[1], namespace, "podgroups", name)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def termination_events(engine: Any, name: str) -> list[tuple[str, str]]:
    return [(r, m) for r, m in event_pairs(engine, name) if r in ("JobTerminated", "SuccessfulDeletePodGroup")]


def test_L1_L2_L5_L7_scheduler_plugins_pod_group_lives_as_long_as_the_job(
        engine: Any, namespace: str, core_api: client.CoreV1Api, custom: client.CustomObjectsApi) -> None:
    manifest = tf_manifest("gang", {"PS": replica(1), "Worker": replica(2, annotations=succeed("3s"))},
                           run_policy={"schedulingPolicy": {"minAvailable": 3, "scheduleTimeoutSeconds": 60}})
    manifest["metadata"]["annotations"] = {"team": "ml"}
    options = {"gang_scheduler": "scheduler-plugins", "gang_scheduler_name": "default-scheduler"}
    submission = engine.submit(manifest)
    assert engine.drive(submission, KIND, options=options, single_pass=True).reason == "pending"

    group = pod_group(custom, PLUGINS, namespace, "gang")
    assert group is not None
    record = engine.record(KIND, "gang")
    owner = group["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("ConfigMap", record_name(KIND, "gang"),
                                                            record.metadata.uid)
    assert group["metadata"]["annotations"] == {"team": "ml"}
    assert group["spec"] == {"minMember": 3, "scheduleTimeoutSeconds": 60}
    pods = job_pods(core_api, namespace, "gang")
    assert len(pods) == 3
    assert {p.metadata.labels["scheduling.x-k8s.io/pod-group"] for p in pods.values()} == {"gang"}
    assert {p.spec.scheduler_name for p in pods.values()} == {"default-scheduler"}

    assert engine.drive(submission, KIND, options=options, timeout=90).reason == "finished"
    assert is_true(engine.status(KIND, "gang"), "Succeeded")
    wait_until(lambda: pod_group(custom, PLUGINS, namespace, "gang") is None, timeout=30, what="PodGroup deleted")
    expected = [(r, m.format(name="gang")) for r, m in TERMINATED]
    events = wait_until(lambda: termination_events(engine, "gang"), timeout=10, what="termination events")
    assert sorted(events) == sorted(expected)


def test_L4_volcano_pods_wait_until_the_pod_group_is_admitted(
        engine: Any, namespace: str, core_api: client.CoreV1Api, custom: client.CustomObjectsApi) -> None:
    manifest = tf_manifest("queued", {"Worker": replica(2, annotations=succeed("2s"))},
                           run_policy={"schedulingPolicy": {"queue": "research"}})
    options = {"gang_scheduler": "volcano", "gang_scheduler_name": "default-scheduler"}
    submission = engine.submit(manifest)
    loop = Background(lambda: engine.drive(submission, KIND, options=options, timeout=120))

    group = wait_until(lambda: pod_group(custom, VOLCANO, namespace, "queued"), timeout=30, what="PodGroup")
    assert group["spec"] == {"minMember": 2, "queue": "research"}
    time.sleep(3)
    assert job_pods(core_api, namespace, "queued") == {}, "no pod before Volcano admits the gang"
    status = engine.status(KIND, "queued")
    assert status.get("lastReconcileTime"), "the waiting pass is recorded"

    custom.patch_namespaced_custom_object_status(VOLCANO[0], VOLCANO[1], namespace, "podgroups", "queued",
                                                 {"status": {"phase": "Inqueue"}})
    assert loop.result(150).reason == "finished"
    assert is_true(engine.status(KIND, "queued"), "Succeeded")
    pods = job_pods(core_api, namespace, "queued")
    assert {p.metadata.annotations["scheduling.k8s.io/group-name"] for p in pods.values()} == {"queued"}
    assert {p.metadata.annotations["volcano.sh/task-spec"] for p in pods.values()} == {"worker"}
    wait_until(lambda: pod_group(custom, VOLCANO, namespace, "queued") is None, timeout=30,
               what="PodGroup deleted")


def test_L6_a_replica_with_its_own_scheduler_keeps_it_and_warns(engine: Any, namespace: str,
                                                                core_api: client.CoreV1Api) -> None:
    manifest = tf_manifest("mixed", {"Worker": replica(1, annotations=succeed("1s"),
                                                       schedulerName="default-scheduler")})
    options = {"gang_scheduler": "scheduler-plugins"}
    assert engine.drive(engine.submit(manifest), KIND, options=options, timeout=60).reason == "finished"

    pods = job_pods(core_api, namespace, "mixed")
    assert pods["mixed-worker-0"].spec.scheduler_name == "default-scheduler"
    message = "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten"
    events = wait_until(lambda: event_pairs(engine, "mixed"), timeout=10, what="events")
    assert ("SetPodTemplateSchedulerName", message) in events


def test_L7_suspending_deletes_the_pod_group(engine: Any, namespace: str, core_api: client.CoreV1Api,
                                             custom: client.CustomObjectsApi) -> None:
    manifest = tf_manifest("paused", {"Worker": replica(1)})
    options = {"gang_scheduler": "scheduler-plugins", "gang_scheduler_name": "default-scheduler"}
    submission = engine.submit(manifest)
    engine.drive(submission, KIND, options=options, single_pass=True)
    assert pod_group(custom, PLUGINS, namespace, "paused") is not None

    engine.edit_manifest(KIND, "paused", lambda m: m["spec"].update(runPolicy={"suspend": True}))
    engine.drive(submission, KIND, options=options, single_pass=True)
    assert pod_group(custom, PLUGINS, namespace, "paused") is None
    assert is_true(engine.status(KIND, "paused"), "Suspended")
