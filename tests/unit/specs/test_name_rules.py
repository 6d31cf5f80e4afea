"""The one implementation of Kubernetes' name rules, and the kinds and predicates that use it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from airflow_broadcast.reconcilers.broadcast_job.node_eligibility import REASON_AFFINITY, check_template_fitness
from airflow_broadcast.reconcilers.observed import NodeInfo
from airflow_broadcast.specs.broadcast_job import validate_broadcast_job
from airflow_broadcast.specs.name_rules import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_env_var_name,
    is_qualified_name,
    is_valid_label_value,
    regex_errors,
)
from airflow_broadcast.specs.tf_job import validate_tf_job

DNS1035_FORMAT_ERROR = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        ("abc-123", []),
        ("a", []),
        ("1abc", [DNS1035_FORMAT_ERROR]),
        ("abc-", [DNS1035_FORMAT_ERROR]),
        ("a.b", [DNS1035_FORMAT_ERROR]),
        ("a" * 63, []),
        ("a" * 64, ["must be no more than 63 characters"]),
        ("1" * 64, ["must be no more than 63 characters", DNS1035_FORMAT_ERROR]),
    ],
)
def test_dns1035_label_reports_length_then_format_like_apimachinery(value: str, errors: list[str]) -> None:
    assert is_dns1035_label(value) == errors


@pytest.mark.parametrize(
    "rule", [is_dns1035_label, is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
             is_env_var_name],
)
def test_a_trailing_newline_fails_every_rule_as_in_go(rule: Callable[[str], list[str]]) -> None:
    assert rule("my-name") == []
    assert rule("my-name\n") != []


def test_regex_errors_matches_the_whole_value_and_quotes_the_format() -> None:
    assert regex_errors("abc", "[a-c]+", "letters a to c only", "abc") == []
    assert regex_errors("abcd", "[a-c]+", "letters a to c only", "abc") == [
        "letters a to c only (e.g. 'abc', regex used for validation is '[a-c]+')"
    ]


def test_the_broadcast_job_name_rule_is_checked_through_the_shared_rules() -> None:
    manifest = {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": "job\n"},
                "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}],
                                               "restartPolicy": "Never"}}}}
    messages = [e.message for e in validate_broadcast_job(manifest) if e.path == "metadata.name"]
    assert messages[0] == ("BroadcastJob name must consist of alphanumeric characters or '-' "
                           "(e.g. 'example-com', regex used for validation is '^[a-zA-Z0-9\\-]+$')")


def test_tf_job_names_and_namespaces_use_the_shared_rules() -> None:
    manifest = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "1job", "namespace": "a.b"},
                "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {
                    "containers": [{"name": "tensorflow", "image": "i"}]}}}}}}
    errors = {(e.path, e.message) for e in validate_tf_job(manifest)}
    assert ("metadata.name", f"should match: {DNS1035_FORMAT_ERROR}") in errors
    assert ("metadata.namespace", is_dns1123_label("a.b")[0]) in errors
    assert is_dns1123_label("a.b") == ["must not contain dots"]


@pytest.mark.parametrize("key", ["-bad", "a/b/c", "x" * 64, "bad-\n"])
def test_node_affinity_refuses_keys_the_shared_rules_refuse(key: str) -> None:
    assert is_qualified_name(key) != []
    term = {"matchExpressions": [{"key": key, "operator": "Exists"}]}
    spec = {"containers": [{"name": "c", "image": "i"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term]}}}}
    node = NodeInfo("n", {key: "v"}, (), False, {"pods": "10"})
    assert check_template_fitness(spec, node) == REASON_AFFINITY
