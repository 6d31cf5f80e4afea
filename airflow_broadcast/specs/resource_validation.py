"""Container resource requirements as Kubernetes validates them: names, quantities, requests ≤ limits."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from airflow_broadcast.specs.field_errors import NON_NEGATIVE_MSG, FieldError, invalid, required
from airflow_broadcast.specs.json_fields import as_map
from airflow_broadcast.specs.manifest_limits import key_path
from airflow_broadcast.specs.name_rules import is_qualified_name
from airflow_broadcast.specs.quantities import QuantityError, parse_quantity

STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def _is_extended(resource: str) -> bool:
    return "/" in resource and "kubernetes.io/" not in resource


def _overcommit_allowed(resource: str) -> bool:
    return not _is_extended(resource) and not resource.startswith("hugepages-")


def _is_standard_container_resource(resource: str) -> bool:
    return resource in STANDARD_CONTAINER_RESOURCES or resource.startswith("hugepages-")


def validate_resources(value: Any, path: str) -> list[FieldError]:
    """Names, quantity syntax and sign, and requests ≤ limits (== for extended resources)."""
    errors: list[FieldError] = []
    resources = as_map(value, path, errors)
    parsed: dict[str, dict[str, Fraction]] = {"limits": {}, "requests": {}}
    for section in ("limits", "requests"):
        for key, quantity in as_map(resources.get(section), f"{path}.{section}", errors).items():
            resource = str(key)
            item_path = key_path(f"{path}.{section}", resource)
            errors.extend(invalid(item_path, resource, msg) for msg in is_qualified_name(resource))
            if "/" not in resource and not _is_standard_container_resource(resource):
                errors.append(invalid(item_path, resource, "must be a standard resource for containers"))
            try:
                amount = parse_quantity(quantity)
            except QuantityError as err:
                errors.append(invalid(item_path, quantity, err.reason))
                continue
            if amount < 0:
                errors.append(invalid(item_path, str(quantity), NON_NEGATIVE_MSG))
            elif _is_extended(resource) and amount.denominator != 1:
                errors.append(invalid(item_path, str(quantity), "must be an integer"))
            parsed[section][resource] = amount
            if section == "requests":
                limit_text = as_map(resources.get("limits"), path, []).get(key)
                errors.extend(_compare_to_limit(resource, quantity, amount, parsed["limits"], limit_text, path))
    return errors


def _compare_to_limit(resource: str, quantity: Any, amount: Fraction, limits: Mapping[str, Fraction],
                      limit_text: Any, path: str) -> list[FieldError]:
    """Kubernetes reports these at `resources.requests`, quoting the limit."""
    if resource not in limits:
        if limit_text is None and not _overcommit_allowed(resource):
            return [required(f"{path}.limits", "Limit must be set for non overcommitable resources")]
        return []
    limit = limits[resource]
    if amount != limit and not _overcommit_allowed(resource):
        message = f"must be equal to {resource} limit of {limit_text}"
    elif amount > limit:
        message = f"must be less than or equal to {resource} limit of {limit_text}"
    else:
        return []
    return [invalid(f"{path}.requests", str(quantity), message)]
