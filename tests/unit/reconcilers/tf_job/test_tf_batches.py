"""A large TFJob is created over consecutive passes of bounded size, each child exactly once (tfjob.md §6)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from support.tf_builders import NOW, TFCluster, env_value, make_record, make_spec

from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.reconcilers.tf_job.children import build_pod, child_name
from airflow_broadcast.reconcilers.tf_job.cluster_config import TFConfigRenderer
from airflow_broadcast.reconcilers.tf_job.pass_state import CREATE_BATCH, MIN_CREATE_BATCH, TF_CONFIG_BUDGET
from airflow_broadcast.reconcilers.tf_job.reconciler import TFJobOptions, reconcile_tf_job
from airflow_broadcast.specs.tf_job.spec import TFJobSpec

LARGE = {"Chief": 1, "PS": 4, "Worker": 600}


def with_workers(spec: TFJobSpec, workers: int) -> TFJobSpec:
    """The spec with more workers than validation lets a job have: the reconciler itself has no cap."""
    worker = replace(spec.replica_specs["Worker"], replicas=workers)
    return replace(spec, replica_specs={**spec.replica_specs, "Worker": worker})


def expected_names(spec: TFJobSpec) -> list[str]:
    """Upstream's order: replica type order, then index."""
    return [child_name(spec.name, t, i) for t, r in spec.replica_specs.items() for i in range(r.replicas)]


def create_all(cluster: TFCluster, limit: int = 20) -> list[Plan]:
    """Passes until one creates nothing; each pass's creates appear in the cluster before the next."""
    plans = []
    for second in range(limit):
        plan = cluster.step(NOW + second)
        plans.append(plan)
        if not plan.create_pods and not plan.create_services:
            return plans
    raise AssertionError(f"still creating after {limit} passes")


def names(manifests: tuple[dict[str, Any], ...]) -> list[str]:
    return [m["metadata"]["name"] for m in manifests]


def test_M_batches_no_pass_builds_more_than_a_batch_and_every_child_is_created_once_in_order() -> None:
    cluster = TFCluster(make_spec(replicas=LARGE))
    plans = create_all(cluster)
    creating = [p for p in plans if p.create_pods]
    assert [len(p.create_pods) for p in creating] == [CREATE_BATCH, CREATE_BATCH, 605 - 2 * CREATE_BATCH]
    assert [len(p.create_services) for p in creating] == [CREATE_BATCH, CREATE_BATCH, 605 - 2 * CREATE_BATCH]
    pods = [n for p in plans for n in names(p.create_pods)]
    services = [n for p in plans for n in names(p.create_services)]
    assert pods == services == expected_names(cluster.spec)
    assert max(Counter(pods).values()) == 1
    assert sorted(cluster.pods) == sorted(pods)


def test_M_batches_ask_for_the_next_pass_at_once_only_while_children_remain() -> None:
    cluster = TFCluster(make_spec(replicas=LARGE))
    plans = create_all(cluster)
    assert [p.requeue_after for p in plans] == [0.0, 0.0, None, None]


def test_M_batches_keep_a_deadline_when_children_remain() -> None:
    cluster = TFCluster(make_spec(replicas=LARGE, run_policy={"activeDeadlineSeconds": 600}))
    first = cluster.step()
    assert first.requeue_after == 0.0
    cluster.step(NOW + 1)
    last = cluster.step(NOW + 2)
    assert last.create_pods and last.requeue_after == 598.0


def test_D_batched_pods_are_identical_to_the_pods_built_all_at_once() -> None:
    """Every manifest, TF_CONFIG included, byte for byte what a one-pod-at-a-time build gives."""
    spec = make_spec(replicas=LARGE)
    record = make_record(spec)
    cluster = TFCluster(spec)
    batched = [pod for plan in create_all(cluster) for pod in plan.create_pods]
    alone = [build_pod(spec, record, t, i) for t, r in spec.replica_specs.items() for i in range(r.replicas)]
    assert len(batched) == len(alone) == 605
    assert [env_value(p) for p in batched] == [env_value(p) for p in alone]
    assert batched == alone


def test_M_batches_a_created_pod_not_yet_observed_is_planned_again_under_the_same_name() -> None:
    """A stale cache re-plans the same deterministic names (AlreadyExists is then success), never new ones."""
    spec = make_spec(replicas=LARGE)
    record = make_record(spec)
    first = reconcile_tf_job(spec, record, [], [], NOW)
    stale = reconcile_tf_job(spec, record, [], [], NOW + 1)
    assert names(stale.create_pods) == names(first.create_pods) == expected_names(spec)[:CREATE_BATCH]


def test_M_batches_pods_seen_from_earlier_batches_are_skipped_wherever_they_are() -> None:
    cluster = TFCluster(make_spec(replicas=LARGE))
    cluster.step()
    del cluster.pods["mnist-worker-7"]
    second = cluster.step(NOW + 1)
    assert names(second.create_pods)[0] == "mnist-worker-7"
    assert names(second.create_pods)[1:] == expected_names(cluster.spec)[CREATE_BATCH:2 * CREATE_BATCH - 1]


def test_M_batches_shrink_so_one_pass_builds_a_bounded_amount_of_tf_config() -> None:
    spec = with_workers(make_spec(replicas=LARGE), 5000)
    size = TFConfigRenderer(spec).size_bound()
    plan = reconcile_tf_job(spec, make_record(spec), [], [], NOW)
    assert MIN_CREATE_BATCH < len(plan.create_pods) == TF_CONFIG_BUDGET // size < CREATE_BATCH
    assert sum(len(env_value(p) or "") for p in plan.create_pods) <= TF_CONFIG_BUDGET
    assert len(plan.create_services) == CREATE_BATCH and plan.requeue_after == 0.0


def test_M_batches_a_job_finished_by_its_chief_creates_no_further_batch() -> None:
    cluster = TFCluster(make_spec(replicas=LARGE))
    cluster.step()
    cluster.set_phase("Running")
    cluster.set_phase("Succeeded", "Chief")
    plan = cluster.step(NOW + 1)
    assert plan.finished and plan.create_pods == () and plan.create_services == ()
    assert plan.requeue_after is None


def test_M_batches_stop_when_the_job_is_suspended() -> None:
    cluster = TFCluster(make_spec(replicas=LARGE))
    cluster.step()
    cluster.replace_spec(make_spec(replicas=LARGE, run_policy={"suspend": True}))
    plan = cluster.step(NOW + 1)
    assert plan.create_pods == () and plan.requeue_after is None
    assert len([d for d in plan.deletes if d.kind == "Pod"]) == CREATE_BATCH


def test_L_batches_create_the_pod_group_once_before_the_first_batch() -> None:
    cluster = TFCluster(make_spec(replicas=LARGE), options=TFJobOptions(gang_scheduler="scheduler-plugins"))
    plans = create_all(cluster)
    assert [len(p.create_objects) for p in plans] == [1, 0, 0, 0]
    assert sum(len(p.create_pods) for p in plans) == 605
