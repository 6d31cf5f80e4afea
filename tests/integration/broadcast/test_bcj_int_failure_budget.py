"""The failure budget `spec.failurePolicy.maxFailedNodes` (checklist H: F17), on the real cluster."""

from __future__ import annotations

from typing import Any

import pytest
from bcj_cluster import KIND, bcj, condition

pytestmark = pytest.mark.cluster

FAILFAST = "failure policy is FailurePolicyTypeFailFast and failed pod is found"


@pytest.mark.parametrize(("budget", "phase"), [(2, "completed"), ("25%", "failed")], ids=["within", "past"])
def test_F17_failfast_lets_the_budget_of_failed_nodes_pass(
        engine: Any, node_factory: Any, namespace: str, budget: int | str, phase: str) -> None:
    nodes = sorted(node_factory(4, labels={"pool": namespace}))
    manifest = bcj("budget", namespace, after="1s", fail_nodes=nodes[:2],
                   failurePolicy={"type": "FailFast", "maxFailedNodes": budget})

    outcome = engine.drive(engine.submit(manifest), KIND)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "budget")
    assert (status["phase"], status["desired"]) == (phase, 4)
    if phase == "completed":  # two failed nodes, a budget of two: the other nodes ran to the end
        assert (status["succeeded"], status["failed"], status["active"]) == (2, 2, 0)
        assert condition(status, "Complete")["message"] == "Job completed, 2 pods succeeded, 2 pods failed"
    else:  # 25 % of 4 nodes is one: the second failure is past it
        assert status["failed"] >= 2
        assert condition(status, "Failed")["message"] == FAILFAST
    stored = engine.record(KIND, "budget")
    assert f'"maxFailedNodes": {budget!r}'.replace("'", '"') in stored.data["manifest"]
