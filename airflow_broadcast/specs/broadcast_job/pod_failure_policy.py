"""`spec.podFailurePolicy` (F16): what a failed pod means, by its exit codes or its conditions.

This provider's extension, shaped as the Kubernetes Job's podFailurePolicy: rules are checked in
order and the first that matches a failed pod decides its action. `FailJob` fails the job at once,
`Ignore` re-runs the node without counting the failure, `FailNode` (the Job's `FailIndex`) counts it
with no retry, and `Count` (also when no rule matches) counts it as usual.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_broadcast.specs.field_errors import FieldError, duplicate, invalid, not_supported, required
from airflow_broadcast.specs.field_schema import KNOWN, ListOf
from airflow_broadcast.specs.name_rules import is_qualified_name

ACTIONS = ("Count", "FailJob", "FailNode", "Ignore")
OPERATORS = ("In", "NotIn")
CONDITION_STATUSES = ("True", "False", "Unknown")
MAX_RULES = 20
MAX_VALUES = 255
MAX_CONDITIONS = 20


@dataclass(frozen=True)
class FailureRule:
    """One rule: `exit_codes` (operator, values, container or None) or `conditions` ((type, status) pairs)."""

    action: str
    operator: str = ""
    values: frozenset[int] = frozenset()
    container: str | None = None
    conditions: tuple[tuple[str, str], ...] = ()


def parse_pod_failure_policy(spec: Mapping[str, Any]) -> tuple[FailureRule, ...]:
    """The rules of a validated spec, in order."""
    rules: list[FailureRule] = []
    for rule in (spec.get("podFailurePolicy") or {}).get("rules") or ():
        codes = rule.get("onExitCodes")
        conditions = tuple((str(c["type"]), str(c.get("status") or "True")) for c in rule.get("onPodConditions") or ())
        rules.append(FailureRule(action=str(rule["action"]), operator=str((codes or {}).get("operator") or ""),
                                 values=frozenset((codes or {}).get("values") or ()),
                                 container=(codes or {}).get("containerName"), conditions=conditions))
    return tuple(rules)


def pod_failure_policy_manifest(rules: Sequence[FailureRule]) -> dict[str, Any]:
    """`{"podFailurePolicy": ...}` as stored (statuses defaulted, values sorted); {} without rules."""
    if not rules:
        return {}
    body: list[dict[str, Any]] = []
    for rule in rules:
        item: dict[str, Any] = {"action": rule.action}
        if rule.conditions:
            item["onPodConditions"] = [{"type": t, "status": s} for t, s in rule.conditions]
        else:
            codes: dict[str, Any] = {"operator": rule.operator, "values": sorted(rule.values)}
            if rule.container is not None:
                codes = {"containerName": rule.container, **codes}
            item["onExitCodes"] = codes
        body.append(item)
    return {"podFailurePolicy": {"rules": body}}


def validate_pod_failure_policy(spec: Mapping[str, Any]) -> list[FieldError]:
    policy = spec.get("podFailurePolicy")
    if policy is None:
        return []
    path = "spec.podFailurePolicy"
    if not isinstance(policy, Mapping):
        return [invalid(path, policy, "must be an object")]
    rules = policy.get("rules")
    if not isinstance(rules, list):
        return [required(f"{path}.rules") if rules is None else invalid(f"{path}.rules", rules, "must be a list")]
    if len(rules) > MAX_RULES:
        return [invalid(f"{path}.rules", f"{len(rules)} rules", f"must have at most {MAX_RULES} elements")]
    names = _container_names(spec)
    errors: list[FieldError] = []
    restart = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
    if restart not in (None, "", "Never"):  # as the Job's: an OnFailure pod restarts in place, it never fails
        errors.append(invalid("spec.template.spec.restartPolicy", restart,
                              'only "Never" is supported when spec.podFailurePolicy is set'))
    for i, rule in enumerate(rules):
        errors.extend(_validate_rule(rule, f"{path}.rules[{i}]", names))
    return errors


def _container_names(spec: Mapping[str, Any]) -> dict[str, bool]:
    """The template's containers and init containers, as the Job API admits them → whether it is a sidecar."""
    pod = (spec.get("template") or {}).get("spec") or {}
    return {str(c.get("name")): key == "initContainers" and c.get("restartPolicy") == "Always"
            for key in ("containers", "initContainers") for c in pod.get(key) or [] if isinstance(c, Mapping)}


def _validate_rule(rule: Any, path: str, names: Mapping[str, bool]) -> list[FieldError]:
    if not isinstance(rule, Mapping):
        return [invalid(path, rule, "must be an object")]
    errors: list[FieldError] = []
    action = rule.get("action")
    if action is None or action == "":
        errors.append(required(f"{path}.action"))
    elif action not in ACTIONS:
        errors.append(not_supported(f"{path}.action", action, ACTIONS))
    codes, conditions = rule.get("onExitCodes"), rule.get("onPodConditions")
    if (codes is None) == (conditions is None):
        errors.append(invalid(path, "", "specifying one of onExitCodes and onPodConditions is required"
                              if codes is None else "specifying both onExitCodes and onPodConditions is not supported"))
    elif codes is not None:
        errors.extend(_validate_exit_codes(codes, f"{path}.onExitCodes", names))
    else:
        errors.extend(_validate_conditions(conditions, f"{path}.onPodConditions"))
    return errors


def _validate_exit_codes(codes: Any, path: str, names: Mapping[str, bool]) -> list[FieldError]:
    if not isinstance(codes, Mapping):
        return [invalid(path, codes, "must be an object")]
    errors: list[FieldError] = []
    operator, values, container = codes.get("operator"), codes.get("values"), codes.get("containerName")
    if operator is None or operator == "":
        errors.append(required(f"{path}.operator"))
    elif operator not in OPERATORS:
        errors.append(not_supported(f"{path}.operator", operator, OPERATORS))
    if container is not None and container not in names:
        errors.append(invalid(f"{path}.containerName", container,
                              "must be one of the container or initContainer names in the pod template"))
    elif container is not None and names[container]:
        errors.append(invalid(f"{path}.containerName", container, (
            "is a sidecar (an init container with restartPolicy Always): the kubelet ends it with the pod, "
            "so its exit code says nothing about the pod and is not looked at")))
    if values is None or values == []:
        return [*errors, required(f"{path}.values")]
    if not isinstance(values, list):
        return [*errors, invalid(f"{path}.values", values, "must be a list of integers")]
    if len(values) > MAX_VALUES:
        return [*errors, invalid(f"{path}.values", f"{len(values)} values", f"must have at most {MAX_VALUES} elements")]
    seen: set[int] = set()
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
            errors.append(invalid(f"{path}.values[{i}]", value, "must be a 32-bit integer"))
        elif value in seen:
            errors.append(duplicate(f"{path}.values[{i}]", value))
        elif value == 0 and operator == "In":
            errors.append(invalid(f"{path}.values[{i}]", value, "must not be 0 for the In operator"))
        else:
            seen.add(value)
    return errors


def _validate_conditions(conditions: Any, path: str) -> list[FieldError]:
    if conditions == []:
        return [required(path)]
    if not isinstance(conditions, list):
        return [invalid(path, conditions, "must be a list")]
    if len(conditions) > MAX_CONDITIONS:
        return [invalid(path, f"{len(conditions)} conditions", f"must have at most {MAX_CONDITIONS} elements")]
    errors: list[FieldError] = []
    for i, condition in enumerate(conditions):
        item = f"{path}[{i}]"
        if not isinstance(condition, Mapping):
            errors.append(invalid(item, condition, "must be an object"))
            continue
        kind, status = condition.get("type"), condition.get("status", "True")
        if not isinstance(kind, str) or not kind:
            errors.append(required(f"{item}.type"))
        else:
            errors.extend(invalid(f"{item}.type", kind, message) for message in is_qualified_name(kind))
        if status not in CONDITION_STATUSES:
            errors.append(not_supported(f"{item}.status", status, CONDITION_STATUSES))
    return errors


POD_FAILURE_POLICY_FIELDS: dict[str, Any] = {"rules": ListOf({
    "action": KNOWN,
    "onExitCodes": {"containerName": KNOWN, "operator": KNOWN, "values": KNOWN},
    "onPodConditions": ListOf({"type": KNOWN, "status": KNOWN}),
})}
"""Its fields, so that a misspelt one is warned of as the API server would."""
