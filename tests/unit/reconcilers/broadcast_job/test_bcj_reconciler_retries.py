"""Per-node retries with backoff, `failurePolicy.backoffLimitPerNode` (checklist H: F15), in the pure pass."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from support.bcj_builders import (
    FIXED,
    MODES,
    NOW,
    BCJCluster,
    events_of,
    make_nodes,
    make_pod,
    make_spec,
    manifest,
)

from airflow_broadcast.reconcilers.broadcast_job.kind import BroadcastJobKind
from airflow_broadcast.reconcilers.broadcast_job.pods import attempt_of
from airflow_broadcast.reconcilers.broadcast_job.retries import RETRY_REASON, backoff_seconds, failed_at
from airflow_broadcast.reconcilers.handoff import provider_only_fields
from airflow_broadcast.reconcilers.observed import ContainerExit
from airflow_broadcast.specs.broadcast_job.parsing import parse_broadcast_job, to_manifest
from airflow_broadcast.specs.field_errors import InvalidSpecError


def fail_on(cluster: BCJCluster, node: str, at: float | None = None) -> None:
    """The pod on `node` fails, its container ending at `at` (default: now)."""
    ended = ContainerExit("main", 3, "Error", finished_at=cluster.now if at is None else at)
    cluster.set_phase("Failed", [node], exits=(ended,))


def started(limit: int, nodes: int = 3, **spec: Any) -> BCJCluster:
    cluster = BCJCluster(make_spec(backoff_limit_per_node=limit, **spec), make_nodes(nodes), options=FIXED)
    cluster.step()
    cluster.set_phase("Running")
    return cluster


def test_F15_backoff_doubles_from_ten_seconds_up_to_six_minutes() -> None:
    assert [backoff_seconds(a) for a in (1, 2, 3, 4, 5, 6, 7, 60)] == [10, 20, 40, 80, 160, 320, 360, 360]
    pod = make_pod("node-00", "Failed", exit_code=1)
    assert failed_at(pod) == pod.created_at, "no finish time (an eviction): from the pod's creation"
    assert failed_at(replace(pod, exits=(ContainerExit("a", 1, finished_at=NOW), ContainerExit("b", 1)))) == NOW


def test_F15_a_failed_node_runs_again_after_its_backoff_until_its_retries_are_used_up() -> None:
    cluster = started(2)
    fail_on(cluster, "node-00")

    waiting = cluster.step(advance=1)
    assert cluster.status["phase"] == "running" and cluster.status["failed"] == 0
    assert cluster.status["retrying"] == 1
    assert waiting.deletes == () and waiting.requeue_after == pytest.approx(9)

    due = cluster.step(advance=9)
    assert [(d.name, d.reason) for d in due.deletes] == [(cluster.plans[0].create_pods[0]["metadata"]["name"],
                                                         RETRY_REASON)]
    assert not events_of(due, RETRY_REASON), "recorded by the executor once the delete is done, not by the pass"
    assert [d.done_event.message for d in due.deletes if d.done_event] == [
        f"Pod {due.deletes[0].name} on node node-00 failed; the node runs again"]
    cluster.step()  # the node, now without a pod, gets its second attempt
    assert attempt_of(cluster.pod_on("node-00")) == 2
    assert "retrying" not in cluster.status

    cluster.set_phase("Running", ["node-00"])
    fail_on(cluster, "node-00")
    assert cluster.step().requeue_after == pytest.approx(19), "the second failure waits 20 s"
    cluster.step(advance=19)
    cluster.step()
    assert attempt_of(cluster.pod_on("node-00")) == 3
    fail_on(cluster, "node-00")  # the third attempt fails: two retries were all it had
    final = cluster.step()
    assert cluster.status["phase"] == "failed"
    assert cluster.status["failed"] == 1 + 2, "node-00 for good, and the two active pods FailFast deleted (F5)"
    assert "retrying" not in cluster.status and all(
        d.reason != RETRY_REASON for d in final.deletes)


def test_F15_failfast_and_completion_wait_for_a_retry_that_then_succeeds() -> None:
    cluster = started(1)
    cluster.set_phase("Succeeded", ["node-01", "node-02"])
    fail_on(cluster, "node-00")
    cluster.step()
    assert cluster.status["phase"] == "running", "neither FailFast nor completion while node-00 may run again"
    assert not cluster.status.get("conditions")
    cluster.step(advance=10)
    cluster.step()
    cluster.set_phase("Succeeded", ["node-00"])
    cluster.step()
    status = cluster.status
    assert (status["phase"], status["succeeded"], status["failed"]) == ("completed", 3, 0)
    assert status["nodes"]["node-00"]["attempt"] == 2


@pytest.mark.parametrize("mode", list(MODES))
def test_F15_without_a_limit_a_failure_counts_at_once_as_upstream(mode: str) -> None:
    cluster = BCJCluster(make_spec(), make_nodes(2), options=MODES[mode])
    cluster.step()
    fail_on(cluster, "node-00")
    plan = cluster.step()
    assert cluster.status["phase"] == "failed" and "retrying" not in cluster.status
    assert all(d.reason != RETRY_REASON for d in plan.deletes)


def test_F15_a_never_job_is_not_settled_while_a_node_waits_for_its_retry() -> None:
    cluster = started(1, completion="Never")
    cluster.set_phase("Succeeded", ["node-01", "node-02"])
    fail_on(cluster, "node-00")
    cluster.step()
    kind = BroadcastJobKind(FIXED)
    stored = to_manifest(cluster.spec)
    assert not kind.settled(replace(cluster.record, manifest=stored))
    cluster.step(advance=10)
    cluster.step()
    cluster.set_phase("Succeeded", ["node-00"])
    cluster.step()
    assert kind.settled(replace(cluster.record, manifest=stored))


def test_F15_the_limit_is_validated_stored_and_kept_from_the_cluster_controller() -> None:
    body = manifest(failure="FailFast", backoff_limit_per_node=3)
    stored = to_manifest(parse_broadcast_job(body))
    assert stored["spec"]["failurePolicy"] == {"type": "FailFast", "backoffLimitPerNode": 3}
    assert provider_only_fields("BroadcastJob", stored) == ["spec.failurePolicy.backoffLimitPerNode"]
    body["spec"]["failurePolicy"]["backoffLimitPerNode"] = -1
    with pytest.raises(InvalidSpecError) as refused:
        parse_broadcast_job(body)
    assert [e.path for e in refused.value.errors] == ["spec.failurePolicy.backoffLimitPerNode"]


def test_F15_a_node_between_its_retry_and_its_new_pod_is_no_failed_node_for_the_budget() -> None:
    cluster = started(1, max_failed_nodes=1)
    fail_on(cluster, "node-00")
    cluster.step(advance=10)
    cluster.step()
    fail_on(cluster, "node-00")  # its second and last attempt: a failed node, within the budget of one
    cluster.step()
    fail_on(cluster, "node-01")
    cluster.step(advance=10)  # node-01's retry is due: its pod is deleted
    assert cluster.status["phase"] == "running"
    rerun = cluster.step()  # node-01 has no pod yet: it waits for its next attempt, it has not failed
    assert cluster.status["phase"] == "running", cluster.status
    assert [c["metadata"]["annotations"]["airflow-broadcast.io/attempt"] for c in rerun.create_pods] == ["2"]
    assert cluster.status.get("failedNodes", ["node-00"]) == ["node-00"]


def test_F15_a_retrying_pod_whose_node_no_longer_fits_is_deleted_once_as_a_misfit() -> None:
    cluster = started(2, nodes=2, pod_spec={"nodeSelector": {"pool": "a"}})
    for name in ("node-00", "node-01"):
        cluster.nodes[name] = replace(cluster.nodes[name], labels={"pool": "a"})
    cluster.step()
    fail_on(cluster, "node-00")
    cluster.step()
    name = cluster.pod_on("node-00").name
    cluster.nodes["node-00"] = replace(cluster.nodes["node-00"], labels={"pool": "b"})
    plan = cluster.step(advance=30)  # its retry is due, and its node no longer fits
    assert [(d.name, d.reason) for d in plan.deletes] == [(name, "NodeNoLongerEligible")], "deleted once"
    status = cluster.status  # counted once, as failed: it waits for no retry and was never active
    assert (status["active"], status["failed"], status.get("retrying", 0)) == (1, 1, 0)
