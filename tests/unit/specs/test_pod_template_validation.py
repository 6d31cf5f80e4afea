"""Pod templates are checked like Kubernetes' ValidatePodTemplateSpec: same paths, same words."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest

from airflow_broadcast.specs.name_rules import (
    is_qualified_name,
    is_valid_label_value,
    is_valid_port_name,
    regex_error,
)
from airflow_broadcast.specs.pod_template import validate_pod_template
from airflow_broadcast.specs.quantities import QuantityError, parse_quantity

P = "spec.template"
DNS_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def template(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}], "restartPolicy": "Never"}
    base.update(spec)
    return {"metadata": {"labels": {"app": "x"}}, "spec": base}


def container(**fields: Any) -> dict[str, Any]:
    return {"name": "main", "image": "busybox", **fields}


def rendered(tpl: Any) -> list[str]:
    return [str(e) for e in validate_pod_template(tpl, P)]


def test_a_minimal_template_is_valid() -> None:
    assert validate_pod_template(template(), P) == []


def test_the_input_is_not_modified() -> None:
    tpl = template(containers=[container(resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}})])
    before = copy.deepcopy(tpl)
    validate_pod_template(tpl, P)
    assert tpl == before


def test_template_and_spec_must_be_mappings() -> None:
    assert rendered(["x"]) == ["spec.template: Invalid value: ['x']: must be an object"]
    assert rendered({"spec": "x"}) == ['spec.template.spec: Invalid value: "x": must be an object']


@pytest.mark.parametrize("tpl", [{}, {"spec": {}}, template(containers=[])])
def test_containers_are_required(tpl: dict[str, Any]) -> None:
    assert "spec.template.spec.containers: Required value" in rendered(tpl)


def test_container_name_and_image_are_required() -> None:
    errors = rendered(template(containers=[{}]))
    assert errors == [
        "spec.template.spec.containers[0].name: Required value",
        "spec.template.spec.containers[0].image: Required value",
    ]


def test_container_name_must_be_a_dns_label_with_the_exact_message() -> None:
    errors = validate_pod_template(template(containers=[container(name="Main_1")]), P)
    assert [(e.path, e.kind, e.value, e.message) for e in errors] == [
        ("spec.template.spec.containers[0].name", "Invalid", "Main_1", DNS_LABEL_MSG)
    ]


def test_container_name_with_dots_and_overlong_names() -> None:
    assert [e.message for e in validate_pod_template(template(containers=[container(name="a.b")]), P)] == [
        "must not contain dots"]
    long_name = "a" * 64
    assert [e.message for e in validate_pod_template(template(containers=[container(name=long_name)]), P)] == [
        "must be no more than 63 characters"]


def test_container_names_are_unique_across_containers_and_init_containers() -> None:
    tpl = template(containers=[container(), container(name="side")],
                   initContainers=[container(name="side"), container(name="init")])
    assert rendered(tpl) == ['spec.template.spec.initContainers[0].name: Duplicate value: "side"']
    tpl = template(containers=[container(), container()])
    assert rendered(tpl) == ['spec.template.spec.containers[1].name: Duplicate value: "main"']


def test_container_ports() -> None:
    ports = [
        {"containerPort": 0},
        {"containerPort": 70000, "name": "http"},
        {"containerPort": 80, "name": "http"},
        {"containerPort": 81, "name": "a-very-long-port-name"},
        {"containerPort": 82, "name": "Bad--"},
        {"containerPort": 83, "protocol": "HTTP", "hostPort": -1},
    ]
    assert rendered(template(containers=[container(ports=ports)])) == [
        "spec.template.spec.containers[0].ports[0].containerPort: Required value",
        "spec.template.spec.containers[0].ports[1].containerPort: Invalid value: 70000: "
        "must be between 1 and 65535, inclusive",
        'spec.template.spec.containers[0].ports[2].name: Duplicate value: "http"',
        'spec.template.spec.containers[0].ports[3].name: Invalid value: "a-very-long-port-name": '
        "must be no more than 15 characters",
        'spec.template.spec.containers[0].ports[4].name: Invalid value: "Bad--": '
        "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
        'spec.template.spec.containers[0].ports[4].name: Invalid value: "Bad--": '
        "must not contain consecutive hyphens",
        'spec.template.spec.containers[0].ports[4].name: Invalid value: "Bad--": '
        "must not begin or end with a hyphen",
        "spec.template.spec.containers[0].ports[5].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive",
        'spec.template.spec.containers[0].ports[5].protocol: Unsupported value: "HTTP": '
        'supported values: "SCTP", "TCP", "UDP"',
    ]


def test_port_name_needs_a_letter() -> None:
    assert is_valid_port_name("8080") == ["must contain at least one letter (a-z)"]


def test_env_var_names() -> None:
    env = [{"name": "GOOD_1"}, {"name": ""}, {"name": "1BAD"}, {"name": "..x"}]
    errors = validate_pod_template(template(containers=[container(env=env)]), P)
    regex = regex_error(
        "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', "
        "and must not start with a digit", "[-._a-zA-Z][-._a-zA-Z0-9]*", "my.env-name", "MY_ENV.NAME", "MyEnvName1")
    assert [(e.path.rsplit(".", 2)[-2:], e.kind, e.message) for e in errors] == [
        (["env[1]", "name"], "Required", ""),
        (["env[1]", "name"], "Invalid", regex),
        (["env[2]", "name"], "Invalid", regex),
        (["env[3]", "name"], "Invalid", "must not start with '..'"),
    ]


def test_resource_quantities_must_parse_and_not_be_negative() -> None:
    resources = {"limits": {"memory": "1x"}, "requests": {"cpu": "-1", "gpu": "1"}}
    assert rendered(template(containers=[container(resources=resources)])) == [
        'spec.template.spec.containers[0].resources.limits[memory]: Invalid value: "1x": '
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        'spec.template.spec.containers[0].resources.requests[cpu]: Invalid value: "-1": '
        "must be greater than or equal to 0",
        'spec.template.spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": '
        "must be a standard resource for containers",
    ]


def test_requests_must_not_exceed_limits() -> None:
    resources = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1500m", "memory": "1024Mi"}}
    assert rendered(template(containers=[container(resources=resources)])) == [
        'spec.template.spec.containers[0].resources.requests: Invalid value: "1500m": '
        "must be less than or equal to cpu limit of 1",
    ]


def test_extended_resources_need_equal_requests_and_limits() -> None:
    resources = {"limits": {"nvidia.com/gpu": 2}, "requests": {"nvidia.com/gpu": 1, "example.com/foo": 1}}
    assert rendered(template(containers=[container(resources=resources)])) == [
        'spec.template.spec.containers[0].resources.requests: Invalid value: "1": '
        "must be equal to nvidia.com/gpu limit of 2",
        "spec.template.spec.containers[0].resources.limits: Required value: "
        "Limit must be set for non overcommitable resources",
    ]


def limit_errors(quantity: Any) -> list[str]:
    """The messages validation gives for `quantity` as a memory limit."""
    tpl = template(containers=[container(resources={"limits": {"memory": quantity}})])
    return [e.message for e in validate_pod_template(tpl, P)]


@pytest.mark.parametrize(
    ("quantity", "value"),
    [("1", 1), (2, 2), ("500m", Fraction(1, 2)), ("1Gi", 2**30), ("1.5", Fraction(3, 2)), (".5", Fraction(1, 2)),
     ("1e3", 1000), ("1E", 10**18), ("100Mi", 100 * 2**20), ("2k", 2000), (0.25, Fraction(1, 4)), ("Gi", 0),
     (".", 0), ("16Ei", 2**63 - 1), ("1e-999999999", Fraction(1, 10**9))],
)
def test_validation_accepts_exactly_what_the_quantity_parser_accepts(quantity: Any, value: Fraction) -> None:
    assert parse_quantity(quantity) == value
    assert limit_errors(quantity) == []


@pytest.mark.parametrize(
    "quantity", ["", "abc", "1x", "1 Gi", "1KiB", True, None, "1e", "1e999999999", "1e2147483648", "1E+", [1]]
)
def test_validation_refuses_what_the_quantity_parser_refuses_with_its_reason(quantity: Any) -> None:
    with pytest.raises(QuantityError) as raised:
        parse_quantity(quantity)
    assert limit_errors(quantity) == [raised.value.reason]


def test_restart_policy_must_be_a_known_value_when_set() -> None:
    assert rendered(template(restartPolicy="Sometimes")) == [
        'spec.template.spec.restartPolicy: Unsupported value: "Sometimes": '
        'supported values: "Always", "OnFailure", "Never"']
    tpl = template()
    del tpl["spec"]["restartPolicy"]
    assert rendered(tpl) == []


def test_tolerations() -> None:
    tolerations = [
        {"key": "k", "operator": "Exists"},
        {"key": "k", "operator": "Exists", "value": "v"},
        {"key": "k", "operator": "Like"},
        {"key": "k", "value": "v", "effect": "NoRun"},
        {"operator": "Equal", "value": "v"},
        {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5},
        {"key": "k", "value": "bad value"},
    ]
    errors = rendered(template(tolerations=tolerations))
    assert errors[:5] == [
        "spec.template.spec.tolerations[1].operator: Invalid value: "
        "{'key': 'k', 'operator': 'Exists', 'value': 'v'}: value must be empty when `operator` is 'Exists'",
        'spec.template.spec.tolerations[2].operator: Unsupported value: "Like": supported values: "Equal", "Exists"',
        'spec.template.spec.tolerations[3].effect: Unsupported value: "NoRun": '
        'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
        'spec.template.spec.tolerations[4].operator: Invalid value: "Equal": '
        'operator must be Exists when `key` is empty, which means "match all values and all keys"',
        'spec.template.spec.tolerations[5].effect: Invalid value: "NoSchedule": '
        "effect must be 'NoExecute' when `tolerationSeconds` is set",
    ]
    assert errors[5].startswith('spec.template.spec.tolerations[6].operator: Invalid value: "bad value": a valid label')
    assert len(errors) == 6


def test_an_empty_key_with_exists_matches_everything_and_is_valid() -> None:
    assert rendered(template(tolerations=[{"operator": "Exists"}])) == []


def test_node_selector_and_template_labels_and_annotations() -> None:
    tpl = template(nodeSelector={"kubernetes.io/os": "linux", "role": "x" * 64})
    tpl["metadata"] = {"labels": {"-bad": "ok"}, "annotations": {"example.com/Fine": "", "a/b/c": "x"}}
    errors = validate_pod_template(tpl, P)
    assert [(e.path, e.value) for e in errors] == [
        ("spec.template.labels", "-bad"),
        ("spec.template.annotations", "a/b/c"),
        ("spec.template.spec.nodeSelector", "x" * 64),
    ]
    assert errors[2].message == "must be no more than 63 characters"


def test_label_and_qualified_name_messages_are_upstreams() -> None:
    assert is_valid_label_value("bad value") == [
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
        "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]
    assert is_qualified_name("/x") == ["prefix part must be non-empty"]
    assert is_qualified_name("Example.com/x")[0].startswith("prefix part a lowercase RFC 1123 subdomain")
    assert is_qualified_name("example.com/")[0] == "name part must be non-empty"


def test_volume_mounts_must_reference_a_declared_volume() -> None:
    tpl = template(volumes=[{"name": "data", "emptyDir": {}}],
                   containers=[container(volumeMounts=[{"name": "data", "mountPath": "/d"},
                                                       {"name": "logs", "mountPath": "/d"}])])
    errors = validate_pod_template(tpl, P)
    assert [(e.path, e.kind, e.value) for e in errors] == [
        ("spec.template.spec.containers[0].volumeMounts[1].name", "NotFound", "logs"),
        ("spec.template.spec.containers[0].volumeMounts[1].mountPath", "Invalid", "/d"),
    ]
    assert errors[1].message == "must be unique"


def test_volume_names_are_unique_dns_labels() -> None:
    tpl = template(volumes=[{"name": "data"}, {"name": "data"}, {"name": "Bad"}, {}])
    assert [(e.path, e.kind) for e in validate_pod_template(tpl, P)] == [
        ("spec.template.spec.volumes[1].name", "Duplicate"),
        ("spec.template.spec.volumes[2].name", "Invalid"),
        ("spec.template.spec.volumes[3].name", "Required"),
    ]


def test_active_deadline_and_grace_period() -> None:
    assert rendered(template(activeDeadlineSeconds=0, terminationGracePeriodSeconds=-1)) == [
        "spec.template.spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0",
        "spec.template.spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
    ]
    assert rendered(template(activeDeadlineSeconds=1, terminationGracePeriodSeconds=0)) == []


def test_dns_policy() -> None:
    assert rendered(template(dnsPolicy="Cluster")) == [
        'spec.template.spec.dnsPolicy: Unsupported value: "Cluster": '
        'supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"']
    assert rendered(template(dnsPolicy="None")) == [
        "spec.template.spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"]
    assert rendered(template(dnsPolicy="None", dnsConfig={"nameservers": ["1.1.1.1"]})) == []


def test_names_of_other_objects() -> None:
    errors = validate_pod_template(template(serviceAccountName="Bad", hostname="a.b", nodeName="node-1"), P)
    assert [(e.path, e.message[:40]) for e in errors] == [
        ("spec.template.spec.serviceAccountName", "a lowercase RFC 1123 subdomain must cons"),
        ("spec.template.spec.hostname", "must not contain dots"),
    ]


def test_ephemeral_containers_are_forbidden_in_templates() -> None:
    assert rendered(template(ephemeralContainers=[container(name="debug")])) == [
        "spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"]


def test_wrongly_typed_fields_are_reported_not_crashed_on() -> None:
    tpl = {"metadata": "x", "spec": {"containers": "main", "tolerations": {"k": 1}, "volumes": [1]}}
    errors = validate_pod_template(tpl, P)
    assert [e.path for e in errors] == [
        "spec.template.metadata", "spec.template.spec.volumes[0]", "spec.template.spec.containers",
        "spec.template.spec.tolerations"]
    tpl = template(containers=["main", container(ports="80", env={"A": 1}, resources=[], name=5, image=3)])
    assert [e.path for e in validate_pod_template(tpl, P)] == [
        "spec.template.spec.containers[0]",
        "spec.template.spec.containers[1].name",
        "spec.template.spec.containers[1].image",
        "spec.template.spec.containers[1].ports",
        "spec.template.spec.containers[1].env",
        "spec.template.spec.containers[1].resources",
    ]
