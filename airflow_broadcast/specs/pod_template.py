"""A faithful subset of Kubernetes' core `ValidatePodTemplateSpec`, with its paths and messages.

Checks run in the order Kubernetes runs them so that error lists read the same.
Fields the apiserver would default first (restartPolicy, dnsPolicy, protocol,
terminationMessagePolicy, imagePullPolicy) are only checked when set.
Shared by BroadcastJob and TFJob validation; containers are checked in `container_validation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_broadcast.specs.api_types import MAX_INT32, MAX_INT64
from airflow_broadcast.specs.container_validation import validate_container
from airflow_broadcast.specs.field_errors import (
    NON_NEGATIVE_MSG,
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from airflow_broadcast.specs.json_fields import as_list, as_map, as_str, enum_errors, is_int, objects
from airflow_broadcast.specs.name_rules import (
    inclusive_range_error,
    is_qualified_name,
    is_valid_label_value,
    validate_annotations,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_labels,
)

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def validate_pod_template(template: Any, path: str) -> list[FieldError]:
    """Validate a PodTemplateSpec mapping at `path` (e.g. "spec.template"); [] when valid."""
    errors: list[FieldError] = []
    template = as_map(template, path, errors)
    if errors:
        return errors
    metadata = as_map(template.get("metadata"), f"{path}.metadata", errors)
    errors.extend(validate_labels(metadata.get("labels"), f"{path}.labels"))
    errors.extend(validate_annotations(metadata.get("annotations"), f"{path}.annotations"))
    spec_path = f"{path}.spec"
    spec = template.get("spec")
    if spec is not None and not isinstance(spec, Mapping):
        errors.append(invalid(spec_path, spec, "must be an object"))
        return errors
    spec = spec or {}
    errors.extend(_validate_pod_spec(spec, spec_path))
    if spec.get("ephemeralContainers"):
        message = "ephemeral containers not allowed in pod template"
        errors.append(forbidden(f"{spec_path}.ephemeralContainers", message))
    return errors


def _validate_pod_spec(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None and (not is_int(grace) or grace < 0):
        errors.append(invalid(f"{path}.terminationGracePeriodSeconds", grace, NON_NEGATIVE_MSG))
    elif grace is not None and grace > MAX_INT64:
        errors.append(invalid(f"{path}.terminationGracePeriodSeconds", grace, inclusive_range_error(0, MAX_INT64)))
    volumes = _validate_volumes(spec.get("volumes"), f"{path}.volumes", errors)
    raw_containers = spec.get("containers")
    containers = as_list(raw_containers, f"{path}.containers", errors)
    if not containers and (raw_containers is None or isinstance(raw_containers, list)):
        errors.append(required(f"{path}.containers"))
    init_containers = as_list(spec.get("initContainers"), f"{path}.initContainers", errors)
    names: set[str] = set()
    for group, items in (("containers", containers), ("initContainers", init_containers)):
        for index, container in enumerate(items):
            item_path = f"{path}.{group}[{index}]"
            if not isinstance(container, Mapping):
                errors.append(invalid(item_path, container, "must be an object"))
                continue
            errors.extend(validate_container(container, volumes, item_path))
            name = container.get("name")
            if isinstance(name, str) or name is None:
                name = name or ""
                if name in names:
                    errors.append(duplicate(f"{item_path}.name", name))
                elif name or group == "containers":
                    names.add(name)
    errors.extend(enum_errors(spec, "restartPolicy", RESTART_POLICIES, path))
    errors.extend(enum_errors(spec, "dnsPolicy", DNS_POLICIES, path))
    errors.extend(validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector"))
    if spec.get("dnsPolicy") == "None" and not spec.get("dnsConfig"):
        errors.append(required(f"{path}.dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None"))
    for key in ("serviceAccountName", "nodeName", "priorityClassName"):
        value = as_str(spec.get(key), f"{path}.{key}", errors)
        if value:
            errors.extend(validate_dns1123_subdomain(value, f"{path}.{key}"))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and (not is_int(deadline) or not 1 <= deadline <= MAX_INT32):
        errors.append(invalid(f"{path}.activeDeadlineSeconds", deadline, inclusive_range_error(1, MAX_INT32)))
    for key in ("hostname", "subdomain"):
        value = as_str(spec.get(key), f"{path}.{key}", errors)
        if value:
            errors.extend(validate_dns1123_label(value, f"{path}.{key}"))
    for index, toleration in enumerate(as_list(spec.get("tolerations"), f"{path}.tolerations", errors)):
        errors.extend(_validate_toleration(toleration, f"{path}.tolerations[{index}]"))
    return errors


def _validate_volumes(value: Any, path: str, errors: list[FieldError]) -> set[str]:
    """Volume names must be unique DNS labels; returns the names mounts may refer to."""
    names: set[str] = set()
    for item, volume in objects(value, path, errors):
        name_path = f"{item}.name"
        name = volume.get("name")
        problems: list[FieldError] = []
        if not name:
            problems.append(required(name_path))
        elif not isinstance(name, str):
            problems.append(invalid(name_path, name, "must be a string"))
        else:
            problems.extend(validate_dns1123_label(name, name_path))
        if isinstance(name, str) and name in names:
            problems.append(duplicate(name_path, name))
        if problems:
            errors.extend(problems)
        elif isinstance(name, str):
            names.add(name)
    return names


def _validate_toleration(toleration: Any, path: str) -> list[FieldError]:
    if not isinstance(toleration, Mapping):
        return [invalid(path, toleration, "must be an object")]
    errors: list[FieldError] = []
    key = as_str(toleration.get("key"), f"{path}.key", errors)
    operator = toleration.get("operator") or ""
    value = as_str(toleration.get("value"), f"{path}.value", errors)
    effect = toleration.get("effect") or ""
    if key:
        errors.extend(invalid(f"{path}.key", key, msg) for msg in is_qualified_name(key))
    if not key and operator != "Exists":
        errors.append(invalid(
            f"{path}.operator", operator,
            'operator must be Exists when `key` is empty, which means "match all values and all keys"',
        ))
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        message = "effect must be 'NoExecute' when `tolerationSeconds` is set"
        errors.append(invalid(f"{path}.effect", effect, message))
    if operator in ("Equal", ""):
        errors.extend(invalid(f"{path}.operator", value, msg) for msg in is_valid_label_value(value))
    elif operator == "Exists":
        if value:
            message = "value must be empty when `operator` is 'Exists'"
            errors.append(invalid(f"{path}.operator", dict(toleration), message))
    else:
        errors.append(not_supported(f"{path}.operator", operator, TOLERATION_OPERATORS))
    if effect and effect not in TAINT_EFFECTS:
        errors.append(not_supported(f"{path}.effect", effect, TAINT_EFFECTS))
    return errors
