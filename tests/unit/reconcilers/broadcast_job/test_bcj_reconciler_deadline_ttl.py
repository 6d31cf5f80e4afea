"""Active deadline (checklist I: D1-D10) and TTL (checklist J: T1-T8) of the pure BroadcastJob pass.

The pass is a function of the persisted status and `now`, so "across restarts" means
a pass on a freshly read record, a "timer" is the plan's `requeue_after`, and the TTL is
the `expires-at` annotation the plan writes on the record.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.bcj_builders import (
    COMPAT,
    FIXED,
    MODES,
    NOW,
    BCJCluster,
    conditions,
    created_nodes,
    make_nodes,
    make_pod,
    make_record,
    make_spec,
    reasons,
    simulate,
    started_status,
    status_of,
    unchecked,
)

from airflow_broadcast.reconcilers.broadcast_job.reconciler import (
    PAUSED_BY_POLICY,
    BroadcastOptions,
    reconcile_broadcast_job,
)
from airflow_broadcast.reconcilers.expiry import EXPIRES_AT
from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.specs.broadcast_job.spec import BroadcastJobSpec
from airflow_broadcast.specs.timestamps import from_rfc3339, to_rfc3339

START = NOW - 100
DEADLINE_MESSAGE = "Job ops/bcj was active longer than specified deadline"


def at(spec: BroadcastJobSpec, now: float, pods: list[Any] | None = None, *, start: float = START,
       options: BroadcastOptions = FIXED, nodes: int = 2, annotations: dict[str, str] | None = None,
       phase: str = "running") -> Plan:
    record = make_record(started_status(start, phase=phase), annotations)
    return reconcile_broadcast_job(spec, record, make_nodes(nodes), pods or [], now, options)


def finished_status(kind: str, completed: float) -> dict[str, Any]:
    status = started_status(START, phase="completed" if kind == "Complete" else "failed", succeeded=1)
    status["completionTime"] = to_rfc3339(completed)
    status["conditions"] = [{"type": kind, "status": "True", "reason": kind}]
    return status


# ---- D: active deadline ----------------------------------------------------------------------
def test_D1_deadline_is_measured_from_status_start_time() -> None:
    spec = make_spec(ads=60, parallelism=0)
    assert status_of(at(spec, START + 59))["phase"] == "running"
    assert status_of(at(spec, START + 60))["phase"] == "failed"
    late_start = at(spec, START + 60, start=START + 30)
    assert late_start.status is not None and late_start.status["phase"] == "running"
    assert late_start.requeue_after == pytest.approx(30)


@pytest.mark.parametrize(("elapsed", "failed"), [(49, False), (49.9, False), (50, True), (51, True), (5000, True)])
def test_D2_deadline_passes_when_elapsed_reaches_ads(elapsed: float, failed: bool) -> None:
    plan = at(make_spec(ads=50, parallelism=0), START + elapsed)
    assert plan.status is not None and (plan.status["phase"] == "failed") is failed


@pytest.mark.parametrize("mode", list(MODES))
def test_D3_expiry_deletes_active_pods_and_fails_the_job(mode: str) -> None:
    spec = make_spec(ads=50)
    pods = [make_pod("node-00", "Running", spec=spec), make_pod("node-01", "Succeeded", spec=spec),
            make_pod("gone", "Pending", spec=spec)]
    plan = at(spec, START + 50, pods, options=MODES[mode])
    assert sorted(d.name for d in plan.deletes) == sorted([pods[0].name, pods[2].name])
    assert {d.reason for d in plan.deletes} == {"DeadlineExceeded"}
    status = plan.status
    assert status is not None
    assert (status["phase"], status["active"], status["succeeded"], status["failed"]) == ("failed", 0, 1, 2)
    assert status["completionTime"] == to_rfc3339(START + 50)
    [cond] = status["conditions"]
    assert (cond["type"], cond["reason"], cond["message"]) == ("Failed", "Failed", DEADLINE_MESSAGE)
    assert status["failureReason"] == "DeadlineExceeded"
    assert [(e.type, e.reason, e.message) for e in plan.events] == [
        ("Warning", "DeadlineExceeded", DEADLINE_MESSAGE + ": 1 pods succeeded, 2 pods failed")]
    assert plan.create_pods == ()
    assert plan.finished


@pytest.mark.parametrize("mode", list(MODES))
def test_D4_zero_deadline_fails_the_first_pass_before_any_pod(mode: str) -> None:
    spec = unchecked(make_spec(), ads=0)  # V15 refuses it; upstream accepts it
    plan = reconcile_broadcast_job(spec, make_record(), make_nodes(3), [], NOW, MODES[mode])
    assert plan.status is not None and plan.status["phase"] == "failed"
    assert plan.create_pods == ()
    assert reasons(plan) == ["DeadlineExceeded"]


@pytest.mark.parametrize("mode", list(MODES))
def test_D5_deadline_is_ignored_for_never_jobs(mode: str) -> None:
    spec = unchecked(make_spec(completion="Never", parallelism=0), ads=10)  # V4 refuses it
    first = reconcile_broadcast_job(spec, make_record(), make_nodes(2), [], NOW, MODES[mode])
    assert first.requeue_after is None
    plan = at(spec, START + 1000, options=MODES[mode])
    assert plan.status is not None and plan.status["phase"] == "running"
    assert plan.requeue_after is None


@pytest.mark.parametrize("mode", list(MODES))
def test_D6_deadline_is_not_enforced_while_paused_then_fails_on_unpause(mode: str) -> None:
    paused = make_spec(ads=50, paused=True)
    plan = at(paused, START + 500, options=MODES[mode], phase="paused")
    assert plan.status is not None and plan.status["phase"] == "paused"
    assert plan.deletes == () and plan.events == ()
    assert plan.requeue_after is None  # no timer that fires at once and again while paused
    resumed = at(make_spec(ads=50), START + 501, options=MODES[mode], phase="paused")
    assert resumed.status is not None and resumed.status["phase"] == "failed"
    assert reasons(resumed) == ["Continue", "DeadlineExceeded"]


def test_D6_deadline_is_not_enforced_while_paused_by_the_pause_policy() -> None:
    spec = make_spec(ads=50, failure="Pause")
    failed = [make_pod("node-00", "Failed", spec=spec), make_pod("node-01", "Running", spec=spec)]
    plan = at(spec, START + 500, failed, annotations={PAUSED_BY_POLICY: "true"}, phase="paused")
    assert plan.status is not None and plan.status["phase"] == "paused"
    assert (plan.deletes, plan.events, plan.requeue_after) == ((), (), None)
    compat = at(spec, START + 500, failed, options=COMPAT, phase="paused")
    assert compat.status is not None and compat.status["phase"] == "paused"
    assert reasons(compat) == ["Continue", "Paused"]
    resumed = at(spec, START + 501, failed[1:], annotations={PAUSED_BY_POLICY: "true"}, phase="paused")
    assert resumed.status is not None and resumed.status["phase"] == "failed"


@pytest.mark.parametrize("mode", list(MODES))
def test_D7_failfast_wins_over_the_deadline_in_the_same_pass(mode: str) -> None:
    spec = make_spec(ads=50)
    plan = at(spec, START + 60, [make_pod("node-00", "Failed", spec=spec)], options=MODES[mode])
    assert plan.status is not None
    assert plan.status["conditions"][0]["message"] == (
        "failure policy is FailurePolicyTypeFailFast and failed pod is found")
    assert "DeadlineExceeded" not in reasons(plan)


def test_D8_deadline_requeue_survives_restart() -> None:
    """Fixed: every pass re-arms the timer from the persisted startTime, so a pass on a
    freshly read record (a restarted triggerer) knows when to wake, and that pass fails
    the job with no pod, node or job event."""
    spec = make_spec(ads=300)
    pods = [make_pod("node-00", "Running", spec=spec), make_pod("node-01", "Running", spec=spec)]
    for now in (START + 1, START + 120, START + 299.5):
        plan = at(spec, now, pods)
        assert plan.requeue_after == pytest.approx(START + 300 - now)
    woken = at(spec, START + 300, pods)
    assert woken.status is not None and woken.status["phase"] == "failed"
    assert reasons(woken) == ["DeadlineExceeded"]


def test_D8_compat_arms_the_deadline_only_on_the_first_pass() -> None:
    spec = make_spec(ads=300)
    pods = [make_pod("node-00", "Running", spec=spec)]
    first = reconcile_broadcast_job(spec, make_record(), make_nodes(2), [], NOW, COMPAT)
    assert first.requeue_after == 300
    for now in (START + 1, START + 120):
        assert at(spec, now, pods, options=COMPAT).requeue_after is None
    assert status_of(at(spec, START + 300, pods, options=COMPAT))["phase"] == "failed"


def test_D8_multi_pass_fixed_timer_always_points_at_the_deadline() -> None:
    cluster = BCJCluster(make_spec(ads=100), make_nodes(2), now=NOW)
    cluster.step(advance=0.25)
    deadline = cluster.now + 100
    for _ in range(3):
        plan = cluster.step(advance=10)
        assert plan.requeue_after is not None
        assert cluster.now + plan.requeue_after <= deadline
        assert cluster.now + plan.requeue_after >= deadline - 1  # startTime is kept in whole seconds
    cluster.now = deadline
    assert reasons(cluster.step(advance=0)) == ["DeadlineExceeded"]


@pytest.mark.parametrize("mode", list(MODES))
def test_D9_first_pass_schedules_a_recheck_at_exactly_ads(mode: str) -> None:
    spec = make_spec(ads=45, parallelism=1)
    plan = reconcile_broadcast_job(spec, make_record(), make_nodes(2), [], NOW + 0.75, MODES[mode])
    assert plan.requeue_after == 45


def test_D9_compat_arms_the_timer_only_for_the_literal_always_type() -> None:
    spec = unchecked(make_spec(ads=45), completion_type="Sometimes")  # V14 refuses it
    compat = reconcile_broadcast_job(spec, make_record(), make_nodes(2), [], NOW, COMPAT)
    assert compat.requeue_after is None
    fixed = reconcile_broadcast_job(spec, make_record(), make_nodes(2), [], NOW, FIXED)
    assert fixed.requeue_after == 45
    defaulted = make_spec(ads=45, completion="")
    assert reconcile_broadcast_job(defaulted, make_record(), make_nodes(2), [], NOW, COMPAT).requeue_after == 45


@pytest.mark.parametrize("mode", list(MODES))
def test_D10_deadline_does_not_delete_restart_failed_running_pods(mode: str) -> None:
    spec = make_spec(ads=50, failure="Continue", restart_policy="OnFailure")
    flapping = make_pod("node-00", "Running", spec=spec, restarts=2)
    running = make_pod("node-01", "Running", spec=spec)
    plan = at(spec, START + 50, [flapping, running], options=MODES[mode])
    assert [d.name for d in plan.deletes] == [running.name]
    assert plan.status is not None and (plan.status["active"], plan.status["failed"]) == (0, 2)


# ---- T: TTL after finished ---------------------------------------------------------------------
# No pass deletes a job: the expiry goes on the record as `expires-at`, and the task that reads the
# result, or the sweeper, deletes the record once it has passed (see reconcilers/expiry.py).
def expiry_of(plan: Plan) -> str | None:
    return plan.record_annotations.get(EXPIRES_AT)


@pytest.mark.parametrize("kind", ["Complete", "Failed"])
@pytest.mark.parametrize("after", [0, 29, 30, 31, 86400])
def test_T1_T7_finished_job_expires_at_completion_plus_ttl_and_no_pass_deletes_it(kind: str, after: float) -> None:
    spec = make_spec(ttl=30)
    plan = reconcile_broadcast_job(spec, make_record(finished_status(kind, NOW)), make_nodes(2), [], NOW + after)
    assert plan.finished
    assert plan.record_annotations == {EXPIRES_AT: to_rfc3339(NOW + 30)}
    assert (plan.status, plan.deletes, plan.create_pods, plan.requeue_after) == (None, (), (), None)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize(("ads", "ttl"), [(None, 30), (1000, 30), (10, 600), (None, None), (5, None)])
def test_T2_T3_finishing_pass_stamps_the_expiry_with_the_terminal_status_and_drops_its_timers(
        mode: str, ads: int | None, ttl: int | None) -> None:
    """The expiry goes out in the same record write as the terminal status, so a finished record is never
    without it; no timer is left: the deadline's is dropped, and the expiry needs no pass."""
    spec = make_spec(ads=ads, ttl=ttl)
    cluster = BCJCluster(spec, make_nodes(2), options=MODES[mode])
    cluster.step()
    cluster.set_phase("Succeeded")
    plan = cluster.step()
    assert plan.finished and plan.requeue_after is None
    completed = cluster.status["completionTime"]
    assert plan.status is not None and plan.status["completionTime"] == completed
    expected = None if ttl is None else to_rfc3339(from_rfc3339(completed) + ttl)
    assert expiry_of(plan) == expected
    assert cluster.record.annotations.get(EXPIRES_AT) == expected


def test_T2_later_passes_keep_the_stamp_and_write_nothing() -> None:
    spec = make_spec(ttl=30)
    record = make_record(finished_status("Complete", NOW), {EXPIRES_AT: to_rfc3339(NOW + 30)})
    for later in (NOW + 12, NOW + 30, NOW + 3600):
        plan = reconcile_broadcast_job(spec, record, make_nodes(2), [], later)
        assert plan.finished and not plan.changes_cluster and plan.requeue_after is None


def test_T3_without_ttl_a_finished_job_never_expires() -> None:
    record = make_record(finished_status("Failed", NOW))
    plan = reconcile_broadcast_job(make_spec(), record, make_nodes(1), [], NOW + 10 * 365 * 86400)
    assert plan.finished and not plan.changes_cluster


def test_T3_a_ttl_removed_after_finishing_takes_the_stamp_away() -> None:
    record = make_record(finished_status("Complete", NOW), {EXPIRES_AT: to_rfc3339(NOW + 30)})
    plan = reconcile_broadcast_job(make_spec(), record, make_nodes(1), [], NOW + 5)
    assert plan.record_annotations == {EXPIRES_AT: None}


def test_T4_zero_ttl_expires_at_completion() -> None:
    spec = make_spec(ttl=0)
    cluster = BCJCluster(spec, make_nodes(1))
    cluster.step()
    cluster.set_phase("Succeeded")
    finishing = cluster.step()
    assert finishing.finished
    assert expiry_of(finishing) == cluster.status["completionTime"]
    assert not cluster.step(advance=0).changes_cluster


def test_T5_ttl_deletes_only_the_record_and_pods_are_left_to_owner_gc() -> None:
    """Pure part of T5: the pods carry the record's controller ownerRef with blockOwnerDeletion, so
    background GC removes them when the record is deleted (needs a cluster); no pass deletes a pod for it."""
    spec = make_spec(ttl=5)
    cluster = BCJCluster(spec, make_nodes(2))
    creates = cluster.step()
    for body in creates.create_pods:
        assert body["metadata"]["ownerReferences"] == [dict(cluster.record.owner_reference)]
        assert body["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is True
    cluster.set_phase("Succeeded")
    cluster.step()
    plan = cluster.step(advance=6)
    assert (plan.deletes, plan.create_pods) == ((), ())


@pytest.mark.parametrize("mode", list(MODES))
def test_T6_every_pass_after_expiry_keeps_the_expiry_stamped(mode: str) -> None:
    """Pure part of T6: nothing remembers a failed delete, and every later pass (retry, resync, restart)
    restores a lost stamp, so every later sweep tries the delete again."""
    spec = make_spec(ttl=10)
    for stamped in ({}, {EXPIRES_AT: "2000-01-01T00:00:00Z"}):
        record = make_record(finished_status("Complete", NOW), stamped)
        for later in (NOW + 10, NOW + 11, NOW + 100, NOW + 86400):
            plan = reconcile_broadcast_job(spec, record, make_nodes(1), [], later, MODES[mode])
            assert plan.record_annotations == {EXPIRES_AT: to_rfc3339(NOW + 10)}


def test_T8_ttl_never_applies_to_never_jobs() -> None:
    spec = unchecked(make_spec(completion="Never"), ttl=0)  # V3 refuses it
    cluster = BCJCluster(spec, make_nodes(2))
    cluster.step()
    cluster.set_phase("Failed", ["node-00"])
    failing = cluster.step()
    assert failing.finished and cluster.status["phase"] == "failed"
    for _ in range(3):
        cluster.step(advance=3600)
    assert EXPIRES_AT not in cluster.record.annotations
    assert not [p for p in cluster.plans if EXPIRES_AT in p.record_annotations]
    assert conditions(cluster.status) == [("Failed", "True", "Failed")]
    assert created_nodes(cluster.plans[-1]) == []
    assert simulate(cluster.plans[-1], cluster.record).status["phase"] == "failed"
