"""The ledger carries a large job's rows from pass to pass: every plan equals a pass from scratch,
and a pass recomputes only the rows whose node, pod or stored result changed."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from support.bcj_builders import NOW, UID, make_node, make_pod, make_record, make_spec

from airflow_broadcast.reconcilers.broadcast_job import ledger, ledger_cache
from airflow_broadcast.reconcilers.broadcast_job.node_eligibility import FitnessCheck
from airflow_broadcast.reconcilers.broadcast_job.reconciler import BroadcastOptions, reconcile_broadcast_job
from airflow_broadcast.reconcilers.journal import changed_objects
from airflow_broadcast.reconcilers.observed import NodeInfo, PodInfo
from airflow_broadcast.reconcilers.plan import Plan

NODES = 320  # more than node_table.INLINE_NODES: the table moves to parts during the run


@pytest.fixture(autouse=True)
def _no_kept_ledgers() -> Iterator[None]:
    ledger_cache.forget_ledgers()
    yield
    ledger_cache.forget_ledgers()


class Fleet:
    """A job over a changing fleet: pods appear, run and finish at random, nodes come, go and change labels."""

    def __init__(self, seed: int, **spec: Any) -> None:
        self.rng = random.Random(seed)
        self.spec = make_spec(pod_spec={"nodeSelector": {"pool": "a"}}, **spec)
        self.nodes = [self._node(i, "a" if self.rng.random() < 0.9 else "b") for i in range(NODES)]
        self.pods: dict[str, PodInfo] = {}
        self.record = make_record()
        self.parts: dict[str, Any] = {}
        self.now = NOW

    @staticmethod
    def _node(index: int, pool: str) -> NodeInfo:
        return make_node(f"n-{index:04d}", labels={"pool": pool})

    def inputs(self) -> tuple[Sequence[NodeInfo], Sequence[PodInfo]]:
        """The nodes and pods as a pass gets them."""
        return list(self.nodes), list(self.pods.values())

    def pass_both_ways(self, options: BroadcastOptions) -> Plan:
        """The pass with the kept ledger, and the same pass from scratch (on plain lists): they must agree."""
        nodes, pods = self.inputs()
        kept = reconcile_broadcast_job(self.spec, self.record, nodes, pods, self.now, options, self.parts)
        incremental = ledger_cache._kept.pop(UID, None)
        fresh = reconcile_broadcast_job(self.spec, self.record, list(nodes), list(pods), self.now, options,
                                        self.parts)
        if incremental is not None:
            ledger_cache._kept[UID] = incremental
        assert kept == fresh
        return kept

    def apply(self, plan: Plan) -> None:
        """The executor's part (some creates land late), then the kubelet's and the fleet's moves."""
        rng = self.rng
        if plan.status is not None:
            self.record = make_record(plan.status, annotations={
                k: v for k, v in {**self.record.annotations, **plan.record_annotations}.items() if v is not None})
        self.parts = {**self.parts, **plan.record_parts}
        for delete in plan.deletes:
            self.pods = {n: p for n, p in self.pods.items() if p.name != delete.name}
        limit = len(plan.create_pods) if plan.create_limit is None else plan.create_limit
        for body in plan.create_pods[:limit]:
            node = body["metadata"]["annotations"]["airflow-broadcast.io/node"]
            if rng.random() < 0.8:
                attempt = int(body["metadata"]["annotations"]["airflow-broadcast.io/attempt"])
                stuck = "0/1 nodes are available: 1 Insufficient cpu." if rng.random() < 0.2 else None
                self.pods[node] = make_pod(node, "Pending", spec=self.spec, record=self.record, attempt=attempt,
                                           unschedulable=stuck)
        for node, pod in list(self.pods.items()):
            roll = rng.random()
            if pod.phase == "Pending" and roll < 0.5:
                self.pods[node] = make_pod(node, "Running", spec=self.spec, record=self.record)
            elif pod.phase == "Running" and roll < 0.3:
                phase = "Failed" if rng.random() < 0.05 else "Succeeded"
                self.pods[node] = make_pod(node, phase, spec=self.spec, record=self.record,
                                           exit_code=1 if phase == "Failed" else 0)
            elif pod.terminal and roll < 0.02:
                del self.pods[node]  # garbage-collected
        self._move_fleet()
        self.now += 1

    def _move_fleet(self) -> None:
        rng = self.rng
        for _ in range(rng.randint(0, 3)):
            at = rng.randrange(len(self.nodes))
            node = self.nodes[at]
            self.nodes[at] = make_node(node.name, labels={"pool": "b" if node.labels.get("pool") == "a" else "a"})
        if rng.random() < 0.1:
            self.nodes.append(self._node(NODES + rng.randrange(1000), "a"))
        if rng.random() < 0.1:
            del self.nodes[rng.randrange(len(self.nodes))]
        if rng.random() < 0.05:
            rng.shuffle(self.nodes)
        if rng.random() < 0.05 and self.pods:
            node = rng.choice(sorted(self.pods))
            self.pods[f"{node}/dup"] = make_pod(node, "Running", spec=self.spec, record=self.record,
                                                name=f"dup-{node}", uid=f"dup-{node}")


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("options", [BroadcastOptions(), BroadcastOptions(kruise_compat=True),
                                     BroadcastOptions(cleanup_succeeded_pods=True)],
                         ids=["fixed", "compat", "cleanup"])
def test_every_incremental_pass_equals_a_pass_from_scratch(seed: int, options: BroadcastOptions) -> None:
    fleet = Fleet(seed, parallelism="40%", failure="Continue")
    sharded = False
    for _ in range(60):
        plan = fleet.pass_both_ways(options)
        sharded = sharded or bool(plan.record_parts)
        if plan.finished:
            break
        fleet.apply(plan)
    assert sharded, "the scenario never moved the table to parts"


@pytest.mark.parametrize("failure", ["FailFast", "Pause"])
def test_failure_policies_agree_with_a_pass_from_scratch(failure: str) -> None:
    fleet = Fleet(11, failure=failure)
    for _ in range(40):
        plan = fleet.pass_both_ways(BroadcastOptions())
        if plan.finished:
            break
        fleet.apply(plan)


def count_row_computations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the rows the ledger computes from here on, in order."""
    computed: list[str] = []
    real = ledger.compute_row

    def counting(name: str, *args: Any) -> Any:
        computed.append(name)
        return real(name, *args)

    monkeypatch.setattr(ledger, "compute_row", counting)
    return computed


def test_a_pass_recomputes_only_the_rows_that_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = make_spec()
    nodes = [make_node(f"n-{i:04d}") for i in range(400)]
    pods = {n.name: make_pod(n.name, "Running", spec=spec) for n in nodes}
    record = make_record({"startTime": "2027-01-15T08:00:00Z", "phase": "running"})
    parts: dict[str, Any] = {}
    for _ in range(2):  # the first pass moves the table to parts, the second reads them
        plan = reconcile_broadcast_job(spec, record, nodes, list(pods.values()), NOW, parts=parts)
        record = record if plan.status is None else make_record(plan.status)
        parts = {**parts, **plan.record_parts}

    computed = count_row_computations(monkeypatch)
    for name in ("n-0003", "n-0100", "n-0399"):
        pods[name] = make_pod(name, "Succeeded", spec=spec)
    plan = reconcile_broadcast_job(spec, record, nodes, list(pods.values()), NOW, parts=parts)
    assert sorted(computed) == ["n-0003", "n-0100", "n-0399"]
    assert plan.status is not None and plan.status["succeeded"] == 3 and plan.status["active"] == 397

    computed.clear()
    reconcile_broadcast_job(spec, make_record(plan.status), nodes, list(pods.values()), NOW,
                            parts={**parts, **plan.record_parts})
    assert computed == []


def test_the_last_of_two_pods_on_a_node_wins_even_when_only_their_order_changed() -> None:
    spec = make_spec()
    nodes = [make_node(f"n-{i:04d}") for i in range(100)]
    pods = [make_pod(n.name, "Running", spec=spec) for n in nodes if n.name != "n-0007"]
    first = make_pod("n-0007", "Succeeded", spec=spec, name="early", uid="early")
    second = make_pod("n-0007", "Running", spec=spec, name="late", uid="late")
    record = make_record({"startTime": "2027-01-15T08:00:00Z", "phase": "running"})
    orders = [[*pods, first, second], [*pods[1:], second, first], [*pods[1:], first, second]]
    for order in orders:
        kept = reconcile_broadcast_job(spec, record, nodes, order, NOW)
        assert kept.status is not None
        winner = (kept.status.get("nodes") or {})["n-0007"]["pod"]
        assert winner == order[-1].name
        assert [e.reason for e in kept.events].count("DuplicatePodCreatedOnSameNode") == 1


def test_changed_objects_compares_places_while_the_order_holds_else_identities() -> None:
    a, b, c, d = (make_node(n) for n in "abcd")
    assert changed_objects([a, b, c], [a, d, c]) == ([b], [d])
    gone, added = changed_objects([a, b, c], [c, a])
    assert (gone, added) == ([b], [])
    gone, added = changed_objects([a, b], [b, a])  # same objects in another order: removed and added back
    assert sorted(n.name for n in gone) == sorted(n.name for n in added) == ["a", "b"]
    same = (a, b, c)
    assert changed_objects(same, same) == ([], []), "the very same tuple: nothing changed, nothing compared"
    kept = [a, b, c]
    assert changed_objects(kept, kept) == ([], [])


def test_only_large_ledgers_are_kept_and_only_a_few() -> None:
    spec = make_spec()
    small = [make_node(f"s-{i}") for i in range(ledger_cache.KEEP_ABOVE)]
    reconcile_broadcast_job(spec, make_record(), small, [], NOW)
    assert UID not in ledger_cache._kept
    large = [make_node(f"l-{i}") for i in range(ledger_cache.KEEP_ABOVE + 1)]
    for index in range(ledger_cache.MAX_KEPT + 2):
        reconcile_broadcast_job(spec, make_record(uid=f"uid-{index}"), large, [], NOW)
    assert list(ledger_cache._kept) == [f"uid-{i}" for i in range(2, ledger_cache.MAX_KEPT + 2)]


def test_a_pods_fitness_is_checked_again_only_when_its_spec_or_its_node_changed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_broadcast.reconcilers.broadcast_job import ledger_rows

    compiled: list[str] = []
    checked: list[str] = []
    real = ledger_rows.compile_fitness

    real_check = FitnessCheck.__call__

    def counting(spec: Any) -> Any:
        compiled.append(str(spec.get("nodeSelector")))
        return real(spec)

    def run(check: FitnessCheck, node: NodeInfo) -> str | None:
        checked.append(node.name)
        return real_check(check, node)

    monkeypatch.setattr(ledger_rows, "compile_fitness", counting)
    monkeypatch.setattr(FitnessCheck, "__call__", run)
    ledger_rows._fits.clear()
    ledger_rows._templates.clear()
    spec = make_spec()
    node = make_node("n-1", labels={"pool": "a"})
    running = make_pod("n-1", "Running", spec=spec)
    assert ledger_rows.pod_fits(running, node) is None
    assert ledger_rows.pod_fits(make_pod("n-1", "Succeeded", spec=spec), node) is None  # status only: no check
    assert checked == ["n-1"]
    assert ledger_rows.pod_fits(running, make_node("n-1", labels={"pool": "b"})) is None  # a new node version
    assert (len(compiled), checked) == (1, ["n-1", "n-1"]), "a new node version reuses the compiled check"
    picky = make_pod("n-1", "Running", spec=spec, spec_changes={"nodeSelector": {"pool": "c"}})
    assert ledger_rows.pod_fits(picky, node) is not None  # a changed spec is compiled again, and no longer fits
    assert (len(compiled), checked) == (2, ["n-1", "n-1", "n-1"])


def test_pods_of_one_template_compile_its_fitness_once_and_keep_their_own_node_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_broadcast.reconcilers.broadcast_job import ledger_rows

    compiled: list[str] = []
    real = ledger_rows.compile_fitness
    monkeypatch.setattr(ledger_rows, "compile_fitness", lambda spec: compiled.append("x") or real(spec))
    ledger_rows._fits.clear()
    ledger_rows._templates.clear()
    spec = make_spec(pod_spec={"nodeSelector": {"pool": "a"}})
    pods = [make_pod(f"n-{i}", "Running", spec=spec, by_scheduler=False) for i in range(3)]
    assert pods[0].spec["containers"] is pods[2].spec["containers"], "the watch shares the template's values"
    assert [ledger_rows.pod_fits(pod, make_node(pod.node, labels={"pool": "a"})) for pod in pods] == [None] * 3
    assert len(compiled) == 1
    assert ledger_rows.pod_fits(pods[1], make_node("n-0", labels={"pool": "a"})) is not None, "pinned to n-1"
    assert ledger_rows.pod_fits(pods[2], make_node("n-2", labels={"pool": "b"})) is not None, "the selector holds"
