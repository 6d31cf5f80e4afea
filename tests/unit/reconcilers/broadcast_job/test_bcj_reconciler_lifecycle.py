"""Node and pod lifecycle (checklist L: L1-L6, L8, L9, L11, L12; plus N13) across passes of the pure reconciler.

L7 (heartbeat filtering) and L10 (pod events wake the job) are watch behaviour of the
cluster layer and are not tested here.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.bcj_builders import (
    COMPAT,
    FIXED,
    MODES,
    NOW,
    ROOMY,
    BCJCluster,
    created_nodes,
    events_of,
    make_node,
    make_nodes,
    make_pod,
    make_record,
    make_spec,
    started_status,
)

from airflow_broadcast.reconcilers.broadcast_job.node_eligibility import REASON_AFFINITY, REASON_TOO_MANY_PODS
from airflow_broadcast.reconcilers.broadcast_job.reconciler import BroadcastOptions, reconcile_broadcast_job
from airflow_broadcast.reconcilers.observed import NodeInfo

W = {"role": "w"}
UNSCHEDULABLE_MESSAGE = "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity."


def test_L1_new_eligible_node_joining_an_unfinished_job_gets_a_pod() -> None:
    cluster = BCJCluster(make_spec(), make_nodes(2))
    cluster.step()
    cluster.nodes["node-07"] = make_node("node-07")
    plan = cluster.step()
    assert created_nodes(plan) == ["node-07"]
    assert cluster.status["desired"] == 3


def test_L1_new_node_waits_for_a_parallelism_slot() -> None:
    cluster = BCJCluster(make_spec(parallelism=2), make_nodes(2))
    cluster.step()
    cluster.set_phase("Running")
    cluster.nodes["node-07"] = make_node("node-07")
    assert created_nodes(cluster.step()) == []
    cluster.set_phase("Succeeded", ["node-00"])
    assert created_nodes(cluster.step()) == ["node-07"]


def test_L2_new_node_after_an_always_job_finished_gets_no_pod() -> None:
    cluster = BCJCluster(make_spec(), make_nodes(1))
    cluster.step()
    cluster.set_phase("Succeeded")
    assert cluster.step().finished
    cluster.nodes["node-07"] = make_node("node-07")
    plan = cluster.step()
    assert plan.create_pods == () and plan.status is None


def test_L3_new_node_joining_a_never_job_gets_a_pod() -> None:
    cluster = BCJCluster(make_spec(completion="Never"), make_nodes(1))
    cluster.step()
    cluster.set_phase("Succeeded")
    cluster.step()
    cluster.nodes["node-07"] = make_node("node-07")
    assert created_nodes(cluster.step(advance=7 * 86400)) == ["node-07"]


def test_L4_deleted_node_drops_from_desired_and_its_pod_stays_counted() -> None:
    cluster = BCJCluster(make_spec(), make_nodes(3))
    cluster.step()
    cluster.set_phase("Running")
    cluster.step()
    del cluster.nodes["node-01"]
    plan = cluster.step()
    assert plan.deletes == ()
    assert (cluster.status["desired"], cluster.status["active"]) == (2, 3)
    assert "node-01" not in cluster.status["nodes"]


INELIGIBLE: dict[str, tuple[dict[str, Any], str]] = {
    "untolerated NoSchedule taint": ({"taints": [("dedicated", "db", "NoSchedule")]},
                                     "node(s) had taint {dedicated: db}, that the pod didn't tolerate"),
    "untolerated NoExecute taint": ({"taints": [("node.kubernetes.io/not-ready", "", "NoExecute")]},
                                    "node(s) had taint {node.kubernetes.io/not-ready: }, that the pod didn't tolerate"),
    "cordoned": ({"unschedulable": True}, "node(s) were unschedulable"),
    "nodeSelector label removed": ({"labels": {}}, REASON_AFFINITY),
    "allocatable pods gone": ({"allocatable": {**ROOMY, "pods": "0"}}, REASON_TOO_MANY_PODS),
    "allocatable cpu shrunk": ({"allocatable": {**ROOMY, "cpu": "100m"}}, "Insufficient cpu"),
}


@pytest.mark.parametrize("change", list(INELIGIBLE))
@pytest.mark.parametrize("phase", ["Succeeded", "Running"])
def test_L5_node_turning_ineligible_deletes_its_pod_even_if_succeeded(change: str, phase: str) -> None:
    spec = make_spec(failure="Continue", pod_spec={"nodeSelector": W, "containers": [
        {"name": "main", "image": "busybox:1.36", "resources": {"requests": {"cpu": "500m"}}}]})
    cluster = BCJCluster(spec, [make_node("node-00", labels=W), make_node("node-01", labels=W)])
    cluster.step()
    cluster.set_phase("Running", ["node-01"])  # keeps the job unfinished
    cluster.set_phase(phase, ["node-00"])
    cluster.step()
    before = cluster.status
    victim = cluster.pod_on("node-00")
    fields, reason = INELIGIBLE[change]
    cluster.nodes["node-00"] = make_node("node-00", **{"labels": W, **fields})
    plan = cluster.step()
    assert [(d.name, d.uid) for d in plan.deletes] == [(victim.name, victim.uid)]
    after = cluster.status
    assert after["failed"] == before["failed"] + 1
    assert after["active"] == before["active"] - 1
    assert after["desired"] == before["desired"] - 1
    assert after["ineligibleNodes"] == {"node-00": reason}
    assert created_nodes(plan) == []


def test_L6_node_turning_eligible_again_gets_a_pod() -> None:
    spec = make_spec(pod_spec={"nodeSelector": W})
    tainted = make_node("node-01", taints=[("k", "v", "NoSchedule")])
    cluster = BCJCluster(spec, [make_node("node-00", labels=W), tainted])
    cluster.step()
    assert "node-01" in cluster.status["ineligibleNodes"]
    for fixed_node in (make_node("node-01", taints=[("k", "v", "NoSchedule")], labels=W),
                       make_node("node-01", labels=W)):
        cluster.nodes["node-01"] = fixed_node
        plan = cluster.step()
    assert created_nodes(plan) == ["node-01"]
    assert cluster.status["ineligibleNodes"] == {}


@pytest.mark.parametrize(("phase", "mode"), [("Running", "fixed"), ("Failed", "fixed"), ("Pending", "fixed"),
                                           ("Running", "compat"), ("Succeeded", "compat"), ("Failed", "compat")])
def test_L8_externally_deleted_pod_is_recreated_on_its_node(phase: str, mode: str) -> None:
    """Every deleted pod is re-run upstream; by default a Succeeded one is not (L12)."""
    cluster = BCJCluster(make_spec(failure="Continue", parallelism=5), make_nodes(3), options=MODES[mode])
    cluster.step()
    cluster.set_phase(phase, ["node-01"])
    cluster.step()
    cluster.remove_pod("node-01")
    assert created_nodes(cluster.step()) == ["node-01"]


def test_L9_terminating_pod_blocks_a_replacement_until_it_is_gone() -> None:
    spec = make_spec(failure="Continue")
    terminating = make_pod("node-00", "Running", spec=spec, deleting=True)
    record = make_record(started_status())
    plan = reconcile_broadcast_job(spec, record, make_nodes(1), [terminating], NOW)
    assert created_nodes(plan) == []
    plan = reconcile_broadcast_job(spec, record, make_nodes(1), [], NOW + 1)
    assert created_nodes(plan) == ["node-00"]


def unschedulable_cluster(options: Any) -> BCJCluster:
    cluster = BCJCluster(make_spec(), make_nodes(2), options=options)
    cluster.step()
    pod = cluster.pod_on("node-00")
    cluster.pods[pod.name] = make_pod("node-00", "Pending", name=pod.name, uid=pod.uid,
                                      unschedulable=UNSCHEDULABLE_MESSAGE)
    return cluster


def test_L11_fixed_unschedulable_pending_pod_is_surfaced_once() -> None:
    cluster = unschedulable_cluster(FIXED)
    pod_name = cluster.pod_on("node-00").name
    plan = cluster.step()
    assert [(e.type, e.reason) for e in plan.events] == [("Warning", "PodUnschedulable")]
    assert pod_name in plan.events[0].message and "node-00" in plan.events[0].message
    assert UNSCHEDULABLE_MESSAGE in plan.events[0].message
    result = cluster.status["nodes"]["node-00"]
    assert (result["phase"], result["reason"]) == ("Pending", "Unschedulable")
    assert UNSCHEDULABLE_MESSAGE in result["message"]
    for _ in range(3):
        assert events_of(cluster.step(), "PodUnschedulable") == []
    assert cluster.status["active"] == 2  # still counted as active, as upstream


def test_L11_fixed_a_pod_that_becomes_unschedulable_again_is_surfaced_again() -> None:
    cluster = unschedulable_cluster(FIXED)
    cluster.step()
    cluster.set_phase("Running", ["node-00"], pending_message="")
    cluster.step()
    cluster.remove_pod("node-00")
    cluster.step()     # re-created
    pod = cluster.pod_on("node-00")
    cluster.pods[pod.name] = make_pod("node-00", "Pending", name=pod.name, uid=pod.uid, attempt=2,
                                      unschedulable=UNSCHEDULABLE_MESSAGE)
    assert len(events_of(cluster.step(), "PodUnschedulable")) == 1


def test_L11_compat_unschedulable_pod_only_counts_as_active() -> None:
    cluster = unschedulable_cluster(COMPAT)
    plan = cluster.step()
    assert plan.events == ()
    assert cluster.status["active"] == 2


@pytest.mark.parametrize("completion", ["Always", "Never"])
def test_L12_a_succeeded_node_whose_pod_is_gone_is_not_run_again(completion: str) -> None:
    """PodGC or a hand cleanup of a Succeeded pod leaves the node done: no re-run, still counted."""
    cluster = BCJCluster(make_spec(completion=completion), make_nodes(2))
    cluster.step()
    cluster.set_phase("Succeeded", ["node-00"])
    cluster.step()
    first = dict(cluster.status["nodes"]["node-00"])
    cluster.remove_pod("node-00")
    for _ in range(3):
        assert created_nodes(cluster.step()) == []
    assert cluster.status["nodes"]["node-00"] == first
    assert (cluster.status["succeeded"], cluster.status["active"], cluster.status["desired"]) == (1, 1, 2)


def test_L12_a_job_whose_succeeded_pods_were_collected_completes_with_their_count() -> None:
    cluster = BCJCluster(make_spec(), make_nodes(3))
    cluster.step()
    cluster.set_phase("Succeeded", ["node-00", "node-01"])
    cluster.step()
    cluster.remove_pod("node-00")
    cluster.remove_pod("node-01")
    cluster.step()
    assert cluster.status["phase"] == "running"
    cluster.set_phase("Succeeded", ["node-02"])
    plan = cluster.step()
    assert cluster.status["phase"] == "completed"
    assert cluster.status["succeeded"] == 3
    assert [e.message for e in events_of(plan, "JobComplete")] == [
        "Job ops/bcj is completed, 3 pods succeeded, 0 pods failed"]


def test_L12_compat_a_nodes_result_outlives_its_pod_but_the_node_runs_again() -> None:
    """With kruise_compat the node is re-run as upstream (L8); the earlier result stays beside the new attempt."""
    cluster = BCJCluster(make_spec(completion="Never"), make_nodes(2), options=COMPAT)
    cluster.step()
    cluster.set_phase("Succeeded", ["node-00"])
    cluster.step()
    first = dict(cluster.status["nodes"]["node-00"])
    cluster.remove_pod("node-00")
    plan = cluster.step()
    assert cluster.status["nodes"]["node-00"]["previous"] == first
    assert cluster.status["nodes"]["node-00"]["attempt"] == 2
    assert created_nodes(plan) == ["node-00"]


def test_L12_cleanup_deletes_a_succeeded_pod_once_its_result_is_recorded() -> None:
    cluster = BCJCluster(make_spec(), make_nodes(2), options=BroadcastOptions(cleanup_succeeded_pods=True))
    cluster.step()
    cluster.set_phase("Succeeded", ["node-00"])
    seen = cluster.step()
    assert seen.deletes == ()  # the pass that first sees the success only records it
    pod = cluster.pod_on("node-00")
    plan = cluster.step()
    assert [(d.name, d.uid) for d in plan.deletes] == [(pod.name, pod.uid)]
    assert created_nodes(cluster.step()) == []
    assert cluster.status["succeeded"] == 1


def test_L12_cleanup_deletes_the_last_succeeded_pods_after_the_job_completes() -> None:
    cluster = BCJCluster(make_spec(), make_nodes(2), options=BroadcastOptions(cleanup_succeeded_pods=True))
    cluster.step()
    cluster.set_phase("Succeeded")
    cluster.step()
    assert cluster.status["phase"] == "completed"
    cluster.step()
    assert cluster.pods == {}
    assert cluster.status["succeeded"] == 2


def test_L12_cleanup_has_no_effect_with_kruise_compat_before_or_after_completion() -> None:
    options = BroadcastOptions(cleanup_succeeded_pods=True, kruise_compat=True)
    cluster = BCJCluster(make_spec(), make_nodes(2), options=options)
    cluster.step()
    cluster.set_phase("Succeeded", ["node-00"])
    assert cluster.step().deletes == ()
    cluster.set_phase("Succeeded")
    cluster.step()
    assert cluster.status["phase"] == "completed"
    assert cluster.step().deletes == ()
    assert sorted(str(p.node) for p in cluster.pods.values()) == ["node-00", "node-01"]


def test_L12_cleanup_keeps_failed_pods_and_is_off_by_default() -> None:
    options = BroadcastOptions(cleanup_succeeded_pods=True)
    cluster = BCJCluster(make_spec(failure="Continue", completion="Never"), make_nodes(2), options=options)
    plain = BCJCluster(make_spec(completion="Never"), make_nodes(2))
    for c in (cluster, plain):
        c.step()
        c.set_phase("Failed", ["node-00"])
        c.set_phase("Succeeded", ["node-01"])
        c.step()
        c.step()
    assert [p.node for p in cluster.pods.values()] == ["node-00"]
    assert sorted(str(p.node) for p in plain.pods.values()) == ["node-00", "node-01"]


def test_L12_node_leaving_desired_drops_its_result() -> None:
    cluster = BCJCluster(make_spec(completion="Never"), make_nodes(2))
    cluster.step()
    del cluster.nodes["node-01"]
    cluster.step()
    assert set(cluster.status["nodes"]) == {"node-00"}
    nodes: list[NodeInfo] = list(cluster.nodes.values())
    assert [n.name for n in nodes] == ["node-00"]


ZONE_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}


@pytest.mark.parametrize(("by_scheduler", "deleted"), [(True, False), (False, True)])
def test_N13_existing_pod_is_rechecked_with_its_own_spec(by_scheduler: bool, deleted: bool) -> None:
    """Scheduler mode replaced the template's required affinity with the name pin, so a
    zone label change does not evict; nodeName mode kept the affinity, so it does."""
    spec = make_spec(failure="Continue", pod_spec={"affinity": ZONE_AFFINITY})
    options = BroadcastOptions(assign_by_scheduler=by_scheduler)
    cluster = BCJCluster(spec, [make_node("node-00", labels={"zone": "a"}), make_node("node-01", labels={"zone": "a"})],
                         options=options)
    cluster.step()
    cluster.nodes["node-00"] = make_node("node-00", labels={"zone": "b"})
    plan = cluster.step()
    assert bool(plan.deletes) is deleted
    assert ("node-00" in cluster.status["ineligibleNodes"]) is deleted


def test_N13_nodeselector_change_evicts_in_scheduler_mode() -> None:
    spec = make_spec(failure="Continue", pod_spec={"nodeSelector": {"zone": "a"}})
    cluster = BCJCluster(spec, [make_node("node-00", labels={"zone": "a"}), make_node("node-01", labels={"zone": "a"})])
    cluster.step()
    cluster.nodes["node-00"] = make_node("node-00", labels={"zone": "b"})
    plan = cluster.step()
    assert [d.name for d in plan.deletes] == [cluster.plans[0].create_pods[0]["metadata"]["name"]]


@pytest.mark.parametrize("message", ["", "0/1 nodes are available"])
def test_L11_fixed_unschedulable_condition_is_surfaced_with_or_without_message(message: str) -> None:
    pod = make_pod("node-00", "Pending", unschedulable=message)
    plan = reconcile_broadcast_job(make_spec(), make_record(started_status()), make_nodes(1), [pod], NOW)
    [event] = events_of(plan, "PodUnschedulable")
    assert event.message.endswith(f"cannot be scheduled: {message}")
    assert plan.status is not None and plan.status["nodes"]["node-00"]["reason"] == "Unschedulable"


def test_L11_pending_pod_waiting_for_its_image_is_not_unschedulable() -> None:
    pod = make_pod("node-00", "Pending", waiting_reason="ContainerCreating")
    plan = reconcile_broadcast_job(make_spec(), make_record(started_status()), make_nodes(1), [pod], NOW)
    assert events_of(plan, "PodUnschedulable") == []
