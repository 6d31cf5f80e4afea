"""Section M: a pass is idempotent, restart-safe and fast (tfjob.md §5 M, §6)."""

from __future__ import annotations

import time
from collections.abc import Callable

from support.tf_builders import NOW, TFCluster, make_pod, make_record, make_service, make_spec

from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.reconcilers.tf_job.reconciler import reconcile_tf_job

BIG = {"Chief": 1, "PS": 4, "Worker": 200}


def test_M1_job_being_deleted_gets_an_empty_plan() -> None:
    spec = make_spec()
    assert reconcile_tf_job(spec, make_record(spec, deleting=True), [], [], NOW) == Plan()


def test_M3_second_pass_over_the_result_writes_nothing() -> None:
    cluster = TFCluster(make_spec(replicas={"Chief": 1, "PS": 2, "Worker": 3}))
    cluster.step()
    settled = cluster.step(NOW + 1)
    assert not settled.changes_cluster and settled.events == ()
    cluster.set_phase("Running")
    cluster.step(NOW + 2)
    again = cluster.step(NOW + 3)
    assert not again.changes_cluster and again.events == ()


def test_M4_stale_list_after_create_gives_the_same_creates_without_duplicates() -> None:
    spec = make_spec(replicas={"PS": 2, "Worker": 3})
    record = make_record(spec)
    first = reconcile_tf_job(spec, record, [], [], NOW)
    stale = reconcile_tf_job(spec, record, [], [], NOW + 1)
    names = [p["metadata"]["name"] for p in stale.create_pods]
    assert names == [p["metadata"]["name"] for p in first.create_pods]
    assert len(names) == len(set(names)) == 5
    partial = reconcile_tf_job(spec, record, [make_pod("mnist", "Worker", 0, "Pending")],
                               [make_service("mnist", "Worker", 0)], NOW + 2)
    assert "mnist-worker-0" not in [p["metadata"]["name"] for p in partial.create_pods]
    assert len(partial.create_pods) == 4


def test_M6_a_restarted_trigger_resumes_from_cluster_state_only() -> None:
    cluster = TFCluster(make_spec(replicas={"PS": 1, "Worker": 2}))
    cluster.step()
    cluster.set_phase("Running")
    cluster.set_pod("mnist-worker-1", "Failed", exit_code=1)
    pods, services, record = list(cluster.pods.values()), list(cluster.services.values()), cluster.record
    one = reconcile_tf_job(cluster.spec, record, pods, services, NOW + 5)
    other = reconcile_tf_job(cluster.spec, record, pods, services, NOW + 5)
    assert one == other and one.finished


def test_M7_unknown_extra_types_are_created_in_the_cluster_and_ignored_for_status() -> None:
    spec = make_spec(replicas={"Chief": 1, "Evaluator": 1, "PS": 1, "Worker": 1, "Sidecar": 2}, strict=False)
    cluster = TFCluster(spec)
    plan = cluster.step()
    assert {p["metadata"]["name"] for p in plan.create_pods} >= {"mnist-sidecar-0", "mnist-sidecar-1"}
    worker = next(p for p in plan.create_pods if p["metadata"]["name"] == "mnist-worker-0")
    tf_config = next(e["value"] for e in worker["spec"]["containers"][0]["env"] if e["name"] == "TF_CONFIG")
    assert '"sidecar":["mnist-sidecar-0.kubeflow.svc:2222","mnist-sidecar-1.kubeflow.svc:2222"]' in tf_config
    cluster.set_phase("Running")
    cluster.set_phase("Failed", "Sidecar")
    cluster.set_phase("Succeeded", "Chief")
    cluster.step(NOW + 1)
    assert cluster.status["conditions"][-1]["type"] == "Succeeded"


def test_M_all_five_types_reconcile() -> None:
    cluster = TFCluster(make_spec(replicas={"Master": 1, "Evaluator": 1, "PS": 2, "Worker": 2}))
    assert len(cluster.step().create_pods) == 6
    cluster.set_phase("Running")
    cluster.set_phase("Succeeded", "Master")
    assert cluster.step(NOW + 1).finished


def _timed(fn: Callable[[], object], repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def test_M_performance_205_replicas_reconcile_well_under_50ms() -> None:
    spec = make_spec(replicas=BIG)
    cluster = TFCluster(spec)
    create_pass = _timed(cluster.reconcile)
    cluster.step()
    cluster.set_phase("Running")
    cluster.step(NOW + 1)
    pods, services = list(cluster.pods.values()), list(cluster.services.values())
    steady = _timed(lambda: reconcile_tf_job(spec, cluster.record, pods, services, NOW + 2, cluster.options))
    assert len(pods) == 205
    assert create_pass < 0.025, create_pass
    assert steady < 0.010, steady
