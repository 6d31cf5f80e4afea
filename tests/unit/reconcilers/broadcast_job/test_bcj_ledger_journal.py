"""A large job's passes over journaled caches: every plan equals a pass from scratch, and a pass reads
only the changes since the last one (no comparison of whole collections)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from support.bcj_builders import NOW, make_node, make_pod, make_record, make_spec
from support.journaled_cache import JournaledCache
from test_bcj_ledger import Fleet, count_row_computations

from airflow_broadcast.cluster import cache_journals
from airflow_broadcast.reconcilers import journal
from airflow_broadcast.reconcilers.broadcast_job import ledger_cache
from airflow_broadcast.reconcilers.broadcast_job.reconciler import BroadcastOptions, reconcile_broadcast_job
from airflow_broadcast.reconcilers.journal import Journaled
from airflow_broadcast.reconcilers.observed import NodeInfo, PodInfo


@pytest.fixture(autouse=True)
def _no_kept_ledgers() -> Iterator[None]:
    ledger_cache.forget_ledgers()
    yield
    ledger_cache.forget_ledgers()


class JournaledFleet(Fleet):
    def __init__(self, seed: int, **spec: Any) -> None:
        super().__init__(seed, **spec)
        self.node_cache: JournaledCache[Any] = JournaledCache()
        self.pod_cache: JournaledCache[Any] = JournaledCache()

    def inputs(self) -> tuple[Sequence[NodeInfo], Sequence[PodInfo]]:
        return self.node_cache.sync({n.name: n for n in self.nodes}), self.pod_cache.sync(self.pods)


@pytest.mark.parametrize("slack", [cache_journals.JOURNAL_SLACK, 4], ids=["long-logs", "fresh-logs-often"])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("options", [BroadcastOptions(), BroadcastOptions(kruise_compat=True),
                                     BroadcastOptions(cleanup_succeeded_pods=True)],
                         ids=["fixed", "compat", "cleanup"])
def test_every_pass_over_journals_equals_a_pass_from_scratch(seed: int, options: BroadcastOptions, slack: int,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_journals, "JOURNAL_SLACK", slack)
    fleet = JournaledFleet(seed, parallelism="40%", failure="Continue")
    journaled = False
    for _ in range(60):
        plan = fleet.pass_both_ways(options)
        journaled = journaled or isinstance(fleet.pod_cache.sync(fleet.pods), Journaled)
        if plan.finished:
            break
        fleet.apply(plan)
    assert journaled, "the scenario never had enough pods for a journal"


def test_a_pass_over_journals_reads_only_the_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = make_spec()
    nodes, pods = JournaledCache[Any](), JournaledCache[Any]()
    fleet = {f"n-{i:04d}": make_node(f"n-{i:04d}") for i in range(400)}
    running = {name: make_pod(name, "Running", spec=spec) for name in fleet}
    record = make_record({"startTime": "2027-01-15T08:00:00Z", "phase": "running"})
    parts: dict[str, Any] = {}
    for _ in range(2):
        plan = reconcile_broadcast_job(spec, record, nodes.sync(fleet), pods.sync(running), NOW, parts=parts)
        record = record if plan.status is None else make_record(plan.status)
        parts = {**parts, **plan.record_parts}

    computed = count_row_computations(monkeypatch)

    def no_whole_comparison(*_: Any) -> Any:
        raise AssertionError("a pass compared whole collections")

    monkeypatch.setattr(journal, "changed_objects", no_whole_comparison)
    for name in ("n-0003", "n-0399"):
        running[name] = make_pod(name, "Succeeded", spec=spec)
    fleet["n-0100"] = make_node("n-0100", labels={"pool": "b"})
    plan = reconcile_broadcast_job(spec, record, nodes.sync(fleet), pods.sync(running), NOW, parts=parts)
    assert sorted(computed) == ["n-0003", "n-0100", "n-0399"]
    assert plan.status is not None and plan.status["succeeded"] == 2 and plan.status["active"] == 398
