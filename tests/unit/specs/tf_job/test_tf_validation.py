"""Section B: validation messages and paths (tfjob.md §1.5) plus the stricter rules (Δ)."""

from __future__ import annotations

from typing import Any

import pytest
from support.tf_builders import container, manifest, replica

from airflow_broadcast.specs.field_errors import InvalidSpecError
from airflow_broadcast.specs.tf_job import parse_tf_job, tf_job_warnings, validate_tf_job, validate_tf_job_update

DNS1035 = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
           "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
           "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
CONTAINERS = "spec.tfReplicaSpecs[Worker].template.spec.containers"


def messages(job: dict[str, Any], **kwargs: Any) -> list[str]:
    return [str(e) for e in validate_tf_job(job, **kwargs)]


def test_B_valid_manifest_has_no_errors() -> None:
    assert validate_tf_job(manifest(replicas={"Chief": 1, "PS": 2, "Worker": 4, "Evaluator": 1})) == []


def test_B1_name_must_be_a_dns1035_label() -> None:
    assert messages(manifest("00test")) == [f'metadata.name: Invalid value: "00test": should match: {DNS1035}']


def test_B2_name_longer_than_63_is_rejected() -> None:
    name = "a" * 64
    assert messages(manifest(name)) == [
        f'metadata.name: Invalid value: "{name}": should match: must be no more than 63 characters']
    assert validate_tf_job(manifest("a" * 63)) == []


def test_B3_names_upstream_accepts_are_valid_and_too_long_service_names_only_warn() -> None:
    """Upstream checks the name alone (V1), so a 63-character name passes even with `-worker-99` to add."""
    name = "a" * 54
    long_job = manifest(name, replicas={"Worker": 100})
    assert validate_tf_job(long_job) == []
    assert parse_tf_job(long_job).name == name
    [warning] = tf_job_warnings(long_job)
    assert f'the Service name "{name}-worker-99" is longer than 63 characters' in warning
    assert "FailedCreateService" in warning and "at most 53 characters" in warning
    assert tf_job_warnings(manifest(name, replicas={"Worker": 10})) == []  # "-worker-9" fits exactly
    [longest] = tf_job_warnings(manifest("a" * 63, replicas={"Evaluator": 1, "Worker": 1}))
    assert f'"{"a" * 63}-evaluator-0"' in longest and "at most 51 characters" in longest


def test_B4_replica_specs_are_required() -> None:
    job = manifest()
    del job["spec"]["tfReplicaSpecs"]
    assert messages(job) == ["spec.tfReplicaSpecs: Required value: must be required"]


def test_B5_no_containers_gives_two_errors() -> None:
    assert messages(manifest(replicas={"Worker": replica(1, containers=[])})) == [
        f"{CONTAINERS}: Required value: must be specified",
        f"{CONTAINERS}: Required value: must have at least one container with name tensorflow",
    ]


def test_B6_every_container_needs_an_image() -> None:
    job = manifest(replicas={"Worker": replica(1, containers=[container(), container("side", image="")])})
    assert messages(job) == [f"{CONTAINERS}[1].image: Required value: must be required"]


def test_B7_a_tensorflow_container_is_required() -> None:
    assert messages(manifest(replicas={"Worker": replica(1, containers=[container("main")])})) == [
        f"{CONTAINERS}: Required value: must have at least one container with name tensorflow"]


def test_B8_chief_and_master_are_mutually_exclusive() -> None:
    assert messages(manifest(replicas={"Chief": 1, "Master": 1, "Worker": 1})) == [
        "spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"]


def test_B9_managed_by_must_be_a_supported_value() -> None:
    assert messages(manifest(run_policy={"managedBy": "other"})) == [
        'spec.runPolicy.managedBy: Unsupported value: "other": supported values: '
        '"kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"']
    for value in ("kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"):
        assert validate_tf_job(manifest(run_policy={"managedBy": value})) == []


def test_B10_managed_by_is_immutable_on_update() -> None:
    old = manifest(run_policy={"managedBy": "kueue.x-k8s.io/multikueue"})
    new = manifest(run_policy={"managedBy": "kubeflow.org/training-operator"})
    assert [str(e) for e in validate_tf_job_update(new, old)] == [
        'spec.runPolicy.managedBy: Invalid value: "kubeflow.org/training-operator": field is immutable']
    assert validate_tf_job_update(old, old) == []


def test_B11_scheduling_queue_is_immutable_on_update() -> None:
    old = manifest(run_policy={"schedulingPolicy": {"queue": "a"}})
    new = manifest(run_policy={"schedulingPolicy": {"queue": "b"}})
    assert [str(e) for e in validate_tf_job_update(new, old)] == [
        'spec.runPolicy.schedulingPolicy: Invalid value: "object": '
        "spec.runPolicy.schedulingPolicy.queue is immutable"]
    assert validate_tf_job_update(new, manifest()) == []


def test_B12_null_replica_spec_is_an_error_not_a_crash() -> None:
    assert messages(manifest(replicas={"Worker": None})) == [
        f"{CONTAINERS}: Required value: must be specified",
        f"{CONTAINERS}: Required value: must have at least one container with name tensorflow",
    ]


@pytest.mark.parametrize(("job", "expected"), [
    (manifest(replicas={"Worker": -1}),
     "spec.tfReplicaSpecs[Worker].replicas: Invalid value: -1: must be greater than or equal to 0"),
    (manifest(replicas={"Worker": replica(1, "Sometimes")}),
     'spec.tfReplicaSpecs[Worker].restartPolicy: Unsupported value: "Sometimes": supported values: '
     '"Always", "OnFailure", "Never", "ExitCode"'),
    (manifest(run_policy={"cleanPodPolicy": "Some"}),
     'spec.runPolicy.cleanPodPolicy: Unsupported value: "Some": supported values: "None", "Running", "All"'),
    (manifest(successPolicy="AnyWorker"),
     'spec.successPolicy: Unsupported value: "AnyWorker": supported values: "", "AllWorkers"'),
    (manifest(replicas={"Worker": 1, "Custom": 1}),
     'spec.tfReplicaSpecs: Unsupported value: "Custom": supported values: '
     '"Chief", "Evaluator", "Master", "PS", "Worker"'),
    (manifest(replicas={"Chief": 2, "Worker": 1}),
     "spec.tfReplicaSpecs[Chief].replicas: Invalid value: 2: must be no more than 1 for a Chief replica"),
    (manifest(replicas={"Worker": 1, "worker": 1}), 'spec.tfReplicaSpecs[worker]: Duplicate value: "worker"'),
    (manifest(run_policy={"backoffLimit": -2}),
     "spec.runPolicy.backoffLimit: Invalid value: -2: must be greater than or equal to 0"),
    (manifest(replicas={"Worker": "two"}), 'spec.tfReplicaSpecs[Worker].replicas: Invalid value: "two": '
                                           "must be an integer"),
])
def test_B13_stricter_rules_reject_what_upstream_accepts(job: dict[str, Any], expected: str) -> None:
    assert messages(job) == [expected]


def test_B13_non_strict_mode_accepts_unknown_types_and_enum_values() -> None:
    job = manifest(replicas={"Worker": replica(1, "Sometimes"), "Custom": 1},
                   run_policy={"cleanPodPolicy": "Some"}, successPolicy="AnyWorker")
    warnings: list[str] = []
    assert validate_tf_job(job, strict=False, warnings=warnings) == []
    strict = [str(e) for e in validate_tf_job(job)]
    assert len(strict) == 4
    assert warnings == [f"accepted as upstream accepts it (strict=False): {e}" for e in strict], "warn only"
    assert messages(manifest(replicas={"Worker": -1}), strict=False)


def test_B13_api_version_and_kind_are_checked() -> None:
    job = manifest()
    job["apiVersion"] = "kubeflow.org/v2"
    del job["kind"]
    assert messages(job) == [
        'apiVersion: Unsupported value: "kubeflow.org/v2": supported values: "kubeflow.org/v1"',
        "kind: Required value: must be 'TFJob'"]


def test_B14_all_errors_are_reported_together() -> None:
    job = manifest("00test", replicas={"Chief": 1, "Master": 1,
                                       "Worker": replica(1, containers=[container("main", image="")])},
                   run_policy={"managedBy": "other"})
    with pytest.raises(InvalidSpecError) as raised:
        parse_tf_job(job)
    paths = [e.path for e in raised.value.errors]
    assert paths == ["metadata.name", "spec.runPolicy.managedBy", f"{CONTAINERS}[0].image", CONTAINERS,
                     "spec.tfReplicaSpecs"]
    assert "TFJob 00test is invalid (5 error(s))" in str(raised.value)
