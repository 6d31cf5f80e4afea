"""Pod and Service lifecycle of a running TFJob on the real cluster (checklist E2, E3, E6, E13, C6, §2.6).

Each step runs single reconcile passes, so "nothing was created" is a fact about a pass,
not about how long the test waited.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from support.sim_time import fail_until
from support.waits import wait_until
from tfjob_it_support import (
    INDEX_LABEL,
    JOB_NAME_LABEL,
    KIND,
    OPERATOR_LABEL,
    TYPE_LABEL,
    condition,
    event_pairs,
    is_true,
    job_pods,
    job_services,
    live_pods,
    pod_events,
    replica,
    succeed,
    tf_config_of,
    tf_manifest,
)

from airflow_broadcast.cluster.job_records import PHASE_LABEL

pytestmark = pytest.mark.cluster


def test_E6_onfailure_pod_in_phase_failed_is_recreated(engine: Any, namespace: str,
                                                       core_api: client.CoreV1Api) -> None:
    annotations = succeed("5s", exit_code="1", fail_until=fail_until(4))
    manifest = tf_manifest("evicted", {"Worker": replica(1, "OnFailure", annotations=annotations)})
    with pod_events(core_api, namespace, "evicted") as pods:
        outcome = engine.drive(engine.submit(manifest), KIND, timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "evicted")
    assert is_true(status, "Succeeded")
    assert len({uid for _, (_, uid, _) in pods.events}) == 2, "the Failed pod was replaced once"
    assert ("TFJobRestarting", "job evicted is restarting because Worker replica(s) failed.") in \
        event_pairs(engine, "evicted")
    assert engine.record(KIND, "evicted").metadata.labels[PHASE_LABEL] == "succeeded"  # as kubectl -L shows it


def test_E13_a_succeeded_replica_is_not_recreated_when_its_pod_disappears(
        engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    manifest = tf_manifest("keepdone", {"Chief": replica(1), "Worker": replica(1, annotations=succeed("500ms"))})
    submission = engine.submit(manifest)
    engine.drive(submission, KIND, single_pass=True)
    wait_until(lambda: job_pods(core_api, namespace, "keepdone")["keepdone-worker-0"].status.phase == "Succeeded",
               timeout=30, what="worker-0 succeeded")
    engine.drive(submission, KIND, single_pass=True)
    assert engine.status(KIND, "keepdone")["replicaStatuses"]["Worker"] == {"succeeded": 1}

    core_api.delete_namespaced_pod("keepdone-worker-0", namespace, grace_period_seconds=0)
    wait_until(lambda: "keepdone-worker-0" not in job_pods(core_api, namespace, "keepdone"), timeout=30,
               what="worker-0 gone (garbage-collected / evicted)")
    outcome = engine.drive(submission, KIND, single_pass=True)

    assert outcome.reason == "pending", "the chief still runs"
    assert sorted(job_pods(core_api, namespace, "keepdone")) == ["keepdone-chief-0"], "not re-run (Q3 fix)"
    assert engine.status(KIND, "keepdone")["replicaStatuses"]["Worker"] == {"succeeded": 1}


def test_C1_deleted_service_is_recreated_while_the_job_runs(engine: Any, namespace: str,
                                                         core_api: client.CoreV1Api) -> None:
    submission = engine.submit(tf_manifest("dns", {"Worker": replica(2)}))
    engine.drive(submission, KIND, single_pass=True)
    before = job_services(core_api, namespace, "dns")["dns-worker-1"].metadata.uid
    core_api.delete_namespaced_service("dns-worker-1", namespace)
    wait_until(lambda: "dns-worker-1" not in job_services(core_api, namespace, "dns"), timeout=30,
               what="service gone")

    engine.drive(submission, KIND, single_pass=True)

    services = job_services(core_api, namespace, "dns")
    assert sorted(services) == ["dns-worker-0", "dns-worker-1"]
    assert services["dns-worker-1"].metadata.uid != before
    assert services["dns-worker-1"].spec.cluster_ip == "None"


def test_E3_E2_scale_up_then_down(engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    submission = engine.submit(tf_manifest("elastic", {"PS": replica(1), "Worker": replica(2)}))
    engine.drive(submission, KIND, single_pass=True)
    first_config = tf_config_of(job_pods(core_api, namespace, "elastic")["elastic-worker-0"])

    engine.edit_manifest(KIND, "elastic", lambda m: m["spec"]["tfReplicaSpecs"]["Worker"].update(replicas=3))
    wait_until(lambda: json.loads(engine.record(KIND, "elastic").data["manifest"])["spec"]["tfReplicaSpecs"]
               ["Worker"]["replicas"] == 3, timeout=10, what="edit stored")
    engine.drive(submission, KIND, single_pass=True)
    pods = job_pods(core_api, namespace, "elastic")
    assert sorted(pods) == ["elastic-ps-0", "elastic-worker-0", "elastic-worker-1", "elastic-worker-2"]
    assert "elastic-worker-2" in job_services(core_api, namespace, "elastic")
    assert tf_config_of(pods["elastic-worker-0"]) == first_config, "TF_CONFIG is fixed at pod creation"
    (config,) = tf_config_of(pods["elastic-worker-2"])
    assert f'"elastic-worker-2.{namespace}.svc:2222"]' in config

    engine.edit_manifest(KIND, "elastic", lambda m: m["spec"]["tfReplicaSpecs"]["Worker"].update(replicas=1))
    engine.drive(submission, KIND, single_pass=True)
    wait_until(lambda: sorted(live_pods(core_api, namespace, "elastic")) == ["elastic-ps-0", "elastic-worker-0"]
               and sorted(job_services(core_api, namespace, "elastic")) == ["elastic-ps-0", "elastic-worker-0"],
               timeout=30, what="workers 1 and 2 removed")
    status = engine.status(KIND, "elastic")
    assert not is_true(status, "Failed"), "scaling down is not a failure"
    assert condition(status, "Restarting") is None


def test_C6_a_pod_with_the_job_labels_but_no_owner_is_ignored(engine: Any, namespace: str,
                                                              core_api: client.CoreV1Api) -> None:
    labels = {OPERATOR_LABEL: "tfjob-controller", JOB_NAME_LABEL: "owned", TYPE_LABEL: "worker", INDEX_LABEL: "0"}
    core_api.create_namespaced_pod(namespace, {"metadata": {"name": "intruder", "labels": labels},
                                               "spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}})
    engine.drive(engine.submit(tf_manifest("owned", {"Worker": replica(1)})), KIND, single_pass=True)

    pods = job_pods(core_api, namespace, "owned")
    assert sorted(pods) == ["intruder", "owned-worker-0"], "worker-0 created although a look-alike exists"
    assert pods["intruder"].metadata.owner_references is None and pods["intruder"].metadata.deletion_timestamp is None


def evict(core_api: client.CoreV1Api, namespace: str, pod: str) -> None:
    """What the kubelet writes for an eviction: phase Failed, no terminated container."""
    core_api.patch_namespaced_pod_status(pod, namespace, {"status": {
        "phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}})


def test_E9_exitcode_pod_failed_without_exit_code_is_restarted(engine: Any, namespace: str,
                                                               core_api: client.CoreV1Api) -> None:
    submission = engine.submit(tf_manifest("evict", {"Worker": replica(2, "ExitCode")}))
    engine.drive(submission, KIND, single_pass=True)
    wait_until(lambda: job_pods(core_api, namespace, "evict")["evict-worker-0"].status.phase == "Running",
               timeout=30, what="worker-0 running")
    before = job_pods(core_api, namespace, "evict")["evict-worker-0"].metadata.uid
    evict(core_api, namespace, "evict-worker-0")
    wait_until(lambda: job_pods(core_api, namespace, "evict")["evict-worker-0"].status.phase == "Failed",
               timeout=30, what="worker-0 evicted")

    engine.drive(submission, KIND, single_pass=True)
    status = engine.status(KIND, "evict")
    assert is_true(status, "Restarting") and not is_true(status, "Failed"), "0xbeef counts as retryable (Q11)"
    wait_until(lambda: job_pods(core_api, namespace, "evict").get("evict-worker-0") is None
               or job_pods(core_api, namespace, "evict")["evict-worker-0"].metadata.uid != before,
               timeout=30, what="evicted pod deleted")
    engine.drive(submission, KIND, single_pass=True)
    assert job_pods(core_api, namespace, "evict")["evict-worker-0"].metadata.uid != before, "re-created"
    assert engine.status(KIND, "evict")["controllerRestarts"] == {"Worker": 1}


def test_N10_evicted_never_pod_names_the_eviction_as_the_cause(engine: Any, namespace: str,
                                                               core_api: client.CoreV1Api) -> None:
    submission = engine.submit(tf_manifest("lost", {"Worker": replica(2, "Never")}))
    engine.drive(submission, KIND, single_pass=True)
    wait_until(lambda: job_pods(core_api, namespace, "lost")["lost-worker-1"].status.phase == "Running",
               timeout=30, what="worker-1 running")
    evict(core_api, namespace, "lost-worker-1")
    wait_until(lambda: job_pods(core_api, namespace, "lost")["lost-worker-1"].status.phase == "Failed",
               timeout=30, what="worker-1 evicted")

    outcome = engine.drive(submission, KIND, timeout=30)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "lost")
    assert condition(status, "Failed")["message"] == \
        f"TFJob {namespace}/lost has failed because 1 Worker replica(s) failed."
    assert status["failure"] == {"replicaType": "Worker", "index": 1, "pod": "lost-worker-1", "exitCode": None,
                                 "reason": "Evicted", "message": "The node was low on resource: memory."}
