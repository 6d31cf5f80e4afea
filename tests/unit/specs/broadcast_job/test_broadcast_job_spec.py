"""BroadcastJob manifests: upstream admission (W1-W8), our extra checks (V13-V19) and defaults (A1-A11)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from airflow_broadcast.specs.broadcast_job import (
    BroadcastJobSpec,
    broadcast_job_warnings,
    parse_broadcast_job,
    to_manifest,
    validate_broadcast_job,
)
from airflow_broadcast.specs.broadcast_job import spec as bcj
from airflow_broadcast.specs.broadcast_job.spec import CompletionPolicy, FailurePolicy
from airflow_broadcast.specs.field_errors import InvalidSpecError
from airflow_broadcast.specs.manifest_text import ManifestError

TTL_SAMPLE = """
apiVersion: apps.kruise.io/v1beta1
kind: BroadcastJob
metadata:
  name: broadcastjob-ttl
spec:
  template:
    spec:
      containers:
        - name: pi
          image: perl
          command: ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"]
      restartPolicy: Never
  completionPolicy:
    type: Always
    ttlSecondsAfterFinished: 30
"""

ACTIVE_DEADLINE_SAMPLE = """
apiVersion: apps.kruise.io/v1beta1
kind: BroadcastJob
metadata:
  name: broadcastjob-active-deadline
spec:
  template:
    spec:
      containers:
        - name: sleep
          image: busybox
          command: ["sleep", "50000"]
      restartPolicy: Never
  completionPolicy:
    type: Always
    activeDeadlineSeconds: 10
"""

NEVER_COMPLETE_SAMPLE = """
apiVersion: apps.kruise.io/v1beta1
kind: BroadcastJob
metadata:
  name: broadcastjob-never-complete
spec:
  template:
    spec:
      containers:
        - name: sleep
          image: busybox
          command: ["sleep", "5"]
      restartPolicy: Never
  completionPolicy:
    type: Never
"""

TTL_SAMPLE_V1ALPHA1 = TTL_SAMPLE.replace("apps.kruise.io/v1beta1", "apps.kruise.io/v1alpha1")

NAME_REGEX_MSG = (
    "BroadcastJob name must consist of alphanumeric characters or '-' "
    "(e.g. 'example-com', regex used for validation is '^[a-zA-Z0-9\\-]+$')"
)


def job(name: str = "check-nodes", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}], "restartPolicy": "Never"}}
    }
    body.update(spec)
    return {"apiVersion": bcj.API_VERSION, "kind": "BroadcastJob", "metadata": {"name": name}, "spec": body}


def pod_spec(manifest: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = manifest["spec"]["template"]["spec"]
    return result


def errors_of(manifest: Any, **kwargs: Any) -> list[str]:
    return [str(e) for e in validate_broadcast_job(manifest, **kwargs)]


def paths_of(manifest: Any) -> list[str]:
    return [e.path for e in validate_broadcast_job(manifest)]


# Documentation samples


@pytest.mark.parametrize("text", [TTL_SAMPLE, ACTIVE_DEADLINE_SAMPLE, NEVER_COMPLETE_SAMPLE, TTL_SAMPLE_V1ALPHA1])
def test_openkruise_documentation_samples_parse_unchanged(text: str) -> None:
    spec = parse_broadcast_job(text)
    again = parse_broadcast_job(to_manifest(spec))
    assert again == BroadcastJobSpec(**{**spec.__dict__, "api_version": bcj.API_VERSION})


def test_documentation_samples_have_the_documented_values() -> None:
    ttl = parse_broadcast_job(TTL_SAMPLE)
    assert ttl.name == "broadcastjob-ttl"
    assert ttl.completion_policy == CompletionPolicy(type="Always", ttl_seconds_after_finished=30)
    assert ttl.template["spec"]["containers"][0]["command"] == ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"]
    deadline = parse_broadcast_job(ACTIVE_DEADLINE_SAMPLE)
    assert deadline.completion_policy == CompletionPolicy(type="Always", active_deadline_seconds=10)
    never = parse_broadcast_job(NEVER_COMPLETE_SAMPLE)
    assert never.completion_policy == CompletionPolicy(type="Never")


# A. Schema and defaults


def test_A1_group_kind_plural_and_versions() -> None:
    names = (bcj.GROUP, bcj.KIND, bcj.PLURAL, bcj.SHORT_NAME)
    assert names == ("apps.kruise.io", "BroadcastJob", "broadcastjobs", "bcj")
    assert bcj.VERSIONS == ("v1alpha1", "v1beta1")
    assert bcj.API_VERSION == "apps.kruise.io/v1beta1"
    assert bcj.RESERVED_LABELS == ("broadcastjob-name", "broadcastjob-controller-uid")


def test_A1_v1alpha1_converts_losslessly_to_v1beta1() -> None:
    alpha = parse_broadcast_job(TTL_SAMPLE_V1ALPHA1)
    beta = parse_broadcast_job(TTL_SAMPLE)
    assert alpha.api_version == "apps.kruise.io/v1alpha1"
    assert to_manifest(alpha) == to_manifest(beta)
    assert to_manifest(alpha)["apiVersion"] == "apps.kruise.io/v1beta1"


def test_A1_a_full_manifest_round_trips() -> None:
    manifest = job(
        parallelism="40%", paused=True,
        completionPolicy={"type": "Always", "activeDeadlineSeconds": 60, "ttlSecondsAfterFinished": 0},
        failurePolicy={"type": "Continue", "restartLimit": 3},
    )
    manifest["metadata"].update(namespace="ops", labels={"team": "infra"}, annotations={"note": "x"})
    pod_spec(manifest)["restartPolicy"] = "OnFailure"
    spec = parse_broadcast_job(manifest)
    assert to_manifest(spec) == manifest
    assert parse_broadcast_job(to_manifest(spec)) == spec


def test_A2_template_is_required() -> None:
    manifest = job()
    del manifest["spec"]["template"]
    assert errors_of(manifest) == ["spec.template: Required value"]


def test_A2_every_other_spec_field_is_optional() -> None:
    assert validate_broadcast_job(job()) == []


def test_A3_absent_parallelism_defaults_to_maxint32() -> None:
    assert parse_broadcast_job(job()).parallelism == 2147483647
    assert parse_broadcast_job(job(parallelism=None)).parallelism == 2147483647
    assert to_manifest(parse_broadcast_job(job()))["spec"]["parallelism"] == 2147483647


def test_A3_given_parallelism_is_kept_as_int_or_percent() -> None:
    assert parse_broadcast_job(job(parallelism=0)).parallelism == 0
    assert parse_broadcast_job(job(parallelism="50%")).parallelism == "50%"


@pytest.mark.parametrize("policy", [None, {}, {"type": ""}, {"type": None}])
def test_A4_absent_or_empty_completion_type_defaults_to_always(policy: Any) -> None:
    spec = parse_broadcast_job(job(completionPolicy=policy))
    assert spec.completion_policy.type == "Always"
    assert to_manifest(spec)["spec"]["completionPolicy"] == {"type": "Always"}


@pytest.mark.parametrize("policy", [None, {}, {"type": ""}, {"type": None}])
def test_A5_absent_or_empty_failure_type_defaults_to_failfast(policy: Any) -> None:
    spec = parse_broadcast_job(job(failurePolicy=policy))
    assert spec.failure_policy.type == "FailFast"
    assert to_manifest(spec)["spec"]["failurePolicy"]["type"] == "FailFast"


def test_A6_restart_limit_paused_deadline_and_ttl_defaults() -> None:
    spec = parse_broadcast_job(job())
    assert spec.failure_policy == FailurePolicy(type="FailFast", restart_limit=0)
    assert spec.paused is False
    assert spec.completion_policy.active_deadline_seconds is None
    assert spec.completion_policy.ttl_seconds_after_finished is None
    spec_section = to_manifest(spec)["spec"]
    assert "paused" not in spec_section
    assert "restartLimit" not in spec_section["failurePolicy"]
    assert spec_section["completionPolicy"] == {"type": "Always"}


def test_A7_a_client_supplied_status_is_discarded() -> None:
    manifest = job()
    manifest["status"] = {"phase": "completed", "active": "garbage", "conditions": [{"type": "Complete"}]}
    assert validate_broadcast_job(manifest) == []
    assert "status" not in to_manifest(parse_broadcast_job(manifest))


def test_A11_V6_an_empty_restart_policy_is_defaulted_to_always_then_rejected() -> None:
    for value in (None, ""):
        manifest = job()
        if value is None:
            del pod_spec(manifest)["restartPolicy"]
        else:
            pod_spec(manifest)["restartPolicy"] = value
        assert errors_of(manifest) == [
            'spec.template.spec.restartPolicy: Invalid value: "Always": '
            "pod restartPolicy can only be Never or OnFailure"
        ]


def test_namespace_precedence_argument_then_metadata_then_default() -> None:
    manifest = job()
    assert parse_broadcast_job(manifest).namespace == "default"
    assert parse_broadcast_job(manifest, default_namespace="fallback").namespace == "fallback"
    manifest["metadata"]["namespace"] = "from-meta"
    assert parse_broadcast_job(manifest, default_namespace="fallback").namespace == "from-meta"
    assert parse_broadcast_job(manifest, namespace="from-arg").namespace == "from-arg"


def test_an_invalid_namespace_is_reported() -> None:
    assert paths_of(job()) == []
    assert [e.path for e in validate_broadcast_job(job(), namespace="Bad_NS")] == ["metadata.namespace"]


def test_parsing_does_not_modify_the_callers_manifest() -> None:
    manifest = job(completionPolicy={})
    before = copy.deepcopy(manifest)
    spec = parse_broadcast_job(manifest)
    spec.template["spec"]["containers"].append({"name": "x"})
    assert manifest == before


def test_unknown_spec_fields_are_ignored() -> None:
    assert validate_broadcast_job(job(somethingNew={"a": 1})) == []


def test_wrong_api_version_and_kind_are_reported() -> None:
    manifest = job()
    manifest["apiVersion"] = "apps/v1"
    manifest["kind"] = "Job"
    assert errors_of(manifest) == [
        'apiVersion: Unsupported value: "apps/v1": supported values: "apps.kruise.io/v1alpha1", '
        '"apps.kruise.io/v1beta1"',
        'kind: Unsupported value: "Job": supported values: "BroadcastJob"',
    ]
    del manifest["apiVersion"], manifest["kind"]
    assert paths_of(manifest) == ["apiVersion", "kind"]


def test_missing_name_and_missing_or_wrong_spec() -> None:
    assert errors_of({"apiVersion": bcj.API_VERSION, "kind": "BroadcastJob", "metadata": {}}) == [
        "metadata.name: Required value", "spec: Required value"]
    manifest = job()
    manifest["spec"] = ["x"]
    assert errors_of(manifest) == ["spec: Invalid value: ['x']: must be an object"]
    assert paths_of(["not", "a", "mapping"]) == ["<root>"]


def test_upper_case_names_are_rejected_as_the_apiserver_does() -> None:
    errors = validate_broadcast_job(job("Check-Nodes"))
    assert [e.path for e in errors] == ["metadata.name"]
    assert errors[0].message.startswith("a lowercase RFC 1123 subdomain must consist of lower case")


def test_job_labels_and_annotations_are_validated() -> None:
    manifest = job()
    manifest["metadata"]["labels"] = {"ok": "bad value"}
    manifest["metadata"]["annotations"] = {"bad key!": "x"}
    assert paths_of(manifest) == ["metadata.labels", "metadata.annotations"]


# B. Validation


def test_V1_name_with_a_dot_is_rejected_with_upstream_message() -> None:
    assert errors_of(job("check.nodes")) == [f'metadata.name: Invalid value: "check.nodes": {NAME_REGEX_MSG}']


def test_V2_name_of_64_chars_is_rejected_and_63_passes_the_upstream_rule() -> None:
    long_name = "a" * 64
    assert errors_of(job(long_name)) == [
        f'metadata.name: Invalid value: "{long_name}": must be no more than 63 characters']
    assert validate_broadcast_job(job("a" * 63)) == []


def test_V3_never_with_ttl_is_rejected_with_upstream_message() -> None:
    manifest = job(completionPolicy={"type": "Never", "ttlSecondsAfterFinished": 30})
    assert errors_of(manifest) == [
        "spec.completionPolicy.ttlSecondsAfterFinished: Invalid value: 30: "
        "ttlSecondsAfterFinished can just work with Always CompletionPolicyType"]


def test_V4_never_with_active_deadline_is_rejected_with_upstream_message() -> None:
    manifest = job(completionPolicy={"type": "Never", "activeDeadlineSeconds": 10})
    assert errors_of(manifest) == [
        "spec.completionPolicy.activeDeadlineSeconds: Invalid value: 10: "
        "activeDeadlineSeconds can just work with Always CompletionPolicyType"]


def test_V5_always_with_ttl_and_deadline_is_accepted() -> None:
    manifest = job(completionPolicy={"type": "Always", "activeDeadlineSeconds": 10, "ttlSecondsAfterFinished": 30})
    spec = parse_broadcast_job(manifest)
    assert spec.completion_policy == CompletionPolicy("Always", 10, 30)


def test_V6_restart_policy_always_is_rejected_with_upstream_message() -> None:
    manifest = job()
    pod_spec(manifest)["restartPolicy"] = "Always"
    assert errors_of(manifest) == [
        'spec.template.spec.restartPolicy: Invalid value: "Always": pod restartPolicy can only be Never or OnFailure']


@pytest.mark.parametrize("policy", ["Never", "OnFailure"])
def test_V7_restart_policy_never_and_on_failure_are_accepted(policy: str) -> None:
    manifest = job()
    pod_spec(manifest)["restartPolicy"] = policy
    assert validate_broadcast_job(manifest) == []


@pytest.mark.parametrize("label", ["broadcastjob-name", "broadcastjob-controller-uid"])
def test_V8_reserved_template_labels_with_a_value_are_rejected(label: str) -> None:
    manifest = job()
    manifest["spec"]["template"]["metadata"] = {"labels": {label: "x", "app": "y"}}
    errors = validate_broadcast_job(manifest)
    assert [(e.path, e.kind, e.value) for e in errors] == [
        ("spec.template.metadata.labels", "Invalid", {label: "x", "app": "y"})]
    assert errors[0].message == (
        '"broadcastjob-name" and "broadcastjob-controller-uid" are not allowed to preset in pod labels')


def test_V8_reserved_template_labels_with_an_empty_value_are_accepted() -> None:
    manifest = job()
    manifest["spec"]["template"]["metadata"] = {"labels": {"broadcastjob-name": "", "broadcastjob-controller-uid": ""}}
    assert validate_broadcast_job(manifest) == []


def test_V9_core_pod_template_errors_are_reported_under_spec_template() -> None:
    manifest = job()
    pod_spec(manifest)["containers"] = []
    assert errors_of(manifest) == ["spec.template.spec.containers: Required value"]


def test_V10_all_errors_in_upstream_order() -> None:
    manifest = job(
        "bad.name",
        completionPolicy={"type": "Never", "ttlSecondsAfterFinished": 5, "activeDeadlineSeconds": 5},
        template={"metadata": {"labels": {"broadcastjob-name": "x"}},
                  "spec": {"restartPolicy": "Always", "containers": [{"name": "main"}]}},
        parallelism=-1,
    )
    assert paths_of(manifest) == [
        "metadata.name",
        "spec.completionPolicy.ttlSecondsAfterFinished",
        "spec.completionPolicy.activeDeadlineSeconds",
        "spec.template.spec.restartPolicy",
        "spec.template.metadata.labels",
        "spec.template.spec.containers[0].image",
        "spec.parallelism",
    ]


def test_V11_updates_are_validated_the_same_and_no_field_is_immutable() -> None:
    original = parse_broadcast_job(job())
    changed = job(parallelism="10%", paused=True, failurePolicy={"type": "Pause"},
                  completionPolicy={"type": "Never"})
    pod_spec(changed)["containers"][0]["image"] = "busybox:1.36"
    updated = parse_broadcast_job(changed)
    assert updated != original
    assert (updated.parallelism, updated.paused, updated.failure_policy.type) == ("10%", True, "Pause")
    broken = copy.deepcopy(changed)
    pod_spec(broken)["restartPolicy"] = "Always"
    with pytest.raises(InvalidSpecError):
        parse_broadcast_job(broken)


@pytest.mark.parametrize("text", ["apiVersion: [unclosed", "- a\n- b\n", "kind: A\n---\nkind: B\n", ""])
def test_V12_undecodable_input_is_rejected(text: str) -> None:
    with pytest.raises(ManifestError, match=r"^BroadcastJob manifest "):
        parse_broadcast_job(text)


@pytest.mark.parametrize(
    ("value", "message"),
    [(-1, "must be greater than or equal to 0"),
     ("5", 'a string must be a percentage such as "50%"; write a plain number without quotes for a pod count'),
     ("abc", 'a string must be a percentage such as "50%"; write a plain number without quotes for a pod count'),
     ("5.5%", 'a percentage must be a whole non-negative number followed by "%", e.g. "50%"'),
     ("-3%", 'a percentage must be a whole non-negative number followed by "%", e.g. "50%"')],
)
def test_V13_invalid_parallelism_is_rejected(value: Any, message: str) -> None:
    errors = validate_broadcast_job(job(parallelism=value))
    assert [(e.path, e.message) for e in errors] == [("spec.parallelism", message)]


@pytest.mark.parametrize("value", [0, 5, "0%", "40%", "150%"])
def test_V13_valid_parallelism_including_over_100_percent_is_accepted(value: Any) -> None:
    assert validate_broadcast_job(job(parallelism=value)) == []


def test_V14_unknown_policy_types_are_rejected() -> None:
    manifest = job(completionPolicy={"type": "Sometimes"}, failurePolicy={"type": "Retry"})
    assert errors_of(manifest) == [
        'spec.completionPolicy.type: Unsupported value: "Sometimes": supported values: "Always", "Never"',
        'spec.failurePolicy.type: Unsupported value: "Retry": supported values: "Continue", "FailFast", "Pause"',
    ]


def test_V15_negative_limits_and_non_positive_deadline_are_rejected() -> None:
    manifest = job(failurePolicy={"restartLimit": -1},
                   completionPolicy={"activeDeadlineSeconds": 0, "ttlSecondsAfterFinished": -5})
    assert errors_of(manifest) == [
        "spec.failurePolicy.restartLimit: Invalid value: -1: must be greater than or equal to 0",
        "spec.completionPolicy.activeDeadlineSeconds: Invalid value: 0: must be greater than 0",
        "spec.completionPolicy.ttlSecondsAfterFinished: Invalid value: -5: must be greater than or equal to 0",
    ]


def test_V15_wrongly_typed_policy_values_are_rejected() -> None:
    manifest = job(failurePolicy={"restartLimit": "3"}, completionPolicy={"ttlSecondsAfterFinished": True},
                   paused="yes")
    assert [(e.path, e.message) for e in validate_broadcast_job(manifest)] == [
        ("spec.failurePolicy.restartLimit", "must be an integer"),
        ("spec.completionPolicy.ttlSecondsAfterFinished", "must be an integer"),
        ("spec.paused", "must be a boolean"),
    ]
    assert paths_of(job(failurePolicy="FailFast")) == ["spec.failurePolicy"]


def test_V15_zero_ttl_and_zero_restart_limit_are_accepted() -> None:
    assert validate_broadcast_job(job(failurePolicy={"restartLimit": 0},
                                      completionPolicy={"ttlSecondsAfterFinished": 0})) == []


def test_V16_a_template_node_name_is_forbidden() -> None:
    manifest = job()
    pod_spec(manifest)["nodeName"] = "node-1"
    errors = validate_broadcast_job(manifest)
    assert [(e.path, e.kind) for e in errors] == [("spec.template.spec.nodeName", "Forbidden")]
    assert "every pod on the same node" in errors[0].message


def test_V17_restart_limit_with_restart_policy_never_is_a_warning_not_an_error() -> None:
    """OpenKruise's own restartLimit sample uses restartPolicy Never: it must still run unchanged."""
    manifest = job(failurePolicy={"type": "FailFast", "restartLimit": 3})
    assert validate_broadcast_job(manifest) == []
    assert broadcast_job_warnings(manifest) == [
        "spec.failurePolicy.restartLimit: 3 has no effect unless spec.template.spec.restartPolicy is OnFailure "
        "(pods with restartPolicy Never are never restarted)"]
    pod_spec(manifest)["restartPolicy"] = "OnFailure"
    assert broadcast_job_warnings(manifest) == []


@pytest.mark.parametrize("length", [52, 53, 62, 63])
def test_V19_every_name_upstream_accepts_is_valid_however_long_the_pod_suffix(length: int) -> None:
    """Pod names shorten a long job name (see the reconciler's P11/V19 tests), so no length below 64 is refused."""
    name = ("job-" * 16)[:length - 1] + "x"
    assert validate_broadcast_job(job(name)) == []


def test_V20_parse_raises_one_error_listing_every_problem() -> None:
    manifest = job("bad.name", parallelism="x")
    with pytest.raises(InvalidSpecError) as caught:
        parse_broadcast_job(manifest)
    assert caught.value.kind == "BroadcastJob"
    assert caught.value.name == "bad.name"
    assert [e.path for e in caught.value.errors] == ["metadata.name", "spec.parallelism"]
    assert "BroadcastJob bad.name is invalid (2 error(s))" in str(caught.value)
