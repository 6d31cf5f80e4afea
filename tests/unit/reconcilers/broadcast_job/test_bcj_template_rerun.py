"""`spec.rerunOnTemplateChange` (checklist B: V18): a node that ran an earlier template runs again."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from support.bcj_builders import FIXED, BCJCluster, events_of, make_nodes, manifest

from airflow_broadcast.reconcilers.broadcast_job.pods import TEMPLATE_ANNOTATION, attempt_of, template_hash
from airflow_broadcast.reconcilers.broadcast_job.retries import TEMPLATE_REASON
from airflow_broadcast.reconcilers.handoff import provider_only_fields
from airflow_broadcast.specs.broadcast_job.parsing import parse_broadcast_job, to_manifest
from airflow_broadcast.specs.field_errors import InvalidSpecError


def rerun_job(image: str = "busybox:1", **fields: Any) -> dict[str, Any]:
    body = manifest(**fields)
    body["spec"]["rerunOnTemplateChange"] = True
    body["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return body


def edit_image(cluster: BCJCluster, image: str, **fields: Any) -> None:
    cluster.spec = parse_broadcast_job(rerun_job(image, **fields))


def test_V18_pods_carry_the_hash_of_the_template_they_were_built_from() -> None:
    body = rerun_job()
    cluster = BCJCluster(parse_broadcast_job(body), make_nodes(2), options=FIXED)
    plan = cluster.step()
    expected = template_hash(parse_broadcast_job(body).template)
    assert [p["metadata"]["annotations"][TEMPLATE_ANNOTATION] for p in plan.create_pods] == [expected] * 2
    plain = BCJCluster(parse_broadcast_job(manifest()), make_nodes(1), options=FIXED).step()
    assert TEMPLATE_ANNOTATION not in plain.create_pods[0]["metadata"]["annotations"], "off: upstream's pod"


def test_V18_an_edited_template_re_runs_the_nodes_that_finished_and_lets_running_pods_finish() -> None:
    cluster = BCJCluster(parse_broadcast_job(rerun_job(failure="Continue")), make_nodes(3), options=FIXED)
    cluster.step()
    cluster.set_phase("Succeeded", ["node-00"])
    cluster.set_phase("Failed", ["node-01"])
    cluster.set_phase("Running", ["node-02"])
    cluster.step()
    assert (cluster.status["succeeded"], cluster.status["failed"]) == (1, 1)

    edit_image(cluster, "busybox:2", failure="Continue")
    old = {node: cluster.pod_on(node).name for node in ("node-00", "node-01", "node-02")}
    plan = cluster.step()
    assert sorted((d.name, d.reason) for d in plan.deletes) == sorted(
        [(old["node-00"], TEMPLATE_REASON), (old["node-01"], TEMPLATE_REASON)])
    assert [e.message for e in (d.done_event for d in plan.deletes) if e is not None] == [
        f"Pod {old['node-00']} on node node-00 ran an earlier template; the node runs again",
        f"Pod {old['node-01']} on node node-01 ran an earlier template; the node runs again"]
    assert plan.finished is False
    assert (cluster.status["succeeded"], cluster.status["failed"], cluster.status["retrying"]) == (0, 0, 2)

    plan = cluster.step()
    new = {p["spec"]["nodeName"] if "nodeName" in p["spec"] else p["metadata"]["annotations"][
        "airflow-broadcast.io/node"]: p for p in plan.create_pods}
    assert sorted(new) == ["node-00", "node-01"], "the running pod on node-02 is left to finish"
    current = template_hash(cluster.spec.template)
    assert {p["metadata"]["annotations"][TEMPLATE_ANNOTATION] for p in new.values()} == {current}
    assert {n: p["metadata"]["annotations"]["airflow-broadcast.io/attempt"] for n, p in new.items()} == {
        "node-00": "2", "node-01": "2"}

    cluster.set_phase("Succeeded", ["node-02"])  # the old template's pod ends: its node runs again too
    plan = cluster.step()
    assert [(d.name, d.reason) for d in plan.deletes] == [(old["node-02"], TEMPLATE_REASON)]
    cluster.step()
    cluster.set_phase("Succeeded")
    cluster.step()
    assert cluster.status["phase"] == "completed"
    assert all(n["template"] == current for n in cluster.status["nodes"].values())
    assert all(attempt_of(p) == 2 for p in cluster.pods.values())


def test_V18_a_stored_success_of_an_earlier_template_runs_again_once_its_pod_is_gone() -> None:
    cluster = BCJCluster(parse_broadcast_job(rerun_job(completion="Never")), make_nodes(1), options=FIXED)
    cluster.step()
    cluster.set_phase("Succeeded")
    cluster.step()
    cluster.pods.clear()  # PodGC: the success stands without its pod (L12) ...
    assert cluster.step().create_pods == ()
    edit_image(cluster, "busybox:2", completion="Never")
    plan = cluster.step()  # ... until the template changes
    assert [p["metadata"]["annotations"]["airflow-broadcast.io/attempt"] for p in plan.create_pods] == ["2"]


def test_V18_without_an_edit_nothing_runs_again_and_the_job_completes() -> None:
    cluster = BCJCluster(parse_broadcast_job(rerun_job()), make_nodes(2), options=FIXED)
    cluster.step()
    cluster.set_phase("Succeeded")
    plan = cluster.step()
    assert plan.deletes == () and plan.finished
    assert cluster.status["phase"] == "completed"


def test_V18_a_policy_pause_ends_when_the_failed_nodes_are_re_run_with_a_fixed_template() -> None:
    cluster = BCJCluster(parse_broadcast_job(rerun_job(failure="Pause")), make_nodes(2), options=FIXED)
    cluster.step()
    cluster.set_phase("Succeeded", ["node-00"])
    cluster.set_phase("Failed", ["node-01"])
    cluster.step()
    assert cluster.status["phase"] == "paused"
    failed, succeeded = cluster.pod_on("node-01").name, cluster.pod_on("node-00").name

    edit_image(cluster, "busybox:fixed", failure="Pause")
    plan = cluster.step()
    assert cluster.status["phase"] == "running"
    assert [e.reason for e in plan.events] == ["Continue"]
    assert {d.name for d in plan.deletes} == {failed, succeeded}
    assert events_of(plan, "Paused") == []
    plan = cluster.step()
    current = template_hash(cluster.spec.template)
    assert [p["metadata"]["annotations"][TEMPLATE_ANNOTATION] for p in plan.create_pods] == [current] * 2
    cluster.set_phase("Succeeded")
    cluster.step()
    assert (cluster.status["phase"], cluster.status["succeeded"], cluster.status["failed"]) == ("completed", 2, 0)


@pytest.mark.parametrize("stuck", ["restart-failed", "image", "init-image", "unschedulable"])
def test_V18_a_pod_of_an_earlier_template_that_cannot_finish_is_replaced_at_once(stuck: str) -> None:
    """A broken template often leaves pods that never end: fixing it must not wait for them."""
    policy = "OnFailure" if stuck == "restart-failed" else "Never"
    cluster = BCJCluster(parse_broadcast_job(rerun_job(failure="Pause", restart_limit=1, restart_policy=policy)),
                         make_nodes(1), options=FIXED)
    cluster.step()
    if stuck == "restart-failed":
        cluster.set_phase("Running", restarts=5)
    elif stuck == "image":
        cluster.set_phase("Pending", waiting_reason="ImagePullBackOff")
    elif stuck == "init-image":
        cluster.set_phase("Pending", waiting_reason="PodInitializing", init_waiting_reason="ImagePullBackOff")
    else:
        cluster.set_phase("Pending", pending_message="Unschedulable: 0/1 nodes are available")
    old = cluster.pod_on("node-00").name
    cluster.step()
    edit_image(cluster, "busybox:fixed", failure="Pause", restart_limit=1, restart_policy=policy)
    plan = cluster.step()
    assert [(d.name, d.reason) for d in plan.deletes] == [(old, TEMPLATE_REASON)]
    assert [e.message for e in (d.done_event for d in plan.deletes) if e is not None] == [
        f"Pod {old} on node node-00 runs an earlier template; the node runs again"]
    assert cluster.status["phase"] == "running"


def test_V18_a_healthy_running_pod_of_an_earlier_template_is_left_to_finish() -> None:
    cluster = BCJCluster(parse_broadcast_job(rerun_job()), make_nodes(1), options=FIXED)
    cluster.step()
    cluster.set_phase("Running")
    edit_image(cluster, "busybox:2")
    assert cluster.step().deletes == ()


def test_V18_a_job_that_fails_while_nodes_wait_for_their_re_run_counts_their_last_results() -> None:
    """Nodes that succeeded with the old template, not yet re-run, are successes in the final counts."""
    cluster = BCJCluster(parse_broadcast_job(rerun_job(parallelism=1, ads=100)), make_nodes(3), options=FIXED)
    for _ in range(2):
        cluster.step()
        cluster.set_phase("Succeeded")
    cluster.step()
    cluster.set_phase("Running", ["node-02"])
    edit_image(cluster, "busybox:2", parallelism=1, ads=100)
    cluster.step()
    cluster.step(advance=200)
    status = cluster.status
    assert status["phase"] == "failed" and status["failureReason"] == "DeadlineExceeded"
    assert (status["succeeded"], status["failed"], status["desired"]) == (2, 1, 3)


def test_V18_the_field_is_a_boolean_of_this_provider_and_round_trips() -> None:
    body = rerun_job()
    assert parse_broadcast_job(body).rerun_on_template_change
    assert to_manifest(parse_broadcast_job(body))["spec"]["rerunOnTemplateChange"] is True
    assert provider_only_fields("BroadcastJob", body) == ["spec.rerunOnTemplateChange"]
    assert provider_only_fields("BroadcastJob", manifest()) == []
    body["spec"]["rerunOnTemplateChange"] = "yes"
    with pytest.raises(InvalidSpecError) as refused:
        parse_broadcast_job(body)
    assert [(e.path, e.message) for e in refused.value.errors] == [("spec.rerunOnTemplateChange", "must be a boolean")]


def test_V18_a_replaced_pod_that_is_still_terminating_keeps_its_node_waiting_for_the_re_run() -> None:
    cluster = BCJCluster(parse_broadcast_job(rerun_job()), make_nodes(2), options=FIXED)
    cluster.step()
    cluster.set_phase("Succeeded", ["node-01"])
    cluster.set_phase("Pending", ["node-00"], waiting_reason="ImagePullBackOff")
    cluster.step()
    stuck = cluster.pod_on("node-00")
    edit_image(cluster, "busybox:2")
    cluster.step()
    cluster.pods[stuck.name] = replace(stuck, deleting=True)  # its grace period
    for _ in range(3):
        plan = cluster.step()
        cluster.set_phase("Succeeded", ["node-01"])
    assert not plan.finished and cluster.status["phase"] == "running"
    assert cluster.status["retrying"] == 1
    del cluster.pods[stuck.name]
    cluster.step()
    cluster.set_phase("Succeeded")
    cluster.step()
    current = template_hash(cluster.spec.template)
    assert cluster.status["phase"] == "completed"
    assert {n: r["template"] for n, r in cluster.status["nodes"].items()} == {"node-00": current, "node-01": current}


def test_V18_a_job_that_fails_deletes_the_stuck_pods_of_an_earlier_template_too() -> None:
    cluster = BCJCluster(parse_broadcast_job(rerun_job(ads=100)), make_nodes(1), options=FIXED)
    cluster.step()
    cluster.set_phase("Pending", waiting_reason="ImagePullBackOff")
    stuck = cluster.pod_on("node-00")
    edit_image(cluster, "busybox:2", ads=100)
    cluster.step(advance=200)  # the deadline passes in the pass that first sees the edit
    assert cluster.status["phase"] == "failed"
    assert [(d.name, d.reason) for d in cluster.plans[-1].deletes] == [(stuck.name, "DeadlineExceeded")]
    assert (cluster.status["active"], cluster.status["failed"]) == (0, 1)


def test_V18_a_pod_to_re_run_on_a_node_now_left_out_is_deleted_once_and_counted_once() -> None:
    cluster = BCJCluster(parse_broadcast_job(rerun_job(pod_spec={"nodeSelector": {"pool": "a"}})),
                         make_nodes(2, labels={"pool": "a"}), options=FIXED)
    cluster.step()
    cluster.set_phase("Succeeded", ["node-00"])
    cluster.set_phase("Running", ["node-01"])
    cluster.step()
    old = cluster.pod_on("node-00").name
    cluster.nodes["node-00"] = replace(cluster.nodes["node-00"], labels={"pool": "b"})
    edit_image(cluster, "busybox:2", pod_spec={"nodeSelector": {"pool": "a"}})
    plan = cluster.step()
    assert [(d.name, d.reason) for d in plan.deletes] == [(old, TEMPLATE_REASON)]
    status = cluster.status
    assert (status["desired"], status["active"], status["succeeded"], status["failed"]) == (1, 1, 0, 0)
    cluster.step()
    assert "node-00" in cluster.status["ineligibleNodes"] and not any(
        p.node == "node-00" for p in cluster.pods.values())
