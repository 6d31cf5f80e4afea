"""BroadcastJob node eligibility: upstream `checkNodeFitness`, predicate by predicate.

The predicates run in upstream order (node name, affinity/selector, taints,
unschedulable, resources); the first failure wins and its scheduler reason string
is returned. `compile_fitness` parses a pod spec once, so that one spec can be
checked against thousands of nodes; the module-level functions wrap it. Affinity
matching is in `node_affinity`, requests and allocatable in `pod_resources`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_broadcast.reconcilers.broadcast_job.node_affinity import (
    Selector,
    Term,
    matches_affinity,
    node_selector,
    required_terms,
)
from airflow_broadcast.reconcilers.broadcast_job.pod_resources import (
    RequestQuantityError,
    allocatable,
    checked_requests,
    pod_requests,
)
from airflow_broadcast.reconcilers.observed import NodeInfo, Taint
from airflow_broadcast.specs.broadcast_job.node_selection import NodeSelection

REASON_NODE_NAME = "node(s) didn't match the requested node name"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_TOO_MANY_PODS = "Too many pods"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
# N15: the job's own node selection, checked before the template's predicates.
REASON_NOT_LISTED = "node(s) not in spec.nodeNames"
REASON_EXCLUDED = "node(s) in spec.excludeNodeNames"
REASON_SPEC_SELECTOR = "node(s) didn't match spec.nodeSelector"
LEFT_OUT_REASONS = frozenset({REASON_AFFINITY, REASON_NOT_LISTED, REASON_EXCLUDED, REASON_SPEC_SELECTOR})
"""Reasons of nodes the job is not meant for at all (shown after the nodes it is meant for but cannot use)."""

_FILTERED_EFFECTS = frozenset({"NoSchedule", "NoExecute"})

_Toleration = tuple[str, str, str, str]  # key, operator, value, effect


def _toleration(tol: Mapping[str, Any]) -> _Toleration:
    return (str(tol.get("key") or ""), str(tol.get("operator") or ""),
            str(tol.get("value") or ""), str(tol.get("effect") or ""))


def _tolerates(tolerations: Iterable[_Toleration], taint: Taint) -> bool:
    for key, op, value, effect in tolerations:
        if (effect and effect != taint.effect) or (key and key != taint.key):
            continue
        if (op in ("", "Equal") and value == taint.value) or op == "Exists":
            return True
    return False


def tolerates(tolerations: Sequence[Mapping[str, Any]], taint: Taint) -> bool:
    """k8s ToleratesTaint for any of the tolerations; tolerationSeconds plays no part."""
    return _tolerates((_toleration(t or {}) for t in tolerations), taint)


@dataclass(frozen=True, slots=True)
class FitnessCheck:
    """One pod spec, parsed once; call it with a node to get the failure reason or None."""

    node_name: str
    node_selector: Selector
    terms: tuple[Term, ...] | None  # None: no required node affinity at all
    tolerations: tuple[_Toleration, ...]
    requests: tuple[tuple[str, int], ...]
    request_error: str | None

    def __call__(self, node: NodeInfo) -> str | None:
        if self.node_name and self.node_name != node.name:
            return REASON_NODE_NAME
        if not matches_affinity(self.node_selector, self.terms, node):
            return REASON_AFFINITY
        for taint in node.taints:
            if taint.effect in _FILTERED_EFFECTS and not _tolerates(self.tolerations, taint):
                return f"node(s) had taint {{{taint.key}: {taint.value}}}, that the pod didn't tolerate"
        if node.unschedulable and not _tolerates(self.tolerations, UNSCHEDULABLE_TAINT):
            return REASON_UNSCHEDULABLE
        if self.request_error is not None:
            return self.request_error
        if allocatable(node, "pods") < 1:
            return REASON_TOO_MANY_PODS
        for name, amount in self.requests:
            if amount > allocatable(node, name):
                return f"Insufficient {name}"
        return None


def compile_fitness(spec: Mapping[str, Any], *, template: bool = False) -> FitnessCheck:
    """Parse `spec` once. With template=True it is the mock pod: spec.nodeName is the node's own name.

    A malformed request quantity does not raise: the API server would refuse such a
    pod, so no node can run it; every node then fails with the reason
    "invalid resource quantity for <name>: ..." instead of the reconcile crashing.
    """
    try:
        requests, request_error = checked_requests(pod_requests(spec)), None
    except RequestQuantityError as err:
        requests, request_error = (), str(err)
    return FitnessCheck(
        node_name="" if template else str(spec.get("nodeName") or ""),
        node_selector=node_selector(spec),
        terms=required_terms(spec),
        tolerations=tuple(_toleration(t or {}) for t in spec.get("tolerations") or []),
        requests=requests,
        request_error=request_error,
    )


def matches_node_selector_and_affinity(spec: Mapping[str, Any], node: NodeInfo) -> bool:
    """spec.nodeSelector AND the required node affinity (preferred affinity is ignored)."""
    return matches_affinity(node_selector(spec), required_terms(spec), node)


def check_node_fitness(spec: Mapping[str, Any], node: NodeInfo) -> str | None:
    """The upstream predicates for an actual pod spec: the first failure reason, or None if it fits."""
    return compile_fitness(spec)(node)


def check_template_fitness(template_spec: Mapping[str, Any], node: NodeInfo) -> str | None:
    """The mock-pod check: the template's own nodeName is replaced by the node's and so has no effect."""
    return compile_fitness(template_spec, template=True)(node)


def selection_reason(selection: NodeSelection, node: NodeInfo) -> str | None:
    """Why the job's spec-level node selection (N15) leaves `node` out, or None."""
    if selection.names is not None and node.name not in selection.names:
        return REASON_NOT_LISTED
    if node.name in selection.excluded:
        return REASON_EXCLUDED
    if any(node.labels.get(key) != value for key, value in selection.labels):
        return REASON_SPEC_SELECTOR
    return None


def with_selection(selection: NodeSelection, template_fits: Callable[[NodeInfo], str | None]
                   ) -> Callable[[NodeInfo], str | None]:
    """The template's fitness check, preceded by the job's node selection (none: the check itself)."""
    if selection.everything:
        return template_fits

    def fits(node: NodeInfo) -> str | None:
        return selection_reason(selection, node) or template_fits(node)

    return fits
