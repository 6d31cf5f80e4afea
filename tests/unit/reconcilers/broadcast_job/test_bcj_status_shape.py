"""A8/A9: the status written to the record has upstream's shape."""

from __future__ import annotations

import json

from support.bcj_builders import NOW, BCJCluster, make_nodes, make_spec

from airflow_broadcast.specs.timestamps import to_rfc3339


def test_A8_counts_are_always_serialised_and_phase_is_lower_case() -> None:
    cluster = BCJCluster(make_spec(), make_nodes(0))
    cluster.step()
    status = json.loads(json.dumps(cluster.status))
    assert {k: status[k] for k in ("active", "succeeded", "failed", "desired")} == {
        "active": 0, "succeeded": 0, "failed": 0, "desired": 0}
    assert status["phase"] == "running"


def test_A9_finish_condition_has_upstream_shape() -> None:
    cluster = BCJCluster(make_spec(), make_nodes(2))
    cluster.step()
    cluster.set_phase("Succeeded", ["node-00", "node-01"])
    cluster.step()
    (condition,) = cluster.status["conditions"]
    assert condition["type"] == "Complete" and condition["status"] == "True" and condition["reason"] == "Complete"
    assert condition["lastProbeTime"] == condition["lastTransitionTime"] == cluster.status["completionTime"]
    assert cluster.status["phase"] == "completed"
    assert condition["lastProbeTime"] >= to_rfc3339(NOW)


def test_A9_a_failed_finish_condition_has_upstream_shape_too() -> None:
    cluster = BCJCluster(make_spec(failure="FailFast"), make_nodes(2))
    cluster.step()
    cluster.set_phase("Failed", ["node-00"])
    cluster.step()
    (condition,) = cluster.status["conditions"]
    assert condition["type"] == "Failed" and condition["status"] == "True" and condition["reason"] == "Failed"
    assert condition["lastProbeTime"] == condition["lastTransitionTime"] == cluster.status["completionTime"]
    assert cluster.status["phase"] == "failed"
