"""Node eligibility of BroadcastJob pods: checklist section D (N1-N14) of the BroadcastJob spec."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import pytest

from airflow_broadcast.reconcilers.broadcast_job.node_eligibility import (
    REASON_AFFINITY,
    REASON_NODE_NAME,
    REASON_TOO_MANY_PODS,
    REASON_UNSCHEDULABLE,
    check_node_fitness,
    check_template_fitness,
    compile_fitness,
    matches_node_selector_and_affinity,
    tolerates,
)
from airflow_broadcast.reconcilers.broadcast_job.pod_resources import pod_requests
from airflow_broadcast.reconcilers.observed import NodeInfo, Taint
from airflow_broadcast.specs.quantities import QuantityError, parse_quantity

ROOMY = {"pods": "110", "cpu": "4", "memory": "8Gi", "ephemeral-storage": "100Gi"}


def node(
    name: str = "node-a",
    labels: Mapping[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
    unschedulable: bool = False,
    allocatable: Mapping[str, str] | None = None,
) -> NodeInfo:
    resources = ROOMY if allocatable is None else allocatable
    return NodeInfo(name, dict(labels or {}), taints, unschedulable, dict(resources))


def container(
    requests: Mapping[str, Any] | None = None, limits: Mapping[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    return {"name": "c", "image": "busybox", "resources": resources, **extra}


def pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"containers": list(containers) or [container()], **spec}


def required(*terms: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def taint_reason(key: str, value: str = "") -> str:
    return f"node(s) had taint {{{key}: {value}}}, that the pod didn't tolerate"


# N1 ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("allocatable", "reason"),
    [
        ({}, REASON_TOO_MANY_PODS),
        ({"cpu": "4", "memory": "8Gi"}, REASON_TOO_MANY_PODS),
        ({"pods": "0"}, REASON_TOO_MANY_PODS),
        ({"pods": "-1"}, REASON_TOO_MANY_PODS),
        ({"pods": "not-a-number"}, REASON_TOO_MANY_PODS),
        ({"pods": "1"}, None),
        ({"pods": "110"}, None),
        ({"pods": "0.5"}, None),  # Quantity.Value() rounds up to 1
    ],
)
def test_N1_node_needs_allocatable_pods(allocatable: dict[str, str], reason: str | None) -> None:
    assert check_template_fitness(pod(), node(allocatable=allocatable)) == reason


def test_N1_too_many_pods_is_reported_before_insufficient_cpu() -> None:
    spec = pod(container({"cpu": "8"}))
    assert check_template_fitness(spec, node(allocatable={"cpu": "1"})) == REASON_TOO_MANY_PODS


# N2 ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "labels", "fits"),
    [
        ({}, {}, True),
        ({"disk": "ssd"}, {"disk": "ssd", "zone": "a"}, True),
        ({"disk": "ssd"}, {"disk": "hdd"}, False),
        ({"disk": "ssd"}, {}, False),
        ({"disk": ""}, {}, False),
        ({"disk": ""}, {"disk": ""}, True),
        ({"disk": "ssd", "zone": "a"}, {"disk": "ssd", "zone": "b"}, False),
        ({"disk": "ssd", "zone": "a"}, {"disk": "ssd", "zone": "a"}, True),
    ],
)
def test_N2_node_selector_must_match_all_labels(
    selector: dict[str, str], labels: dict[str, str], fits: bool
) -> None:
    spec = pod(nodeSelector=selector)
    assert matches_node_selector_and_affinity(spec, node(labels=labels)) is fits
    assert check_template_fitness(spec, node(labels=labels)) == (None if fits else REASON_AFFINITY)


# N3 ------------------------------------------------------------------------------------------------------

LABELS = {"zone": "a", "disk": "ssd", "cores": "8", "gpu": "", "weird": "08"}


@pytest.mark.parametrize(
    ("terms", "fits"),
    [
        pytest.param([{"matchExpressions": [expr("zone", "In", "a", "b")]}], True, id="in"),
        pytest.param([{"matchExpressions": [expr("zone", "In", "b")]}], False, id="in-miss"),
        pytest.param([{"matchExpressions": [expr("absent", "In", "a")]}], False, id="in-absent"),
        pytest.param([{"matchExpressions": [expr("zone", "NotIn", "b")]}], True, id="notin"),
        pytest.param([{"matchExpressions": [expr("zone", "NotIn", "a")]}], False, id="notin-miss"),
        pytest.param([{"matchExpressions": [expr("absent", "NotIn", "a")]}], True, id="notin-absent"),
        pytest.param([{"matchExpressions": [expr("gpu", "Exists")]}], True, id="exists-empty-value"),
        pytest.param([{"matchExpressions": [expr("absent", "Exists")]}], False, id="exists-miss"),
        pytest.param([{"matchExpressions": [expr("absent", "DoesNotExist")]}], True, id="doesnotexist"),
        pytest.param([{"matchExpressions": [expr("zone", "DoesNotExist")]}], False, id="doesnotexist-miss"),
        pytest.param([{"matchExpressions": [expr("cores", "Gt", "4")]}], True, id="gt"),
        pytest.param([{"matchExpressions": [expr("cores", "Gt", "8")]}], False, id="gt-equal"),
        pytest.param([{"matchExpressions": [expr("cores", "Lt", "16")]}], True, id="lt"),
        pytest.param([{"matchExpressions": [expr("cores", "Lt", "8")]}], False, id="lt-equal"),
        pytest.param([{"matchExpressions": [expr("weird", "Gt", "7")]}], True, id="gt-leading-zero"),
        pytest.param([{"matchExpressions": [expr("zone", "Gt", "1")]}], False, id="gt-non-integer-label"),
        pytest.param([{"matchExpressions": [expr("absent", "Lt", "1")]}], False, id="lt-absent"),
        pytest.param([{"matchExpressions": [expr("cores", "Gt", "x")]}], False, id="gt-non-integer-value"),
        pytest.param([{"matchExpressions": [expr("cores", "Gt", "1", "2")]}], False, id="gt-two-values"),
        pytest.param(
            [{"matchExpressions": [expr("zone", "In", "a"), expr("disk", "In", "ssd")]}],
            True,
            id="and-both",
        ),
        pytest.param(
            [{"matchExpressions": [expr("zone", "In", "a"), expr("disk", "In", "hdd")]}],
            False,
            id="and-one-fails",
        ),
        pytest.param(
            [
                {"matchExpressions": [expr("zone", "In", "b")]},
                {"matchExpressions": [expr("disk", "In", "ssd")]},
            ],
            True,
            id="or-second",
        ),
        pytest.param(
            [
                {"matchExpressions": [expr("zone", "In", "b")]},
                {"matchExpressions": [expr("disk", "In", "hdd")]},
            ],
            False,
            id="or-none",
        ),
        pytest.param([{"matchFields": [expr("metadata.name", "In", "node-a")]}], True, id="field-in"),
        pytest.param([{"matchFields": [expr("metadata.name", "In", "node-b")]}], False, id="field-in-miss"),
        pytest.param([{"matchFields": [expr("metadata.name", "NotIn", "node-b")]}], True, id="field-notin"),
        pytest.param(
            [{"matchFields": [expr("metadata.name", "NotIn", "node-a")]}], False, id="field-notin-miss"
        ),
        pytest.param(
            [{"matchFields": [expr("metadata.name", "In", "node-a", "node-b")]}],
            False,
            id="field-two-values-invalid",
        ),
        pytest.param([{"matchFields": [expr("metadata.name", "Exists")]}], False, id="field-bad-operator"),
        pytest.param(
            [
                {
                    "matchExpressions": [expr("zone", "In", "a")],
                    "matchFields": [expr("metadata.name", "In", "node-a")],
                }
            ],
            True,
            id="labels-and-fields",
        ),
        pytest.param(
            [
                {
                    "matchExpressions": [expr("zone", "In", "a")],
                    "matchFields": [expr("metadata.name", "In", "node-b")],
                }
            ],
            False,
            id="labels-and-fields-miss",
        ),
        pytest.param([], False, id="no-terms"),
        pytest.param([{}], False, id="empty-term"),
        pytest.param([{"matchExpressions": [], "matchFields": []}], False, id="empty-lists-term"),
        pytest.param([{}, {"matchExpressions": [expr("zone", "In", "a")]}], True, id="empty-term-or-match"),
        pytest.param([{"matchExpressions": [expr("zone", "Near", "a")]}], False, id="unknown-operator"),
        pytest.param(
            [
                {"matchExpressions": [expr("zone", "Near", "a")]},
                {"matchExpressions": [expr("disk", "In", "ssd")]},
            ],
            True,
            id="invalid-term-or-match",
        ),
        pytest.param([{"matchExpressions": [expr("zone", "In")]}], False, id="in-without-values"),
        pytest.param([{"matchExpressions": [expr("absent", "NotIn")]}], False, id="notin-without-values"),
        pytest.param([{"matchExpressions": [expr("zone", "Exists", "a")]}], False, id="exists-with-values"),
        pytest.param([{"matchExpressions": [expr("", "DoesNotExist")]}], False, id="empty-key"),
        pytest.param([{"matchExpressions": [expr("bad key", "DoesNotExist")]}], False, id="invalid-key"),
        pytest.param(
            [{"matchExpressions": [expr("zone", "NotIn", "not valid!")]}], False, id="invalid-value"
        ),
    ],
)
def test_N3_required_node_affinity(terms: list[dict[str, Any]], fits: bool) -> None:
    spec = pod(affinity=required(*terms))
    assert matches_node_selector_and_affinity(spec, node(labels=LABELS)) is fits
    assert check_template_fitness(spec, node(labels=LABELS)) == (None if fits else REASON_AFFINITY)


def test_N3_prefixed_label_keys_are_valid() -> None:
    spec = pod(affinity=required({"matchExpressions": [expr("topology.kubernetes.io/zone", "In", "a")]}))
    assert check_template_fitness(spec, node(labels={"topology.kubernetes.io/zone": "a"})) is None


def test_N3_affinity_and_node_selector_must_both_match() -> None:
    spec = pod(
        nodeSelector={"disk": "ssd"}, affinity=required({"matchExpressions": [expr("zone", "In", "a")]})
    )
    assert check_template_fitness(spec, node(labels={"disk": "ssd", "zone": "a"})) is None
    assert check_template_fitness(spec, node(labels={"disk": "hdd", "zone": "a"})) == REASON_AFFINITY
    assert check_template_fitness(spec, node(labels={"disk": "ssd", "zone": "b"})) == REASON_AFFINITY


@pytest.mark.parametrize(
    "affinity",
    [
        None,
        {},
        {"nodeAffinity": None},
        {"nodeAffinity": {}},
        {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": None}},
    ],
)
def test_N3_absent_required_affinity_matches_every_node(affinity: Any) -> None:
    assert check_template_fitness(pod(affinity=affinity), node()) is None


def test_N3_required_affinity_without_terms_matches_no_node() -> None:
    spec = pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}})
    assert check_template_fitness(spec, node()) == REASON_AFFINITY


# N4 ------------------------------------------------------------------------------------------------------


def test_N4_preferred_affinity_has_no_effect() -> None:
    preferred = [{"weight": 100, "preference": {"matchExpressions": [expr("zone", "In", "nowhere")]}}]
    spec = pod(affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}})
    assert check_template_fitness(spec, node(labels={"zone": "a"})) is None
    assert matches_node_selector_and_affinity(spec, node(labels={})) is True


# N5 ------------------------------------------------------------------------------------------------------

DEDICATED = Taint("dedicated", "gpu", "NoSchedule")


def test_N5_untolerated_noschedule_taint_excludes_node() -> None:
    assert (
        check_template_fitness(pod(), node(taints=(DEDICATED,)))
        == "node(s) had taint {dedicated: gpu}, that the pod didn't tolerate"
    )


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "gpu"},
    ],
)
def test_N5_equal_toleration_makes_node_eligible(toleration: dict[str, str]) -> None:
    assert check_template_fitness(pod(tolerations=[toleration]), node(taints=(DEDICATED,))) is None


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists"},
        {"key": "dedicated", "operator": "Exists", "value": "ignored"},
        {"operator": "Exists"},
        {"operator": "Exists", "effect": "NoSchedule"},
    ],
)
def test_N5_exists_toleration_makes_node_eligible(toleration: dict[str, str]) -> None:
    assert check_template_fitness(pod(tolerations=[toleration]), node(taints=(DEDICATED,))) is None


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "dedicated", "operator": "Equal", "value": "cpu", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
        {"key": "other", "operator": "Exists"},
        {"operator": "Exists", "effect": "PreferNoSchedule"},
        {"key": "dedicated", "operator": "Bogus", "value": "gpu"},
    ],
)
def test_N5_non_matching_toleration_leaves_node_excluded(toleration: dict[str, str]) -> None:
    assert check_template_fitness(pod(tolerations=[toleration]), node(taints=(DEDICATED,))) == taint_reason(
        "dedicated", "gpu"
    )


def test_N5_first_untolerated_taint_is_reported() -> None:
    taints = (Taint("a", "1", "NoSchedule"), Taint("b", "2", "NoSchedule"), Taint("c", "", "NoExecute"))
    assert check_template_fitness(pod(), node(taints=taints)) == taint_reason("a", "1")
    spec = pod(tolerations=[{"key": "a", "operator": "Exists"}])
    assert check_template_fitness(spec, node(taints=taints)) == taint_reason("b", "2")
    spec = pod(tolerations=[{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}])
    assert check_template_fitness(spec, node(taints=taints)) == taint_reason("c")


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        (
            {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
            Taint("k", "v", "NoSchedule"),
            True,
        ),
        (
            {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
            Taint("k", "w", "NoSchedule"),
            False,
        ),
        ({"key": "k", "value": "v"}, Taint("k", "v", "NoExecute"), True),
        ({"key": "k", "operator": "Exists"}, Taint("k", "anything", "NoExecute"), True),
        ({"key": "k", "operator": "Exists"}, Taint("j", "anything", "NoExecute"), False),
        ({"operator": "Exists"}, Taint("any", "thing", "NoSchedule"), True),
        ({"operator": "Exists", "effect": "NoExecute"}, Taint("any", "thing", "NoSchedule"), False),
        ({"key": "k", "operator": "Exists", "effect": "NoSchedule"}, Taint("k", "", "NoExecute"), False),
        ({"key": "k", "operator": "Equal", "value": ""}, Taint("k", "", "NoSchedule"), True),
        ({"key": "k", "operator": "Exists", "tolerationSeconds": 0}, Taint("k", "", "NoExecute"), True),
        ({"key": "k", "operator": "Lt", "value": "5"}, Taint("k", "3", "NoSchedule"), False),
    ],
)
def test_N5_tolerates_matches_like_kubernetes(
    toleration: dict[str, Any], taint: Taint, expected: bool
) -> None:
    assert tolerates([toleration], taint) is expected


def test_N5_tolerates_with_no_tolerations_is_false() -> None:
    assert tolerates([], Taint("k", "v", "NoSchedule")) is False


# N6 ------------------------------------------------------------------------------------------------------


def test_N6_untolerated_noexecute_taint_excludes_node() -> None:
    taint = Taint("maintenance", "true", "NoExecute")
    assert check_template_fitness(pod(), node(taints=(taint,))) == taint_reason("maintenance", "true")


@pytest.mark.parametrize("seconds", [0, 1, 3600])
def test_N6_toleration_seconds_is_ignored(seconds: int) -> None:
    taint = Taint("maintenance", "true", "NoExecute")
    toleration = {
        "key": "maintenance",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": seconds,
    }
    assert check_template_fitness(pod(tolerations=[toleration]), node(taints=(taint,))) is None


# N7 ------------------------------------------------------------------------------------------------------


def test_N7_prefer_no_schedule_taints_have_no_effect() -> None:
    taints = (Taint("soft", "x", "PreferNoSchedule"), Taint("soft2", "", "PreferNoSchedule"))
    assert check_template_fitness(pod(), node(taints=taints)) is None


def test_N7_unknown_effects_are_ignored_too() -> None:
    assert check_template_fitness(pod(), node(taints=(Taint("odd", "x", ""),))) is None


# N8 ------------------------------------------------------------------------------------------------------


def test_N8_unschedulable_node_is_excluded() -> None:
    assert check_template_fitness(pod(), node(unschedulable=True)) == REASON_UNSCHEDULABLE


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Equal", "value": ""},
        {"operator": "Exists"},
        {"operator": "Exists", "effect": "NoSchedule"},
    ],
)
def test_N8_unschedulable_toleration_makes_node_eligible(toleration: dict[str, str]) -> None:
    assert check_template_fitness(pod(tolerations=[toleration]), node(unschedulable=True)) is None


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Equal", "value": "true"},
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists"},
    ],
)
def test_N8_other_tolerations_leave_unschedulable_node_excluded(toleration: dict[str, str]) -> None:
    assert (
        check_template_fitness(pod(tolerations=[toleration]), node(unschedulable=True))
        == REASON_UNSCHEDULABLE
    )


def test_N8_schedulable_node_needs_no_toleration() -> None:
    assert check_template_fitness(pod(), node(unschedulable=False)) is None


# N9 ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requests", "allocatable", "reason"),
    [
        ({"cpu": "4"}, ROOMY, None),
        ({"cpu": "4001m"}, ROOMY, "Insufficient cpu"),
        ({"memory": "8Gi"}, ROOMY, None),
        ({"memory": "9Gi"}, ROOMY, "Insufficient memory"),
        ({"ephemeral-storage": "101Gi"}, ROOMY, "Insufficient ephemeral-storage"),
        ({"ephemeral-storage": "1Gi"}, {"pods": "1"}, "Insufficient ephemeral-storage"),
        ({"nvidia.com/gpu": "1"}, ROOMY, "Insufficient nvidia.com/gpu"),
        ({"nvidia.com/gpu": "2"}, {**ROOMY, "nvidia.com/gpu": "2"}, None),
        ({"nvidia.com/gpu": "3"}, {**ROOMY, "nvidia.com/gpu": "2"}, "Insufficient nvidia.com/gpu"),
        ({"hugepages-2Mi": "4Mi"}, {**ROOMY, "hugepages-2Mi": "2Mi"}, "Insufficient hugepages-2Mi"),
        ({"cpu": "8", "memory": "16Gi"}, ROOMY, "Insufficient cpu"),
        (
            {"cpu": "1", "memory": "16Gi", "example.com/b": "1", "example.com/a": "1"},
            ROOMY,
            "Insufficient memory",
        ),
        ({"cpu": "1", "example.com/b": "1", "example.com/a": "1"}, ROOMY, "Insufficient example.com/a"),
        (
            {"cpu": "1", "example.com/b": "1", "example.com/a": "1"},
            {**ROOMY, "example.com/a": "1"},
            "Insufficient example.com/b",
        ),
        ({"example.com/zero": "0"}, ROOMY, None),
        ({"cpu": "0", "memory": "0"}, {"pods": "1"}, None),
        ({"cpu": "1"}, {**ROOMY, "cpu": "garbage"}, "Insufficient cpu"),
        ({"cpu": "1"}, {**ROOMY, "cpu": "1000m"}, None),
        ({"cpu": "0.0001"}, {**ROOMY, "cpu": "1m"}, None),
        ({"memory": "1.7"}, {**ROOMY, "memory": "1.5"}, None),
        ({"memory": "2.1"}, {**ROOMY, "memory": "2"}, "Insufficient memory"),
    ],
)
def test_N9_requests_above_allocatable_exclude_node(
    requests: dict[str, str], allocatable: dict[str, str], reason: str | None
) -> None:
    spec = pod(container(requests))
    assert check_template_fitness(spec, node(allocatable=allocatable)) == reason


def test_N9_only_total_allocatable_counts_not_current_usage() -> None:
    # NodeInfo carries no usage at all: a node fully booked by other pods still fits by allocatable.
    spec = pod(container({"cpu": "4", "memory": "8Gi"}))
    assert check_template_fitness(spec, node()) is None


def test_N9_unqualified_unknown_resource_names_are_ignored_like_the_scheduler() -> None:
    assert check_template_fitness(pod(container({"foo": "5"})), node()) is None


def test_N9_invalid_request_quantity_fails_every_node_with_a_reason() -> None:
    spec = pod(container({"cpu": "12x"}))
    reason = check_template_fitness(spec, node())
    assert reason is not None
    assert reason.startswith("invalid resource quantity for cpu: ")
    assert "12x" in reason


@pytest.mark.parametrize("quantity", ["1e999999999", "1e2147483648", "1" * 10_000 + "x", "9" * 10_000])
def test_hostile_request_quantities_fail_every_node_with_the_parser_reason(quantity: str) -> None:
    with pytest.raises(QuantityError) as raised:
        parse_quantity(quantity)
    reason = check_template_fitness(pod(container({"cpu": quantity})), node())
    assert reason is not None
    assert reason.startswith("invalid resource quantity for cpu: ")
    assert reason.endswith(raised.value.reason)


@pytest.mark.parametrize("quantity", ["1e-999999999", "16Ei", "Gi", "1.5Gi", "0.1n", "1e3", "2.5e-1"])
def test_requests_and_allocatable_are_read_by_the_one_quantity_parser(quantity: str) -> None:
    assert pod_requests(pod(container({"memory": quantity}))) == {"memory": parse_quantity(quantity)}
    roomy_enough = node(allocatable={**ROOMY, "memory": quantity})
    assert check_template_fitness(pod(container({"memory": quantity})), roomy_enough) is None


def test_N9_invalid_request_does_not_mask_earlier_predicates() -> None:
    spec = pod(container({"memory": "lots"}), nodeSelector={"disk": "ssd"})
    assert check_template_fitness(spec, node()) == REASON_AFFINITY


# N10 -----------------------------------------------------------------------------------------------------


def test_N10_requests_are_max_of_sum_and_init_plus_overhead() -> None:
    spec = pod(
        container({"cpu": "1", "memory": "1Gi"}),
        container({"cpu": "500m", "memory": "1Gi"}),
        initContainers=[container({"cpu": "2", "memory": "512Mi"}), container({"cpu": "1"})],
        overhead={"cpu": "250m", "memory": "128Mi"},
    )
    assert pod_requests(spec) == {"cpu": Fraction(9, 4), "memory": 2 * 2**30 + 128 * 2**20}


def test_N10_requests_decide_fitness_against_allocatable() -> None:
    spec = pod(container({"cpu": "1"}), initContainers=[container({"cpu": "2"})], overhead={"cpu": "100m"})
    assert check_template_fitness(spec, node(allocatable={"pods": "1", "cpu": "2100m"})) is None
    assert check_template_fitness(spec, node(allocatable={"pods": "1", "cpu": "2"})) == "Insufficient cpu"


def test_N10_with_no_requests_only_pods_allocatable_matters() -> None:
    spec = pod(container(), container(requests={}))
    assert pod_requests(spec) == {}
    assert check_template_fitness(spec, node(allocatable={"pods": "1"})) is None
    assert check_template_fitness(spec, node(allocatable={"cpu": "64"})) == REASON_TOO_MANY_PODS


def test_N10_limits_stand_in_for_missing_requests() -> None:
    spec = pod(container(requests={"cpu": "1"}, limits={"cpu": "2", "memory": "1Gi"}))
    assert pod_requests(spec) == {"cpu": 1, "memory": 2**30}


def test_N10_restartable_init_containers_add_to_the_sum() -> None:
    sidecar = container({"cpu": "1"}, restartPolicy="Always")
    spec = pod(container({"cpu": "2"}), initContainers=[sidecar, container({"cpu": "2500m"})])
    # running: 2 + 1 (sidecar) = 3; init peak: sidecar 1 + 2.5 = 3.5
    assert pod_requests(spec) == {"cpu": Fraction(7, 2)}
    spec = pod(container({"cpu": "2"}), initContainers=[container({"cpu": "2500m"}), sidecar])
    # the regular init container runs before the sidecar starts: max(2.5, 1) vs 3
    assert pod_requests(spec) == {"cpu": 3}


def test_N10_sidecars_accumulate_for_later_init_containers() -> None:
    sidecars = [container({"memory": "1Gi"}, restartPolicy="Always") for _ in range(2)]
    spec = pod(container({"memory": "1Gi"}), initContainers=[*sidecars, container({"memory": "2Gi"})])
    assert pod_requests(spec) == {"memory": 4 * 2**30}


def test_N10_pod_level_requests_override_container_sum() -> None:
    spec = pod(
        container({"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}),
        resources={"requests": {"cpu": "3"}},
    )
    assert pod_requests(spec) == {"cpu": 3, "memory": 2**30, "nvidia.com/gpu": 1}


def test_N10_pod_level_limits_default_requests_only_when_nobody_requests() -> None:
    spec = pod(container({"cpu": "1"}), resources={"limits": {"cpu": "4", "memory": "2Gi"}})
    assert pod_requests(spec) == {"cpu": 1, "memory": 2 * 2**30}


def test_N10_overhead_adds_new_resources() -> None:
    assert pod_requests(pod(overhead={"memory": "64Mi"})) == {"memory": 64 * 2**20}


def test_N10_pod_requests_raises_on_malformed_quantity() -> None:
    with pytest.raises(ValueError, match="invalid resource quantity for memory"):
        pod_requests(pod(container(limits={"memory": "1Gb"})))


# N11 -----------------------------------------------------------------------------------------------------


def test_N11_not_ready_node_without_taints_is_eligible() -> None:
    api_node = {
        "metadata": {"name": "node-a"},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "False"}], "allocatable": {"pods": "110"}},
    }
    assert check_template_fitness(pod(), NodeInfo.from_api(api_node)) is None


# N12 -----------------------------------------------------------------------------------------------------


def test_N12_template_node_name_has_no_effect() -> None:
    spec = pod(nodeName="some-other-node")
    assert check_template_fitness(spec, node("node-a")) is None
    assert compile_fitness(spec, template=True)(node("node-b")) is None


def test_N12_an_actual_pod_is_bound_by_its_node_name() -> None:
    spec = pod(nodeName="node-a")
    assert check_node_fitness(spec, node("node-a")) is None
    assert check_node_fitness(spec, node("node-b")) == REASON_NODE_NAME


def test_N12_predicates_run_in_upstream_order() -> None:
    spec = pod(container({"cpu": "99"}), nodeName="elsewhere", nodeSelector={"disk": "ssd"})
    bad = node(taints=(DEDICATED,), unschedulable=True, allocatable={"pods": "0"})
    assert check_node_fitness(spec, bad) == REASON_NODE_NAME
    assert check_template_fitness(spec, bad) == REASON_AFFINITY
    bad = node(labels={"disk": "ssd"}, taints=(DEDICATED,), unschedulable=True, allocatable={"pods": "0"})
    assert check_template_fitness(spec, bad) == taint_reason("dedicated", "gpu")
    bad = node(labels={"disk": "ssd"}, unschedulable=True, allocatable={"pods": "0"})
    assert check_template_fitness(spec, bad) == REASON_UNSCHEDULABLE
    bad = node(labels={"disk": "ssd"}, allocatable={"pods": "0"})
    assert check_template_fitness(spec, bad) == REASON_TOO_MANY_PODS
    assert check_template_fitness(spec, node(labels={"disk": "ssd"})) == "Insufficient cpu"


# N13 -----------------------------------------------------------------------------------------------------

TEMPLATE = pod(
    nodeSelector={"role": "worker"},
    affinity=required({"matchExpressions": [expr("zone", "In", "a")]}),
)
# What the controller creates in scheduler mode: the required affinity is replaced by a node pin.
CREATED_POD = {**TEMPLATE, "affinity": required({"matchFields": [expr("metadata.name", "In", "node-a")]})}


def test_N13_pinned_pod_still_fits_after_node_loses_template_affinity_label() -> None:
    before = node("node-a", labels={"role": "worker", "zone": "a"})
    after = node("node-a", labels={"role": "worker"})
    assert check_node_fitness(CREATED_POD, before) is None
    assert check_node_fitness(CREATED_POD, after) is None
    assert check_template_fitness(TEMPLATE, after) == REASON_AFFINITY


def test_N13_pinned_pod_no_longer_fits_after_node_loses_node_selector_label() -> None:
    after = node("node-a", labels={"zone": "a", "role": "infra"})
    assert check_node_fitness(CREATED_POD, after) == REASON_AFFINITY


def test_N13_pinned_pod_fits_only_its_own_node() -> None:
    assert (
        check_node_fitness(CREATED_POD, node("node-b", labels={"role": "worker", "zone": "a"}))
        == REASON_AFFINITY
    )


def test_N13_existing_pod_is_rechecked_for_taints_cordon_and_resources() -> None:
    spec = {**CREATED_POD, "containers": [container({"cpu": "2"})]}
    labels = {"role": "worker"}
    assert check_node_fitness(spec, node("node-a", labels=labels, taints=(DEDICATED,))) == taint_reason(
        "dedicated", "gpu"
    )
    assert (
        check_node_fitness(spec, node("node-a", labels=labels, unschedulable=True)) == REASON_UNSCHEDULABLE
    )
    shrunk = node("node-a", labels=labels, allocatable={"pods": "10", "cpu": "1"})
    assert check_node_fitness(spec, shrunk) == "Insufficient cpu"


def test_N13_node_name_mode_keeps_and_rechecks_user_affinity() -> None:
    spec = {**TEMPLATE, "nodeName": "node-a"}
    assert check_node_fitness(spec, node("node-a", labels={"role": "worker", "zone": "a"})) is None
    assert check_node_fitness(spec, node("node-a", labels={"role": "worker"})) == REASON_AFFINITY


# N14 -----------------------------------------------------------------------------------------------------

SYSTEM_TAINTS = [
    Taint("node-role.kubernetes.io/control-plane", "", "NoSchedule"),
    Taint("node.kubernetes.io/not-ready", "", "NoExecute"),
    Taint("node.kubernetes.io/unreachable", "", "NoExecute"),
    Taint("node.kubernetes.io/not-ready", "", "NoSchedule"),
    Taint("node.kubernetes.io/unreachable", "", "NoSchedule"),
]


@pytest.mark.parametrize("taint", SYSTEM_TAINTS, ids=lambda t: f"{t.key}:{t.effect}")
def test_N14_system_taints_exclude_node_without_implicit_tolerations(taint: Taint) -> None:
    assert check_template_fitness(pod(), node(taints=(taint,))) == taint_reason(taint.key)


@pytest.mark.parametrize("taint", SYSTEM_TAINTS, ids=lambda t: f"{t.key}:{t.effect}")
def test_N14_explicit_toleration_admits_system_tainted_node(taint: Taint) -> None:
    spec = pod(tolerations=[{"key": taint.key, "operator": "Exists", "effect": taint.effect}])
    assert check_template_fitness(spec, node(taints=(taint,))) is None


def test_N14_control_plane_needs_its_own_toleration_not_a_daemonset_one() -> None:
    daemonset_defaults = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    ]
    control_plane = node(taints=(SYSTEM_TAINTS[0],))
    assert check_template_fitness(pod(tolerations=daemonset_defaults), control_plane) == taint_reason(
        "node-role.kubernetes.io/control-plane"
    )


# performance ---------------------------------------------------------------------------------------------


def test_compiled_check_is_reusable_across_many_nodes() -> None:
    check = compile_fitness(pod(container({"cpu": "1"}), nodeSelector={"pool": "a"}), template=True)
    nodes = [node(f"n{i}", labels={"pool": "a" if i % 2 else "b"}) for i in range(2000)]
    assert sum(check(n) is None for n in nodes) == 1000
