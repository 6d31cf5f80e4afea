"""`spec.podFailurePolicy` (checklist H: F16): exit-code and condition rules with FailJob, Ignore, FailNode, Count."""

from __future__ import annotations

from typing import Any

import pytest
from support.bcj_builders import FIXED, BCJCluster, events_of, make_nodes, make_spec, manifest

from airflow_broadcast.reconcilers.broadcast_job.pods import attempt_of
from airflow_broadcast.reconcilers.broadcast_job.retries import RETRY_REASON, RULE_REASON
from airflow_broadcast.reconcilers.handoff import provider_only_fields
from airflow_broadcast.reconcilers.observed import ContainerExit
from airflow_broadcast.specs.broadcast_job.parsing import parse_broadcast_job, to_manifest
from airflow_broadcast.specs.field_errors import InvalidSpecError


def with_rules(*rules: dict[str, Any], **fields: Any) -> dict[str, Any]:
    body = manifest(**fields)
    body["spec"]["podFailurePolicy"] = {"rules": list(rules)}
    return body


def exit_rule(action: str, operator: str, *values: int, container: str | None = None) -> dict[str, Any]:
    codes: dict[str, Any] = {"operator": operator, "values": list(values)}
    if container is not None:
        codes["containerName"] = container
    return {"action": action, "onExitCodes": codes}


def running(body: dict[str, Any], nodes: int = 3) -> BCJCluster:
    cluster = BCJCluster(parse_broadcast_job(body), make_nodes(nodes), options=FIXED)
    cluster.step()
    cluster.set_phase("Running")
    return cluster


def fail(cluster: BCJCluster, node: str, code: int = 1, container: str = "main",
         conditions: tuple[tuple[str, str], ...] = ()) -> None:
    cluster.set_phase("Failed", [node], exits=(ContainerExit(container, code, "Error", finished_at=cluster.now),),
                      conditions=conditions)


def test_F16_a_failjob_rule_fails_the_job_at_once_whatever_the_policy() -> None:
    cluster = running(with_rules(exit_rule("FailJob", "In", 42), failure="Continue"))
    fail(cluster, "node-01", 42)
    pod = cluster.pod_on("node-01").name
    plan = cluster.step()
    status = cluster.status
    assert status["phase"] == "failed" and status["failureReason"] == RULE_REASON
    message = f"Pod {pod} on node node-01 failed with exit code 42, matching podFailurePolicy.rules[0] (FailJob)"
    assert status["conditions"][0]["message"] == message
    assert sorted(d.reason for d in plan.deletes) == [RULE_REASON, RULE_REASON], "the two active pods go (F5)"
    assert [e.message for e in events_of(plan, RULE_REASON)] == [f"{message}: 0 pods succeeded, 3 pods failed"]


def test_F16_without_a_match_continue_keeps_going() -> None:
    cluster = running(with_rules(exit_rule("FailJob", "In", 42), failure="Continue"))
    fail(cluster, "node-01", 1)
    cluster.step()
    assert cluster.status["phase"] == "running" and cluster.status["failed"] == 1


def test_F16_an_ignored_failure_runs_the_node_again_at_once_and_is_not_counted() -> None:
    disrupted = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
    cluster = running(with_rules(disrupted))  # FailFast: a counted failure would end the job
    fail(cluster, "node-00", 137, conditions=(("DisruptionTarget", "True"), ("Ready", "False")))
    plan = cluster.step()
    assert cluster.status["phase"] == "running" and cluster.status["failed"] == 0
    assert [d.reason for d in plan.deletes] == [RETRY_REASON] and plan.deletes[0].done_event is not None
    cluster.step()
    assert attempt_of(cluster.pod_on("node-00")) == 2
    fail(cluster, "node-00", 137, conditions=(("DisruptionTarget", "False"),))  # not the pattern: counted
    cluster.step()
    assert cluster.status["phase"] == "failed"


def test_F16_failnode_takes_no_retry_and_count_leaves_the_failure_to_the_retries() -> None:
    rules = (exit_rule("FailNode", "In", 3), exit_rule("Count", "NotIn", 5, container="main"))
    cluster = running(with_rules(*rules, failure="Continue", backoff_limit_per_node=2))
    fail(cluster, "node-00", 3)
    fail(cluster, "node-01", 1)
    fail(cluster, "node-02", 1, container="sidecar")  # the Count rule names another container: no rule matches
    cluster.step()
    status = cluster.status
    assert (status["failed"], status["retrying"]) == (1, 2)
    assert status["nodes"]["node-00"]["attempt"] == 1


def test_F16_the_policy_is_validated_with_field_paths_and_stored() -> None:
    rules = [exit_rule("FailJob", "In", 42, 7), {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
    stored = to_manifest(parse_broadcast_job(with_rules(*rules)))["spec"]["podFailurePolicy"]
    assert stored == {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [7, 42]}},
                                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget",
                                                                          "status": "True"}]}]}
    assert provider_only_fields("BroadcastJob", {"spec": {"podFailurePolicy": stored}}) == ["spec.podFailurePolicy"]
    assert make_spec().pod_failure_rules == () and "podFailurePolicy" not in to_manifest(make_spec())["spec"]
    bad = [
        {"action": "Retry", "onExitCodes": {"operator": "In", "values": [1]}},
        {"action": "Ignore"},
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1]}, "onPodConditions": [{"type": "X"}]},
        exit_rule("Count", "Within", 1),
        exit_rule("Count", "In", 0, 2, 2, container="nope"),
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "Maybe"}]},
    ]
    with pytest.raises(InvalidSpecError) as refused:
        parse_broadcast_job(with_rules(*bad))
    assert [(e.path, e.kind) for e in refused.value.errors] == [
        ("spec.podFailurePolicy.rules[0].action", "NotSupported"),
        ("spec.podFailurePolicy.rules[1]", "Invalid"),
        ("spec.podFailurePolicy.rules[2]", "Invalid"),
        ("spec.podFailurePolicy.rules[3].onExitCodes.operator", "NotSupported"),
        ("spec.podFailurePolicy.rules[4].onExitCodes.containerName", "Invalid"),
        ("spec.podFailurePolicy.rules[4].onExitCodes.values[0]", "Invalid"),
        ("spec.podFailurePolicy.rules[4].onExitCodes.values[2]", "Duplicate"),
        ("spec.podFailurePolicy.rules[5].onPodConditions[0].status", "NotSupported"),
    ]
    assert "must not be 0 for the In operator" in str(refused.value)
    assert "specifying one of onExitCodes and onPodConditions is required" in str(refused.value)


def test_F16_failjob_acts_under_the_pause_policy_and_names_what_matched() -> None:
    cluster = running(with_rules(exit_rule("FailJob", "In", 127, container="main"), failure="Pause"))
    fail(cluster, "node-00", 1)  # counted: the Pause policy pauses
    cluster.step()
    assert cluster.status["phase"] == "paused"
    ended = (ContainerExit("sidecar", 1, "Error"), ContainerExit("main", 127, "Error"))
    cluster.set_phase("Failed", ["node-01"], exits=ended)
    pod = cluster.pod_on("node-01").name
    cluster.step()
    assert cluster.status["phase"] == "failed"
    assert cluster.status["conditions"][-1]["message"] == (
        f"Pod {pod} on node node-01 failed with exit code 127, matching podFailurePolicy.rules[0] (FailJob)")


def test_F16_needs_restart_policy_never_and_a_container_of_the_template() -> None:
    with pytest.raises(InvalidSpecError) as refused:
        parse_broadcast_job(with_rules(exit_rule("Count", "In", 1, container="other"), restart_policy="OnFailure",
                                       pod_spec={"initContainers": [{"name": "init", "image": "busybox"}]}))
    assert [e.path for e in refused.value.errors] == [
        "spec.template.spec.restartPolicy", "spec.podFailurePolicy.rules[0].onExitCodes.containerName"]
    warnings: list[str] = []
    parse_broadcast_job(with_rules({"action": "Ignore", "onPodConditions": [{"type": "X", "stauts": "False"}]}),
                        warnings=warnings)
    assert warnings == ['unknown field "spec.podFailurePolicy.rules[0].onPodConditions[0].stauts"']


def test_F16_an_exit_code_rule_matches_a_failed_init_container_as_the_job_controller_does() -> None:
    body = with_rules(exit_rule("FailJob", "In", 9, container="check"), failure="Continue",
                      pod_spec={"initContainers": [{"name": "check", "image": "busybox"}]})
    cluster = running(body)
    cluster.set_phase("Failed", ["node-01"], init_exits=(ContainerExit("check", 9, "Error", finished_at=cluster.now),))
    pod = cluster.pod_on("node-01").name
    cluster.step()
    assert cluster.status["phase"] == "failed"
    assert cluster.status["conditions"][0]["message"] == (
        f"Pod {pod} on node node-01 failed with exit code 9, matching podFailurePolicy.rules[0] (FailJob)")


def test_F16_a_rule_naming_a_sidecar_is_refused_for_its_exit_is_never_looked_at() -> None:
    sidecar = {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}
    with pytest.raises(InvalidSpecError) as refused:
        parse_broadcast_job(with_rules(exit_rule("FailJob", "In", 1, container="proxy"),
                                       pod_spec={"initContainers": [sidecar]}))
    assert [e.path for e in refused.value.errors] == ["spec.podFailurePolicy.rules[0].onExitCodes.containerName"]
    assert "is a sidecar" in refused.value.errors[0].message
