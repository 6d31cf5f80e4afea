"""Spec-level node selection (N15): `spec.nodeNames`, `spec.excludeNodeNames` and `spec.nodeSelector`.

This provider's extension: which nodes a job is for, said once for the job rather than in the pod
template. It narrows the nodes a job creates pods on, before the template's own predicates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_broadcast.specs.field_errors import FieldError, duplicate, invalid
from airflow_broadcast.specs.name_rules import validate_dns1123_subdomain, validate_labels

FIELDS = ("nodeNames", "excludeNodeNames", "nodeSelector")
MAX_NAMES = 20000  # a sanity bound; the manifest's own limit (512 KiB of JSON) is met first, near 10,000 names


@dataclass(frozen=True)
class NodeSelection:
    """`names` None means every node; a node must also be outside `excluded` and carry every `labels` pair."""

    names: frozenset[str] | None = None
    excluded: frozenset[str] = frozenset()
    labels: tuple[tuple[str, str], ...] = ()

    @property
    def everything(self) -> bool:
        return self.names is None and not self.excluded and not self.labels


def parse_node_selection(spec: Mapping[str, Any]) -> NodeSelection:
    """From a validated spec."""
    names = spec.get("nodeNames")
    return NodeSelection(
        names=None if names is None else frozenset(names),
        excluded=frozenset(spec.get("excludeNodeNames") or ()),
        labels=tuple(sorted((spec.get("nodeSelector") or {}).items())),
    )


def node_selection_manifest(selection: NodeSelection) -> dict[str, Any]:
    """The fields as stored (sorted, so that equal selections store equal manifests); {} when unset."""
    body: dict[str, Any] = {}
    if selection.names is not None:
        body["nodeNames"] = sorted(selection.names)
    if selection.excluded:
        body["excludeNodeNames"] = sorted(selection.excluded)
    if selection.labels:
        body["nodeSelector"] = dict(selection.labels)
    return body


def validate_node_selection(spec: Mapping[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in ("nodeNames", "excludeNodeNames"):
        errors.extend(_validate_names(spec.get(key), f"spec.{key}"))
    selector = spec.get("nodeSelector")
    if selector is not None:
        errors.extend(validate_labels(selector, "spec.nodeSelector"))
    return errors


def _validate_names(value: Any, path: str) -> list[FieldError]:
    if value is None:
        return []
    if not isinstance(value, list):
        return [invalid(path, value, "must be a list of node names")]
    if len(value) > MAX_NAMES:
        return [invalid(path, f"{len(value)} names", f"must have at most {MAX_NAMES} names")]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, name in enumerate(value):
        if not isinstance(name, str):
            errors.append(invalid(f"{path}[{i}]", name, "must be a string"))
        elif name in seen:
            errors.append(duplicate(f"{path}[{i}]", name))
        else:
            seen.add(name)
            errors.extend(validate_dns1123_subdomain(name, f"{path}[{i}]"))
    return errors
