"""Where a BroadcastJob runs: the eligible nodes, the pods that no longer fit, and each node's result line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_broadcast.reconcilers.broadcast_job.memo import IdentityMemo
from airflow_broadcast.reconcilers.broadcast_job.node_eligibility import (
    FitnessCheck,
    check_node_fitness,
    compile_fitness,
)
from airflow_broadcast.reconcilers.broadcast_job.pods import (
    UNSCHEDULABLE_REASON,
    attempt_of,
    node_result,
    unschedulable_detail,
)
from airflow_broadcast.reconcilers.observed import NodeInfo, PodInfo
from airflow_broadcast.reconcilers.plan import JobEvent

_pod_fits: IdentityMemo[PodInfo, NodeInfo, str | None] = IdentityMemo()
_results: IdentityMemo[PodInfo, None, dict[str, Any]] = IdentityMemo()


_template_checks: IdentityMemo[Mapping[str, Any], None, FitnessCheck] = IdentityMemo()


def _compile_template(template: Mapping[str, Any], _: None) -> FitnessCheck:
    return compile_fitness(template.get("spec") or {}, template=True)


def _fitness(pod: PodInfo, node: NodeInfo) -> str | None:
    return check_node_fitness(pod.spec, node)


def _result(pod: PodInfo, _: None) -> dict[str, Any]:
    return node_result(pod)


@dataclass
class Placement:
    """`desired`: eligible node → its pod (None: none yet); `rest`: the eligible nodes without one;
    `misfits`: pods whose node no longer fits them (N13); `ineligible`: node → why it does not fit."""

    desired: dict[str, PodInfo | None] = field(default_factory=dict)
    rest: list[str] = field(default_factory=list)
    misfits: list[PodInfo] = field(default_factory=list)
    ineligible: dict[str, str] = field(default_factory=dict)


def place(template: Mapping[str, Any], nodes: Sequence[NodeInfo], node_to_pod: Mapping[str, PodInfo]) -> Placement:
    """getNodesToRunPod (§3.6), over nodes sorted by name so creation order is stable (R16)."""
    placement = Placement()
    template_fits = _template_checks(str(id(template)), template, None, _compile_template)
    for node in sorted(nodes, key=lambda n: n.name):
        pod = node_to_pod.get(node.name)
        if pod is not None:
            reason = _pod_fits(pod.uid or pod.name, pod, node, _fitness)  # N13, once per pod and node version
            if reason is not None and not pod.deleting:
                placement.misfits.append(pod)
                placement.ineligible[node.name] = reason
            else:
                placement.desired[node.name] = pod
            continue
        reason = template_fits(node)
        if reason is None:
            placement.rest.append(node.name)
            placement.desired[node.name] = None
        else:
            placement.ineligible[node.name] = reason
    return placement


def node_results(desired: Mapping[str, PodInfo | None], previous: Mapping[str, Any], *,
                 warn_unschedulable: bool) -> tuple[dict[str, Any], list[JobEvent]]:
    """Per-node results (S11, L12): a node keeps its last terminal result even if its pod goes.

    With `warn_unschedulable` (L11 fixed), a Warning when a node's pod turns unschedulable,
    once rather than on every pass.
    """
    results: dict[str, Any] = {}
    events: list[JobEvent] = []
    for node, pod in desired.items():
        before = previous.get(node) or {}
        if pod is not None:
            results[node] = dict(_results(pod.uid or pod.name, pod, None, _result))
            detail = unschedulable_detail(pod)
            if warn_unschedulable and detail is not None and (
                    before.get("pod"), before.get("reason"), before.get("attempt", 1)) != (
                    pod.name, UNSCHEDULABLE_REASON, attempt_of(pod)):
                events.append(JobEvent("Warning", "PodUnschedulable",
                                       f"Pod {pod.name} for node {node} cannot be scheduled: {detail}"))
        elif before.get("phase") in ("Succeeded", "Failed"):
            results[node] = before
    return results, events
