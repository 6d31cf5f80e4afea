"""spec.nodeSelector and required node affinity, matched as the scheduler's NodeAffinity filter does.

Terms are parsed once per pod spec (`required_terms`) so one spec can be matched
against thousands of nodes; a requirement `labels.NewRequirement` would reject
makes its term match no node, as upstream.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_broadcast.reconcilers.observed import NodeInfo
from airflow_broadcast.specs.api_types import MAX_INT64
from airflow_broadcast.specs.name_rules import is_qualified_name, is_valid_label_value

_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
_GO_INT = re.compile(r"([+-]?)([0-9]+)")

Selector = tuple[tuple[str, str], ...]
_LabelRequirement = tuple[str, str, frozenset[str], int]  # operator, key, values, Gt/Lt bound
_FieldRequirement = tuple[str, str, bool]  # key, value, True for In / False for NotIn


def _go_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), or None where Go returns an error."""
    match = _GO_INT.fullmatch(text)
    if match is None or len(match.group(2).lstrip("0")) > 19:
        return None
    value = int(match.group(1) + (match.group(2).lstrip("0") or "0"))
    return value if -MAX_INT64 - 1 <= value <= MAX_INT64 else None


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
class Term:
    labels: tuple[_LabelRequirement, ...]
    fields: tuple[_FieldRequirement, ...]

    def matches(self, node: NodeInfo) -> bool:
        if not all(_label_matches(req, node.labels) for req in self.labels):
            return False
        if not node.name:  # upstream has no fields for a nameless node and skips matchFields
            return True
        return all(((node.name if key == "metadata.name" else "") == value) == equal
                   for key, value, equal in self.fields)


def _term(term: Mapping[str, Any]) -> Term | None:
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
    return Term(tuple(req for req in labels if req is not None), tuple(parsed_fields))


def node_selector(spec: Mapping[str, Any]) -> Selector:
    return tuple((str(k), str(v)) for k, v in (spec.get("nodeSelector") or {}).items())


def required_terms(spec: Mapping[str, Any]) -> tuple[Term, ...] | None:
    """The parsed required terms (empty and invalid ones dropped), or None without required affinity."""
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    parsed = (_term(term or {}) for term in required.get("nodeSelectorTerms") or [])
    return tuple(term for term in parsed if term is not None)


def matches_affinity(selector: Selector, terms: tuple[Term, ...] | None, node: NodeInfo) -> bool:
    if any(node.labels.get(key) != value for key, value in selector):
        return False
    return terms is None or any(term.matches(node) for term in terms)
