"""Checklist D (N1-N14): which nodes a BroadcastJob runs on, against real nodes, scheduler and kwok."""

from __future__ import annotations

from typing import Any

import pytest
from bcj_cluster import KIND, bcj, job_pods, pods_by_node

pytestmark = pytest.mark.cluster

AFFINITY = "node(s) didn't match Pod's node affinity/selector"
UNSCHEDULABLE = "node(s) were unschedulable"
CORDON_TAINT = "node(s) had taint {node.kubernetes.io/unschedulable: }, that the pod didn't tolerate"


def run_to_completion(engine: Any, manifest: dict[str, Any], **drive: Any) -> dict[str, Any]:
    submission = engine.submit(manifest)
    outcome = engine.drive(submission, KIND, **drive)
    assert outcome.reason == "finished"
    status: dict[str, Any] = engine.status(KIND, manifest["metadata"]["name"])
    assert status["phase"] == "completed"
    return status


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def test_N1_node_without_allocatable_pods_is_not_eligible(engine: Any, node_factory: Any, namespace: str) -> None:
    (good,) = node_factory(1, labels={"pool": namespace})
    (absent,) = node_factory(1, labels={"pool": namespace}, allocatable={"cpu": "8", "memory": "8Gi"})
    (zero,) = node_factory(1, labels={"pool": namespace}, allocatable={"cpu": "8", "memory": "8Gi", "pods": "0"})

    status = run_to_completion(engine, bcj("n1", namespace))

    assert status["desired"] == 1
    assert sorted(status["nodes"]) == [good]
    assert status["ineligibleNodes"][absent] == "Too many pods"
    assert status["ineligibleNodes"][zero] == "Too many pods"
    assert sorted(pods_by_node(engine, "n1")) == [good]


def test_N2_node_selector_mismatch_excludes_node(engine: Any, node_factory: Any, namespace: str) -> None:
    (match,) = node_factory(1, labels={"pool": namespace, "role": "a"})
    (other,) = node_factory(1, labels={"pool": namespace, "role": "b"})

    status = run_to_completion(engine, bcj("n2", namespace, node_selector={"pool": namespace, "role": "a"}))

    assert sorted(status["nodes"]) == [match]
    assert status["ineligibleNodes"][other] == AFFINITY
    assert sorted(pods_by_node(engine, "n2")) == [match]


def test_N3_required_affinity_terms_are_ored_and_expressions_anded(
        engine: Any, node_factory: Any, namespace: str) -> None:
    (a_gpu,) = node_factory(1, labels={"pool": namespace, "zone": "a", "gpu": "yes"})
    (a_plain,) = node_factory(1, labels={"pool": namespace, "zone": "a"})
    (named,) = node_factory(1, labels={"pool": namespace, "zone": "b"})
    (low,) = node_factory(1, labels={"pool": namespace, "zone": "b", "rank": "3"})
    (high,) = node_factory(1, labels={"pool": namespace, "zone": "b", "rank": "7"})
    mine = {"key": "pool", "operator": "In", "values": [namespace]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [mine, {"key": "zone", "operator": "In", "values": ["a"]},
                              {"key": "gpu", "operator": "Exists"}]},
        {"matchExpressions": [mine], "matchFields": [{"key": "metadata.name", "operator": "In", "values": [named]}]},
        {"matchExpressions": [mine, {"key": "rank", "operator": "Gt", "values": ["5"]}]},
    ]}}}

    status = run_to_completion(engine, bcj("n3", namespace, node_selector={}, pod_spec={"affinity": affinity}))

    assert sorted(status["nodes"]) == sorted([a_gpu, named, high])
    assert status["desired"] == 3
    assert status["ineligibleNodes"][a_plain] == AFFINITY
    assert status["ineligibleNodes"][low] == AFFINITY
    assert sorted(pods_by_node(engine, "n3")) == sorted([a_gpu, named, high])


def test_N4_preferred_affinity_does_not_restrict_eligibility(engine: Any, node_factory: Any, namespace: str) -> None:
    nodes = node_factory(2, labels={"pool": namespace})
    preferred = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["nowhere"]}]}},
    ]}}

    status = run_to_completion(engine, bcj("n4", namespace, pod_spec={"affinity": preferred}))

    assert sorted(status["nodes"]) == sorted(nodes)
    assert status["succeeded"] == 2


def test_N5_untolerated_noschedule_taint_excludes_node_and_matching_tolerations_include_it(
        engine: Any, node_factory: Any, namespace: str) -> None:
    labels = {"pool": namespace}
    (equal,) = node_factory(1, labels=labels, taints=[taint("a", "x", "NoSchedule")])
    (exists,) = node_factory(1, labels=labels, taints=[taint("b", "y", "NoSchedule")])
    (wrong_value,) = node_factory(1, labels=labels, taints=[taint("a", "z", "NoSchedule")])
    (untolerated,) = node_factory(1, labels=labels, taints=[taint("c", "v", "NoSchedule")])
    tolerations = [{"key": "a", "operator": "Equal", "value": "x", "effect": "NoSchedule"},
                   {"key": "b", "operator": "Exists"}]

    status = run_to_completion(engine, bcj("n5", namespace, pod_spec={"tolerations": tolerations}))

    assert sorted(status["nodes"]) == sorted([equal, exists])
    assert status["ineligibleNodes"][wrong_value] == "node(s) had taint {a: z}, that the pod didn't tolerate"
    assert status["ineligibleNodes"][untolerated] == "node(s) had taint {c: v}, that the pod didn't tolerate"
    assert sorted(pods_by_node(engine, "n5")) == sorted([equal, exists])


def test_N6_noexecute_taint_excludes_unless_tolerated_whatever_the_toleration_seconds(
        engine: Any, node_factory: Any, namespace: str) -> None:
    labels = {"pool": namespace}
    (tolerated,) = node_factory(1, labels=labels, taints=[taint("f", "1", "NoExecute")])
    (untolerated,) = node_factory(1, labels=labels, taints=[taint("e", "1", "NoExecute")])
    tolerations = [{"key": "f", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 3600}]

    status = run_to_completion(engine, bcj("n6", namespace, pod_spec={"tolerations": tolerations}))

    assert sorted(status["nodes"]) == [tolerated]
    assert status["ineligibleNodes"][untolerated] == "node(s) had taint {e: 1}, that the pod didn't tolerate"


def test_N7_prefer_no_schedule_taint_has_no_effect(engine: Any, node_factory: Any, namespace: str) -> None:
    (soft,) = node_factory(1, labels={"pool": namespace}, taints=[taint("soft", "1", "PreferNoSchedule")])

    status = run_to_completion(engine, bcj("n7", namespace))

    assert sorted(status["nodes"]) == [soft]
    assert status["nodes"][soft]["phase"] == "Succeeded"


def test_N8_cordoned_node_is_excluded_unless_the_unschedulable_taint_is_tolerated(
        engine: Any, node_factory: Any, namespace: str) -> None:
    (ready,) = node_factory(1, labels={"pool": namespace})
    (cordoned,) = node_factory(1, labels={"pool": namespace}, unschedulable=True)

    plain = run_to_completion(engine, bcj("n8-plain", namespace))
    keyed = run_to_completion(engine, bcj("n8-keyed", namespace, pod_spec={"tolerations": [
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}))
    keyless = run_to_completion(engine, bcj("n8-keyless", namespace,
                                            pod_spec={"tolerations": [{"operator": "Exists"}]}))

    assert sorted(plain["nodes"]) == [ready]
    assert plain["ineligibleNodes"][cordoned] in (UNSCHEDULABLE, CORDON_TAINT)
    assert sorted(keyed["nodes"]) == sorted([ready, cordoned])
    assert sorted(keyless["nodes"]) == sorted([ready, cordoned])
    assert keyless["nodes"][cordoned]["phase"] == "Succeeded"


def test_N9_requests_above_allocatable_exclude_node(engine: Any, node_factory: Any, namespace: str) -> None:
    base = {"memory": "8Gi", "pods": "10"}
    (fits,) = node_factory(1, labels={"pool": namespace}, allocatable={**base, "cpu": "4", "example.com/dongle": "2"})
    (few_cpu,) = node_factory(1, labels={"pool": namespace},
                              allocatable={**base, "cpu": "1", "example.com/dongle": "2"})
    (few_dongles,) = node_factory(1, labels={"pool": namespace},
                                  allocatable={**base, "cpu": "4", "example.com/dongle": "1"})
    resources = {"requests": {"cpu": "2", "example.com/dongle": "2"}, "limits": {"example.com/dongle": "2"}}
    containers = [{"name": "c", "image": "busybox", "resources": resources}]

    status = run_to_completion(engine, bcj("n9", namespace, pod_spec={"containers": containers}))

    assert sorted(status["nodes"]) == [fits]
    assert status["ineligibleNodes"][few_cpu] == "Insufficient cpu"
    assert status["ineligibleNodes"][few_dongles] == "Insufficient example.com/dongle"


def test_N10_requests_are_the_max_of_container_sum_and_each_init_container(
        engine: Any, node_factory: Any, namespace: str) -> None:
    (three,) = node_factory(1, labels={"pool": namespace}, allocatable={"cpu": "3", "memory": "8Gi", "pods": "10"})
    (between,) = node_factory(1, labels={"pool": namespace},
                              allocatable={"cpu": "2500m", "memory": "8Gi", "pods": "10"})
    one_cpu = {"requests": {"cpu": "1"}}
    pod_spec = {
        "initContainers": [{"name": "init", "image": "busybox", "resources": {"requests": {"cpu": "3"}}}],
        "containers": [{"name": "c1", "image": "busybox", "resources": one_cpu},
                       {"name": "c2", "image": "busybox", "resources": one_cpu}],
    }

    status = run_to_completion(engine, bcj("n10", namespace, pod_spec=pod_spec))

    # sum(containers) = 2 fits 2.5 but the init container needs 3; init is not added to the sum (3 fits 3)
    assert sorted(status["nodes"]) == [three]
    assert status["ineligibleNodes"][between] == "Insufficient cpu"


@pytest.mark.parametrize("mode", ["scheduler", "nodeName"])
def test_N13_existing_pod_is_rechecked_with_its_own_spec(
        engine: Any, node_factory: Any, namespace: str, core_api: Any, mode: str) -> None:
    """Scheduler mode replaced the template's required affinity on the pod, so only nodeSelector drift evicts."""
    zoned, selected = node_factory(2, labels={"pool": namespace, "zone": "a"})
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}
    options = {"assign_by_scheduler": mode == "scheduler"}
    submission = engine.submit(bcj("n13", namespace, result=None, pod_spec={"affinity": affinity}))
    engine.drive(submission, KIND, options=options, single_pass=True)
    assert sorted(pods_by_node(engine, "n13")) == sorted([zoned, selected])

    core_api.patch_node(zoned, {"metadata": {"labels": {"zone": "b"}}})  # breaks the template's affinity only
    core_api.patch_node(selected, {"metadata": {"labels": {"pool": None}}})  # breaks the nodeSelector
    engine.drive(submission, KIND, options=options, single_pass=True)

    status = engine.status(KIND, "n13")
    deleted = {e.message for e in engine.events(KIND, "n13") if e.reason == "SuccessfulDelete"}
    kept = {p.metadata.annotations["airflow-broadcast.io/node"] for p in job_pods(engine, "n13")
            if not p.metadata.deletion_timestamp}
    assert status["ineligibleNodes"][selected] == AFFINITY
    if mode == "scheduler":
        assert len(deleted) == 1
        assert zoned in kept
        assert zoned in status["nodes"]
        assert status["desired"] == 1
    else:
        assert len(deleted) == 2
        assert zoned not in kept
        assert status["ineligibleNodes"][zoned] == AFFINITY
        assert status["desired"] == 0


def test_N14_no_implicit_tolerations_for_control_plane_taint(engine: Any, node_factory: Any, namespace: str) -> None:
    (worker,) = node_factory(1, labels={"pool": namespace})
    (master,) = node_factory(1, labels={"pool": namespace},
                             taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}])

    plain = run_to_completion(engine, bcj("n14-plain", namespace))
    tolerant = run_to_completion(engine, bcj("n14-tolerant", namespace, pod_spec={"tolerations": [
        {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}]}))

    assert sorted(plain["nodes"]) == [worker]
    assert plain["ineligibleNodes"][master] == (
        "node(s) had taint {node-role.kubernetes.io/control-plane: }, that the pod didn't tolerate")
    assert sorted(tolerant["nodes"]) == sorted([worker, master])
    (pod,) = job_pods(engine, "n14-plain")
    keys = {t.key for t in pod.spec.tolerations or []}
    assert "node-role.kubernetes.io/control-plane" not in keys
    assert "node.kubernetes.io/unschedulable" not in keys
