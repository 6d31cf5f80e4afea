"""Per-node retries with backoff, `failurePolicy.backoffLimitPerNode` (checklist H: F15), on the real cluster."""

from __future__ import annotations

from typing import Any

import pytest
from bcj_cluster import ATTEMPT_ANNOTATION, KIND, SIM, bcj, condition, events, job_pods
from support.sim_time import fail_until

from airflow_broadcast.reconcilers.broadcast_job.retries import RETRY_REASON

pytestmark = pytest.mark.cluster

def test_F15_failed_nodes_run_again_after_the_backoff_and_the_job_completes(
        engine: Any, node_factory: Any, namespace: str) -> None:
    nodes = sorted(node_factory(3, labels={"pool": namespace}))
    manifest = bcj("again", namespace, after="1s", annotations={f"{SIM}/fail-until": fail_until(4)},
                   failurePolicy={"type": "FailFast", "backoffLimitPerNode": 1})

    outcome = engine.drive(engine.submit(manifest), KIND, timeout=90)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "again")
    assert (status["phase"], status["succeeded"], status["failed"]) == ("completed", 3, 0)
    assert "retrying" not in status
    assert {n: status["nodes"][n]["attempt"] for n in nodes} == dict.fromkeys(nodes, 2)
    assert sorted(p.metadata.annotations[ATTEMPT_ANNOTATION] for p in job_pods(engine, "again")) == ["2"] * 3
    assert sorted(m for _, r, m in events(engine, "again") if r == RETRY_REASON) == sorted(
        f"Pod {status['nodes'][n]['pod']} on node {n} failed; the node runs again" for n in nodes)


def test_F15_a_node_that_fails_every_attempt_fails_the_job_once_its_retries_are_used_up(
        engine: Any, node_factory: Any, namespace: str) -> None:
    nodes = sorted(node_factory(2, labels={"pool": namespace}))
    manifest = bcj("stubborn", namespace, after="1s", fail_nodes=[nodes[0]],
                   failurePolicy={"type": "FailFast", "backoffLimitPerNode": 1})

    outcome = engine.drive(engine.submit(manifest), KIND, timeout=90)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "stubborn")
    assert status["phase"] == "failed" and condition(status, "Failed") is not None
    assert status["nodes"][nodes[0]]["attempt"] == 2, "the first failure was retried, the second was final"
    assert status["nodes"][nodes[1]]["phase"] == "Succeeded"
    assert [r for _, r, _ in events(engine, "stubborn")].count(RETRY_REASON) == 1
