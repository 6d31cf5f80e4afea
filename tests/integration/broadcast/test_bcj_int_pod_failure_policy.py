"""`spec.podFailurePolicy` (checklist H: F16), on the real cluster: a FailJob exit code, an ignored one."""

from __future__ import annotations

from typing import Any

import pytest
from bcj_cluster import KIND, SIM, bcj, condition
from support.sim_time import fail_until

from airflow_broadcast.reconcilers.broadcast_job.retries import RULE_REASON

pytestmark = pytest.mark.cluster


def test_F16_an_exit_code_rule_fails_a_continue_job_at_once(engine: Any, node_factory: Any, namespace: str) -> None:
    nodes = sorted(node_factory(3, labels={"pool": namespace}))
    manifest = bcj("ruled", namespace, result=None, fail_nodes=[nodes[1]], annotations={f"{SIM}/exit-code": "42"},
                   failurePolicy={"type": "Continue"},
                   podFailurePolicy={"rules": [{"action": "FailJob",
                                                "onExitCodes": {"operator": "In", "values": [42]}}]})

    outcome = engine.drive(engine.submit(manifest), KIND, timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "ruled")
    assert (status["phase"], status["failureReason"]) == ("failed", RULE_REASON)
    assert condition(status, "Failed")["message"].endswith(
        f"on node {nodes[1]} failed with exit code 42, matching podFailurePolicy.rules[0] (FailJob)")


def test_F16_an_ignored_exit_code_runs_the_node_again_without_counting(
        engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(2, labels={"pool": namespace})
    manifest = bcj("ignored", namespace, after="1s", annotations={f"{SIM}/fail-until": fail_until(3),
                                                                  f"{SIM}/exit-code": "137"},
                   podFailurePolicy={"rules": [{"action": "Ignore",
                                                "onExitCodes": {"operator": "In", "values": [137]}}]})

    outcome = engine.drive(engine.submit(manifest), KIND, timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "ignored")
    assert (status["phase"], status["succeeded"], status["failed"]) == ("completed", 2, 0)
    attempts = [n["attempt"] for n in status["nodes"].values()]
    assert len(attempts) == 2 and min(attempts) >= 2, "every pod created before the time failed, and was re-run"


INIT_CHECK = {"initContainers": [{"name": "check", "image": "busybox"}]}


def test_F16_a_rule_on_an_init_container_fails_the_job_when_that_container_fails(
        engine: Any, node_factory: Any, namespace: str) -> None:
    (node,) = node_factory(1, labels={"pool": namespace})
    manifest = bcj("init-ruled", namespace, annotations={f"{SIM}/init-fail": "4"}, pod_spec=INIT_CHECK,
                   failurePolicy={"type": "Continue"},
                   podFailurePolicy={"rules": [{"action": "FailJob", "onExitCodes": {
                       "containerName": "check", "operator": "In", "values": [4]}}]})

    outcome = engine.drive(engine.submit(manifest), KIND, timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "init-ruled")
    assert (status["phase"], status["failureReason"]) == ("failed", RULE_REASON)
    assert condition(status, "Failed")["message"].endswith(
        f"on node {node} failed with exit code 4, matching podFailurePolicy.rules[0] (FailJob)")
    row = status["nodes"][node]
    assert (row["phase"], row["exitCode"], row["reason"], row["container"], row["message"]) == (
        "Failed", 4, "Init:Error", "check", "init check failed")
