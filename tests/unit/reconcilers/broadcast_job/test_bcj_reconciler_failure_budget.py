"""The failure budget `spec.failurePolicy.maxFailedNodes` (checklist H: F17) of the pure BroadcastJob pass."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from support.bcj_builders import (
    FIXED,
    MODES,
    NOW,
    BCJCluster,
    created_nodes,
    events_of,
    make_nodes,
    make_pod,
    make_record,
    make_spec,
    manifest,
    started_status,
)

from airflow_broadcast.reconcilers.broadcast_job.reconciler import (
    FAILFAST_MESSAGE,
    PAUSED_BY_POLICY,
    reconcile_broadcast_job,
)
from airflow_broadcast.reconcilers.handoff import decide, provider_only_fields
from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.specs.broadcast_job.parsing import parse_broadcast_job, to_manifest
from airflow_broadcast.specs.field_errors import InvalidSpecError


def one_pass(budget: int | str, phases: list[str], nodes: int = 10, **kwargs: Any) -> Plan:
    spec = make_spec(max_failed_nodes=budget, **kwargs)
    pods = [make_pod(f"node-{i:02d}", phase, spec=spec) for i, phase in enumerate(phases)]
    return reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(nodes), pods, NOW, FIXED)


@pytest.mark.parametrize(("budget", "failed", "fails"), [
    (0, 1, True),        # no budget: the first failure fails the job, as upstream
    (2, 2, False),       # within the budget: the job runs on
    (2, 3, True),        # one past it: FailFast acts
    ("20%", 2, False),   # 20 % of 10 desired nodes = 2
    ("20%", 3, True),
    ("25%", 2, False),   # 2.5, rounded down: 2
    ("25%", 3, True),
])
def test_F17_failfast_acts_only_past_the_budget(budget: int | str, failed: int, fails: bool) -> None:
    plan = one_pass(budget, ["Failed"] * failed + ["Running"])
    assert plan.status is not None
    assert plan.status["failed"] >= failed
    if fails:
        assert plan.status["phase"] == "failed" and plan.finished
        assert plan.status["conditions"][0]["message"] == FAILFAST_MESSAGE
        assert [d.name for d in plan.deletes], "FailFast deletes the active pods"
    else:
        assert plan.status["phase"] == "running" and not plan.finished
        assert plan.deletes == () and not plan.status.get("conditions")
        assert len(created_nodes(plan)) > 0, "the remaining nodes still get pods"


@pytest.mark.parametrize("mode", list(MODES))
def test_F17_pause_acts_only_past_the_budget(mode: str) -> None:
    spec = make_spec(failure="Pause", max_failed_nodes=1)
    cluster = BCJCluster(spec, make_nodes(4), options=MODES[mode])
    cluster.step()
    cluster.set_phase("Running")
    cluster.set_phase("Failed", ["node-00"])
    within = cluster.step()
    assert cluster.status["phase"] == "running" and not events_of(within, "Paused")
    cluster.set_phase("Failed", ["node-01"])
    past = cluster.step()
    assert cluster.status["phase"] == "paused" and events_of(past, "Paused")
    assert past.create_pods == () and past.deletes == ()
    if mode == "fixed":
        assert cluster.record.annotations.get(PAUSED_BY_POLICY) == "true"


def test_F17_a_job_within_its_budget_completes_with_its_failures_counted() -> None:
    spec = make_spec(max_failed_nodes=1)
    cluster = BCJCluster(spec, make_nodes(3), options=FIXED)
    cluster.step()
    cluster.set_phase("Succeeded")
    cluster.set_phase("Failed", ["node-02"])
    cluster.step()
    status = cluster.status
    assert (status["phase"], status["succeeded"], status["failed"]) == ("completed", 2, 1)
    assert [c["type"] for c in status["conditions"]] == ["Complete"]


def test_F17_the_budget_is_validated_stored_and_kept_out_of_the_cluster_controller() -> None:
    spec = make_spec(max_failed_nodes="10%")
    assert spec.failure_policy.max_failed_nodes == "10%"
    stored = to_manifest(spec)
    assert stored["spec"]["failurePolicy"] == {"type": "FailFast", "maxFailedNodes": "10%"}
    assert "maxFailedNodes" not in to_manifest(make_spec())["spec"]["failurePolicy"], "unset: not written"
    for bad, what in ((-1, "must be greater than or equal to 0"), ("ten", "percentage"), (True, "integer")):
        with pytest.raises(InvalidSpecError) as refused:
            parse_broadcast_job(manifest(max_failed_nodes=bad))
        assert [e.path for e in refused.value.errors] == ["spec.failurePolicy.maxFailedNodes"]
        assert what in str(refused.value)
    assert provider_only_fields("BroadcastJob", stored) == ["spec.failurePolicy.maxFailedNodes"]
    assert provider_only_fields("BroadcastJob", to_manifest(make_spec())) == []
    decision = decide("auto", "BroadcastJob", crd_served=True, acting=True,
                      extensions=["spec.failurePolicy.maxFailedNodes"])
    assert decision.controller == "airflow" and "maxFailedNodes" in decision.reason


def test_F17_a_budget_edited_past_validation_counts_as_none() -> None:
    assert make_spec(max_failed_nodes=3).failure_policy.budget(10) == 3
    broken = replace(make_spec().failure_policy, max_failed_nodes="3")  # no "%": upstream's IntOrString error
    assert broken.budget(10) == 0
    plan = reconcile_broadcast_job(replace(make_spec(), failure_policy=broken), make_record(started_status()),
                                   make_nodes(4), [make_pod("node-00", "Failed")], NOW, FIXED)
    assert plan.status is not None and plan.status["phase"] == "failed", "any failure counts, as upstream"


@pytest.mark.parametrize("requested", ["cluster", "auto"])
async def test_F17_hand_off_never_gives_a_budget_to_the_cluster_controller(requested: str) -> None:
    from airflow_broadcast.cluster.api_errors import NotFound
    from airflow_broadcast.cluster.handoff.choice import hand_off
    from airflow_broadcast.reconcilers.broadcast_job.kind import BroadcastJobKind

    class OnlyLooks:
        """Creates nothing; in `auto`, looks once for a resource of that name run by the cluster (none here)."""

        def __init__(self) -> None:
            self.gets: list[str] = []

        async def get(self, path: str, **_: Any) -> Any:
            self.gets.append(path)
            raise NotFound(404, "NotFound", "the server could not find the requested resource")

        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"no request but a GET may be made ({name})")

    client = OnlyLooks()
    stored = to_manifest(make_spec(max_failed_nodes=2))
    call = hand_off(client, BroadcastJobKind(FIXED), stored, requested=requested,  # type: ignore[arg-type]
                    submitter="dag/task", reattach=True, probe_seconds=5)
    if requested == "cluster":
        with pytest.raises(InvalidSpecError) as refused:
            await call
        assert [(e.path, e.kind) for e in refused.value.errors] == [("spec.failurePolicy.maxFailedNodes", "Forbidden")]
        assert "controller='cluster'" in str(refused.value)
    else:
        chosen = await call
        assert chosen.decision.controller == "airflow" and chosen.resource is None
        assert "spec.failurePolicy.maxFailedNodes" in chosen.decision.reason
    looked = "/apis/apps.kruise.io/v1beta1/namespaces/ops/broadcastjobs/bcj"
    assert client.gets == ([] if requested == "cluster" else [looked])


def test_F17_a_pause_stays_when_nodes_join_and_the_percent_budget_grows() -> None:
    spec = make_spec(failure="Pause", max_failed_nodes="10%")
    cluster = BCJCluster(spec, make_nodes(10), options=FIXED)
    cluster.step()
    cluster.set_phase("Running")
    cluster.set_phase("Failed", ["node-00", "node-01"])  # 2 failed nodes, 10 % of 10 is 1
    cluster.step()
    assert cluster.status["phase"] == "paused"
    cluster.nodes.update({n.name: n for n in make_nodes(10, prefix="late")})  # 10 % of 20 would allow 2
    joined = cluster.step()
    assert cluster.status["phase"] == "paused", "a policy pause ends when its failed pods go (F11), not by itself"
    assert joined.create_pods == () and not events_of(joined, "Continue")
    for node in ("node-00", "node-01"):
        cluster.remove_pod(node)
    cluster.step()
    assert cluster.status["phase"] == "running"


def test_F17_the_budget_counts_failed_nodes_not_failed_pods() -> None:
    spec = make_spec(max_failed_nodes=1)
    pods = [make_pod("node-00", "Failed", spec=spec), make_pod("gone-node", "Failed", spec=spec)]
    plan = reconcile_broadcast_job(spec, make_record(started_status()), make_nodes(3), pods, NOW, FIXED)
    assert plan.status is not None and plan.status["failed"] == 2, "both failed pods are counted (S8)"
    assert plan.status["phase"] == "running", "one failed node (the other pod's node is gone) is within 1"
