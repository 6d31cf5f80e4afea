"""BroadcastJob node eligibility: upstream `checkNodeFitness`, predicate by predicate.

The predicates run in upstream order (node name, affinity/selector, taints,
unschedulable, resources); the first failure wins and its scheduler reason string
is returned. `compile_fitness` parses a pod spec once, so that one spec can be
checked against thousands of nodes; the module-level functions wrap it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from airflow_broadcast.reconcilers.observed import NodeInfo, Taint
from airflow_broadcast.specs.name_rules import is_qualified_name, is_valid_label_value
from airflow_broadcast.specs.quantities import QuantityError, int_value, milli_value, parse_quantity

REASON_NODE_NAME = "node(s) didn't match the requested node name"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_TOO_MANY_PODS = "Too many pods"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")

_FILTERED_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
_FIXED_RESOURCES = ("cpu", "memory", "ephemeral-storage")
_POD_LEVEL_RESOURCES = ("cpu", "memory")
_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
_GO_INT = re.compile(r"([+-]?)([0-9]+)")

_Selector = tuple[tuple[str, str], ...]
_Toleration = tuple[str, str, str, str]  # key, operator, value, effect
_LabelRequirement = tuple[str, str, frozenset[str], int]  # operator, key, values, Gt/Lt bound
_FieldRequirement = tuple[str, str, bool]  # key, value, True for In / False for NotIn


class RequestQuantityError(ValueError):
    """A request, limit or overhead that is no quantity: the API server refuses such a pod, no node can run it."""


def _quantity(name: str, raw: object) -> Fraction:
    try:
        return parse_quantity(raw)
    except QuantityError as err:
        raise RequestQuantityError(f"invalid resource quantity for {name}: {err}") from err


def _container_requests(container: Mapping[str, Any]) -> dict[str, Fraction]:
    """Requests, with limits filling the missing names as API defaulting does for a created pod."""
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {str(name): _quantity(str(name), raw) for name, raw in merged.items()}


def _add(into: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for name, amount in more.items():
        into[name] = into.get(name, Fraction(0)) + amount


def _max(into: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for name, amount in more.items():
        if name not in into or amount > into[name]:
            into[name] = amount


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Fraction]:
    """The pod's effective requests, as k8s `PodRequests` computes them for the scheduler.

    A regular init container runs next to the sidecars started before it; sidecars
    (`restartPolicy: Always`) also run next to the containers. Pod-level cpu/memory
    requests override (pod-level limits default them, as the API server does), then
    overhead is added. Raises RequestQuantityError ("invalid resource quantity for <name>: ...").
    """
    requests: dict[str, Fraction] = {}
    for container in spec.get("containers") or []:
        _add(requests, _container_requests(container or {}))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for container in spec.get("initContainers") or []:
        own = _container_requests(container or {})
        if (container or {}).get("restartPolicy") == "Always":
            _add(requests, own)
            _add(sidecars, own)
            _max(init_peak, sidecars)
        else:
            _add(own, sidecars)
            _max(init_peak, own)
    _max(requests, init_peak)
    pod_req, pod_lim = ((spec.get("resources") or {}).get(kind) or {} for kind in ("requests", "limits"))
    for name in _POD_LEVEL_RESOURCES:
        if name in pod_req:
            requests[name] = _quantity(name, pod_req[name])
        elif name in pod_lim and name not in requests:
            requests[name] = _quantity(name, pod_lim[name])
    _add(requests, {str(k): _quantity(str(k), v) for k, v in (spec.get("overhead") or {}).items()})
    return requests


@lru_cache(maxsize=1024)
def _is_scalar_resource(name: str) -> bool:
    """Extended, hugepages, attachable-volume and kubernetes.io/ names; the scheduler ignores others."""
    if name.startswith(("hugepages-", "attachable-volumes-")) or "kubernetes.io/" in name:
        return True
    return "/" in name and not name.startswith("requests.") and not is_qualified_name("requests." + name)


def _rounded(name: str, amount: Fraction) -> int:
    return milli_value(amount) if name == "cpu" else int_value(amount)


def _allocatable(node: NodeInfo, name: str) -> int:
    """A missing or unparsable allocatable counts as 0: such a node cannot offer the resource."""
    try:
        return _rounded(name, parse_quantity(node.allocatable.get(name, "0")))
    except QuantityError:
        return 0


def _checked_requests(requests: Mapping[str, Fraction]) -> tuple[tuple[str, int], ...]:
    """The (name, amount) pairs noderesources.Fits compares, in the order it reports them."""
    rounded = {name: _rounded(name, amount) for name, amount in requests.items()}
    fixed = [(name, rounded[name]) for name in _FIXED_RESOURCES if rounded.get(name, 0) > 0]
    scalar = sorted((n, a) for n, a in rounded.items() if a != 0 and _is_scalar_resource(n))
    return (*fixed, *scalar)


def _go_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), or None where Go returns an error."""
    match = _GO_INT.fullmatch(text)
    if match is None or len(match.group(2).lstrip("0")) > 19:
        return None
    value = int(match.group(1) + (match.group(2).lstrip("0") or "0"))
    return value if -(2**63) <= value < 2**63 else None


def _label_requirement(expr: Mapping[str, Any]) -> _LabelRequirement | None:
    """A parsed matchExpressions entry, or None where labels.NewRequirement rejects it."""
    op = str(expr.get("operator") or "")
    key = str(expr.get("key") or "")
    values = [str(v) for v in expr.get("values") or []]
    if op not in _LABEL_OPERATORS or is_qualified_name(key) or any(map(is_valid_label_value, values)):
        return None
    if (op in ("In", "NotIn") and not values) or (op in ("Exists", "DoesNotExist") and values):
        return None
    bound = _go_int64(values[0]) if op in ("Gt", "Lt") and len(values) == 1 else None
    if op in ("Gt", "Lt") and bound is None:
        return None
    return op, key, frozenset(values), bound or 0


def _label_matches(req: _LabelRequirement, labels: Mapping[str, str]) -> bool:
    op, key, values, bound = req
    actual = labels.get(key)
    if op == "In":
        return actual is not None and actual in values
    if op == "NotIn":
        return actual is None or actual not in values
    if op == "Exists":
        return actual is not None
    if op == "DoesNotExist":
        return actual is None
    number = _go_int64(actual) if actual is not None else None
    return number is not None and (number > bound if op == "Gt" else number < bound)


@dataclass(frozen=True, slots=True)
class _Term:
    labels: tuple[_LabelRequirement, ...]
    fields: tuple[_FieldRequirement, ...]

    def matches(self, node: NodeInfo) -> bool:
        if not all(_label_matches(req, node.labels) for req in self.labels):
            return False
        if not node.name:  # upstream has no fields for a nameless node and skips matchFields
            return True
        return all(((node.name if key == "metadata.name" else "") == value) == equal
                   for key, value, equal in self.fields)


def _term(term: Mapping[str, Any]) -> _Term | None:
    """A parsed nodeSelectorTerm, or None when it is empty or invalid (both match no node)."""
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    labels = [_label_requirement(expr or {}) for expr in exprs]
    parsed_fields: list[_FieldRequirement] = []
    for field in fields:
        op, values = (field or {}).get("operator"), (field or {}).get("values") or []
        if op not in ("In", "NotIn") or len(values) != 1:
            return None
        parsed_fields.append((str(field.get("key") or ""), str(values[0]), op == "In"))
    if (not exprs and not fields) or any(req is None for req in labels):
        return None
    return _Term(tuple(req for req in labels if req is not None), tuple(parsed_fields))


def _node_selector(spec: Mapping[str, Any]) -> _Selector:
    return tuple((str(k), str(v)) for k, v in (spec.get("nodeSelector") or {}).items())


def _required_terms(spec: Mapping[str, Any]) -> tuple[_Term, ...] | None:
    """The parsed required terms (empty and invalid ones dropped), or None without required affinity."""
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    parsed = (_term(term or {}) for term in required.get("nodeSelectorTerms") or [])
    return tuple(term for term in parsed if term is not None)


def _matches_affinity(selector: _Selector, terms: tuple[_Term, ...] | None, node: NodeInfo) -> bool:
    if any(node.labels.get(key) != value for key, value in selector):
        return False
    return terms is None or any(term.matches(node) for term in terms)


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
    node_selector: _Selector
    terms: tuple[_Term, ...] | None  # None: no required node affinity at all
    tolerations: tuple[_Toleration, ...]
    requests: tuple[tuple[str, int], ...]
    request_error: str | None

    def __call__(self, node: NodeInfo) -> str | None:
        if self.node_name and self.node_name != node.name:
            return REASON_NODE_NAME
        if not _matches_affinity(self.node_selector, self.terms, node):
            return REASON_AFFINITY
        for taint in node.taints:
            if taint.effect in _FILTERED_EFFECTS and not _tolerates(self.tolerations, taint):
                return f"node(s) had taint {{{taint.key}: {taint.value}}}, that the pod didn't tolerate"
        if node.unschedulable and not _tolerates(self.tolerations, UNSCHEDULABLE_TAINT):
            return REASON_UNSCHEDULABLE
        if self.request_error is not None:
            return self.request_error
        if _allocatable(node, "pods") < 1:
            return REASON_TOO_MANY_PODS
        for name, amount in self.requests:
            if amount > _allocatable(node, name):
                return f"Insufficient {name}"
        return None


def compile_fitness(spec: Mapping[str, Any], *, template: bool = False) -> FitnessCheck:
    """Parse `spec` once. With template=True it is the mock pod: spec.nodeName is the node's own name.

    A malformed request quantity does not raise: the API server would refuse such a
    pod, so no node can run it; every node then fails with the reason
    "invalid resource quantity for <name>: ..." instead of the reconcile crashing.
    """
    try:
        requests, request_error = _checked_requests(pod_requests(spec)), None
    except RequestQuantityError as err:
        requests, request_error = (), str(err)
    return FitnessCheck(
        node_name="" if template else str(spec.get("nodeName") or ""),
        node_selector=_node_selector(spec),
        terms=_required_terms(spec),
        tolerations=tuple(_toleration(t or {}) for t in spec.get("tolerations") or []),
        requests=requests,
        request_error=request_error,
    )


def matches_node_selector_and_affinity(spec: Mapping[str, Any], node: NodeInfo) -> bool:
    """spec.nodeSelector AND the required node affinity (preferred affinity is ignored)."""
    return _matches_affinity(_node_selector(spec), _required_terms(spec), node)


def check_node_fitness(spec: Mapping[str, Any], node: NodeInfo) -> str | None:
    """The upstream predicates for an actual pod spec: the first failure reason, or None if it fits."""
    return compile_fitness(spec)(node)


def check_template_fitness(template_spec: Mapping[str, Any], node: NodeInfo) -> str | None:
    """The mock-pod check: the template's own nodeName is replaced by the node's and so has no effect."""
    return compile_fitness(template_spec, template=True)(node)
