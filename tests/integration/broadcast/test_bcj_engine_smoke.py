"""The engine drives a BroadcastJob on the real cluster (template for the checklist integration tests)."""

from __future__ import annotations

from typing import Any

import pytest

SIM = "sim.airflow-broadcast.io"
pytestmark = pytest.mark.cluster


def manifest(name: str, selector: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": name},
            "spec": {"template": {"metadata": {"annotations": {f"{SIM}/result": "Succeeded"}},
                                  "spec": {"nodeSelector": selector, "restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox"}]}}, **spec}}


def test_C1_engine_completes_a_job_on_every_eligible_node(engine: Any, node_factory: Any, namespace: str) -> None:
    nodes = node_factory(3, labels={"pool": namespace})
    (tainted,) = node_factory(1, labels={"pool": namespace},
                              taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    submission = engine.submit(manifest("smoke", {"pool": namespace}))

    outcome = engine.drive(submission, "BroadcastJob")

    assert outcome.reason == "finished"
    status = engine.status("BroadcastJob", "smoke")
    assert status["phase"] == "completed"
    assert sorted(status["nodes"]) == sorted(nodes)
    assert status["ineligibleNodes"][tainted] == "node(s) had taint {k: v}, that the pod didn't tolerate"
    assert len(engine.pods("broadcastjob-name=smoke")) == 3
