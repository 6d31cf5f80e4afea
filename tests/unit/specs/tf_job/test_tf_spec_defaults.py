"""Section A: defaulting and API shape of TFJobSpec (tfjob.md §1.2-§1.4)."""

from __future__ import annotations

import copy

import pytest
from support.tf_builders import NOW, TFCluster, container, make_spec, manifest, replica

from airflow_broadcast.reconcilers.tf_job.status import CONDITION_TYPES, last_condition_type
from airflow_broadcast.specs.field_errors import InvalidSpecError
from airflow_broadcast.specs.tf_job import default_tf_job, parse_tf_job, to_manifest, validate_tf_job
from airflow_broadcast.specs.tf_job.spec import CHIEF, MASTER, WORKER, is_chief_or_master


def test_A1_clean_pod_policy_defaults_to_none() -> None:
    assert make_spec().run_policy.clean_pod_policy == "None"
    assert default_tf_job(manifest())["spec"]["runPolicy"]["cleanPodPolicy"] == "None"


def test_A2_success_policy_defaults_to_empty() -> None:
    assert make_spec().success_policy == ""
    assert default_tf_job(manifest())["spec"]["successPolicy"] == ""


@pytest.mark.parametrize(("key", "canonical"), [
    ("worker", "Worker"), ("WORKER", "Worker"), ("ps", "PS"), ("Ps", "PS"), ("chief", "Chief"),
    ("master", "Master"), ("evaluator", "Evaluator"), ("EVALUATOR", "Evaluator"),
])
def test_A3_replica_keys_are_normalised(key: str, canonical: str) -> None:
    spec = make_spec(replicas={key: 1, **({} if canonical == "Worker" else {"Worker": 1})})
    assert canonical in spec.replica_specs
    assert key == canonical or key not in spec.replica_specs


def test_A3_unknown_replica_keys_are_kept_as_written() -> None:
    spec = make_spec(replicas={"Worker": 1, "Custom": 1}, strict=False)
    assert list(spec.replica_specs) == ["Worker", "Custom"]


def test_A4_replicas_default_to_one() -> None:
    spec = make_spec(replicas={"Worker": replica(None), "PS": replica(None)})
    assert spec.replica_specs["Worker"].replicas == 1
    assert spec.replica_specs["PS"].replicas == 1


def test_A5_restart_policy_defaults_to_never() -> None:
    assert make_spec(replicas={"Worker": replica(2)}).replica_specs["Worker"].restart_policy == "Never"
    assert make_spec(replicas={"Worker": replica(2, "")}).replica_specs["Worker"].restart_policy == "Never"


def test_A6_default_port_is_appended_after_custom_ports() -> None:
    tf = container(ports=[{"name": "grpc", "containerPort": 5000}])
    spec = make_spec(replicas={"Worker": replica(1, containers=[container("sidecar"), tf])})
    containers = spec.replica_specs["Worker"].template["spec"]["containers"]
    assert "ports" not in containers[0]
    assert containers[1]["ports"] == [{"name": "grpc", "containerPort": 5000},
                                      {"name": "tfjob-port", "containerPort": 2222}]


def test_A6_existing_tfjob_port_is_kept() -> None:
    tf = container(ports=[{"name": "tfjob-port", "containerPort": 3333}])
    spec = make_spec(replicas={"Worker": replica(1, containers=[tf])})
    ports = spec.replica_specs["Worker"].template["spec"]["containers"][0]["ports"]
    assert ports == [{"name": "tfjob-port", "containerPort": 3333}]


def test_A7_without_tensorflow_container_the_port_goes_to_container_zero() -> None:
    raw = manifest(replicas={"Worker": replica(1, containers=[container("main"), container("other")])})
    defaulted = default_tf_job(raw)
    containers = defaulted["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert containers[0]["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]
    assert "ports" not in containers[1]
    assert any("must have at least one container with name tensorflow" in str(e) for e in validate_tf_job(raw))


def test_A8_defaults_are_applied_in_memory_only() -> None:
    raw = manifest(replicas={"worker": replica(None)})
    before = copy.deepcopy(raw)
    spec = parse_tf_job(raw)
    default_tf_job(raw)
    assert raw == before
    assert spec.replica_specs["Worker"].replicas == 1


def test_A8_to_manifest_round_trips_and_only_suspend_is_rendered_by_default() -> None:
    spec = make_spec(
        replicas={"Chief": 1, "PS": 2, "Worker": 3},
        run_policy={"ttlSecondsAfterFinished": 60, "backoffLimit": 3, "activeDeadlineSeconds": 10,
                    "schedulingPolicy": {"queue": "q", "minAvailable": 2},
                    "managedBy": "kubeflow.org/training-operator"},
        successPolicy="AllWorkers", enableDynamicWorker=True)
    rendered = to_manifest(spec)
    assert parse_tf_job(rendered) == spec
    assert rendered["spec"]["runPolicy"]["suspend"] is False
    assert parse_tf_job(to_manifest(make_spec())) == make_spec()


def test_A9_chief_and_master_are_the_master_roles() -> None:
    assert is_chief_or_master(CHIEF) and is_chief_or_master(MASTER)
    assert not is_chief_or_master(WORKER)


def test_A10_manifest_field_names_match_the_crd() -> None:
    spec = make_spec(run_policy={"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 5, "activeDeadlineSeconds": 6,
                                 "backoffLimit": 7, "suspend": True,
                                 "schedulingPolicy": {"minAvailable": 1, "queue": "q", "minResources": {"cpu": "1"},
                                                      "priorityClass": "high", "scheduleTimeoutSeconds": 9},
                                 "managedBy": "kueue.x-k8s.io/multikueue"},
                     successPolicy="AllWorkers", enableDynamicWorker=True)
    body = to_manifest(spec)["spec"]
    assert set(body) == {"runPolicy", "tfReplicaSpecs", "successPolicy", "enableDynamicWorker"}
    assert set(body["runPolicy"]) == {"cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds",
                                      "backoffLimit", "suspend", "schedulingPolicy", "managedBy"}
    assert set(body["runPolicy"]["schedulingPolicy"]) == {"minAvailable", "queue", "minResources", "priorityClass",
                                                          "scheduleTimeoutSeconds"}
    assert set(body["tfReplicaSpecs"]["Worker"]) == {"replicas", "restartPolicy", "template"}


def test_A10_status_field_names_match_the_crd() -> None:
    cluster = TFCluster(make_spec(replicas={"Worker": 2}))
    cluster.step()
    cluster.set_phase("Running")
    cluster.step(NOW + 1)
    cluster.set_phase("Succeeded")
    cluster.step(NOW + 2)
    status = cluster.status
    assert {"conditions", "replicaStatuses", "startTime", "completionTime"} <= set(status)
    assert status["replicaStatuses"]["Worker"] == {"succeeded": 2}
    assert set(status["conditions"][0]) == {"type", "status", "reason", "message", "lastUpdateTime",
                                            "lastTransitionTime"}


def test_A11_state_is_the_type_of_the_last_condition() -> None:
    cluster = TFCluster(make_spec(replicas={"Worker": 1}))
    cluster.step()
    assert last_condition_type(cluster.status) == "Created"
    cluster.set_phase("Running")
    cluster.step(NOW + 1)
    assert last_condition_type(cluster.status) == "Running"
    cluster.set_phase("Succeeded")
    cluster.step(NOW + 2)
    assert last_condition_type(cluster.status) == "Succeeded"
    assert last_condition_type({}) == ""


def test_A12_only_upstream_condition_types_and_reasons_are_produced() -> None:
    cluster = TFCluster(make_spec(replicas={"Worker": 2}, restart_policy="OnFailure",
                                  run_policy={"suspend": True}))
    cluster.step()
    cluster.replace_spec(make_spec(replicas={"Worker": 2}, restart_policy="OnFailure"))
    cluster.step(NOW + 1)
    cluster.set_phase("Running")
    cluster.step(NOW + 2)
    cluster.set_pod("mnist-worker-1", "Failed", exit_code=137)
    cluster.step(NOW + 3)
    cluster.step(NOW + 4)
    cluster.set_phase("Succeeded")
    cluster.step(NOW + 5)
    seen = {(c["type"], c["reason"]) for c in cluster.status["conditions"]}
    assert {t for t, _ in seen} <= set(CONDITION_TYPES)
    assert all(reason in (f"TFJob{kind}", "TFJobResumed", "TFJobSuspended") for kind, reason in seen)
    assert ("Suspended", "TFJobResumed") in seen


def test_A_text_manifests_are_parsed_as_yaml() -> None:
    text = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: mnist}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: tensorflow, image: tf}]
"""
    spec = parse_tf_job(text, default_namespace="team-a")
    assert spec.namespace == "team-a" and spec.replica_specs["Worker"].replicas == 2
    assert parse_tf_job(text, namespace="other").namespace == "other"


@pytest.mark.parametrize(("text", "expected"), [
    ("metadata: {name: [unclosed", "malformed YAML"),
    ("- a\n- b\n", "must be a mapping"),
    ("", "empty document"),
])
def test_A_malformed_text_gives_a_clear_error(text: str, expected: str) -> None:
    with pytest.raises(InvalidSpecError) as raised:
        parse_tf_job(text)
    assert expected in str(raised.value)
    assert validate_tf_job(text) and expected in str(validate_tf_job(text)[0])
