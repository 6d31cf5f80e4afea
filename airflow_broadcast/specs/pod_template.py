"""A faithful subset of Kubernetes' core `ValidatePodTemplateSpec`, with its paths and messages.

Checks run in the order Kubernetes runs them so that error lists read the same.
Fields the apiserver would default first (restartPolicy, dnsPolicy, protocol,
terminationMessagePolicy, imagePullPolicy) are only checked when set.
Shared by BroadcastJob and TFJob validation.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any, TypeGuard

from airflow_broadcast.specs.api_types import MAX_INT32
from airflow_broadcast.specs.field_errors import (
    FieldError,
    forbidden,
    invalid,
    not_found,
    not_supported,
    required,
)
from airflow_broadcast.specs.name_rules import (
    inclusive_range_error,
    is_env_var_name,
    is_qualified_name,
    is_valid_label_value,
    is_valid_port_name,
    is_valid_port_num,
    validate_annotations,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_labels,
)
from airflow_broadcast.specs.quantities import QuantityError, parse_quantity

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
NEGATIVE_MSG = "must be greater than or equal to 0"


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _duplicate(path: str, value: Any) -> FieldError:
    return FieldError(path, "Duplicate", "", value, True)


def _as_map(value: Any, path: str, errors: list[FieldError]) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        errors.append(invalid(path, value, "must be an object"))
        return {}
    return value


def _as_list(value: Any, path: str, errors: list[FieldError]) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append(invalid(path, value, "must be a list"))
        return []
    return value


def _objects(value: Any, path: str, errors: list[FieldError]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The items of a list of objects with their field paths; a non-object item is an error and skipped."""
    for index, item in enumerate(_as_list(value, path, errors)):
        if isinstance(item, Mapping):
            yield f"{path}[{index}]", item
        else:
            errors.append(invalid(f"{path}[{index}]", item, "must be an object"))


def _as_str(value: Any, path: str, errors: list[FieldError]) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.append(invalid(path, value, "must be a string"))
        return ""
    return value


def validate_pod_template(template: Any, path: str) -> list[FieldError]:
    """Validate a PodTemplateSpec mapping at `path` (e.g. "spec.template"); [] when valid."""
    errors: list[FieldError] = []
    template = _as_map(template, path, errors)
    if errors:
        return errors
    metadata = _as_map(template.get("metadata"), f"{path}.metadata", errors)
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
    if grace is not None and (not _is_int(grace) or grace < 0):
        errors.append(invalid(f"{path}.terminationGracePeriodSeconds", grace, NEGATIVE_MSG))
    volumes = _validate_volumes(spec.get("volumes"), f"{path}.volumes", errors)
    raw_containers = spec.get("containers")
    containers = _as_list(raw_containers, f"{path}.containers", errors)
    if not containers and (raw_containers is None or isinstance(raw_containers, list)):
        errors.append(required(f"{path}.containers"))
    init_containers = _as_list(spec.get("initContainers"), f"{path}.initContainers", errors)
    names: set[str] = set()
    for group, items in (("containers", containers), ("initContainers", init_containers)):
        for index, container in enumerate(items):
            item_path = f"{path}.{group}[{index}]"
            if not isinstance(container, Mapping):
                errors.append(invalid(item_path, container, "must be an object"))
                continue
            errors.extend(_validate_container(container, volumes, item_path))
            name = container.get("name")
            if isinstance(name, str) or name is None:
                name = name or ""
                if name in names:
                    errors.append(_duplicate(f"{item_path}.name", name))
                elif name or group == "containers":
                    names.add(name)
    errors.extend(_check_enum(spec, "restartPolicy", RESTART_POLICIES, path))
    errors.extend(_check_enum(spec, "dnsPolicy", DNS_POLICIES, path))
    errors.extend(validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector"))
    if spec.get("dnsPolicy") == "None" and not spec.get("dnsConfig"):
        errors.append(required(f"{path}.dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None"))
    for key in ("serviceAccountName", "nodeName", "priorityClassName"):
        value = _as_str(spec.get(key), f"{path}.{key}", errors)
        if value:
            errors.extend(validate_dns1123_subdomain(value, f"{path}.{key}"))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and (not _is_int(deadline) or not 1 <= deadline <= MAX_INT32):
        errors.append(invalid(f"{path}.activeDeadlineSeconds", deadline, inclusive_range_error(1, MAX_INT32)))
    for key in ("hostname", "subdomain"):
        value = _as_str(spec.get(key), f"{path}.{key}", errors)
        if value:
            errors.extend(validate_dns1123_label(value, f"{path}.{key}"))
    for index, toleration in enumerate(_as_list(spec.get("tolerations"), f"{path}.tolerations", errors)):
        errors.extend(_validate_toleration(toleration, f"{path}.tolerations[{index}]"))
    return errors


def _check_enum(spec: Mapping[str, Any], key: str, allowed: tuple[str, ...], path: str) -> list[FieldError]:
    value = spec.get(key)
    if value is None or value == "" or value in allowed:
        return []
    return [not_supported(f"{path}.{key}", value, allowed)]


def _validate_volumes(value: Any, path: str, errors: list[FieldError]) -> set[str]:
    """Volume names must be unique DNS labels; returns the names mounts may refer to."""
    names: set[str] = set()
    for item, volume in _objects(value, path, errors):
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
            problems.append(_duplicate(name_path, name))
        if problems:
            errors.extend(problems)
        elif isinstance(name, str):
            names.add(name)
    return names


def _validate_container(container: Mapping[str, Any], volumes: set[str], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    name = container.get("name")
    if name is None or name == "":
        errors.append(required(f"{path}.name"))
    elif not isinstance(name, str):
        errors.append(invalid(f"{path}.name", name, "must be a string"))
    else:
        errors.extend(validate_dns1123_label(name, f"{path}.name"))
    image = container.get("image")
    if image is None or image == "":
        errors.append(required(f"{path}.image"))
    elif not isinstance(image, str):
        errors.append(invalid(f"{path}.image", image, "must be a string"))
    errors.extend(_check_enum(container, "terminationMessagePolicy", TERMINATION_MESSAGE_POLICIES, path))
    errors.extend(_validate_ports(container.get("ports"), f"{path}.ports"))
    errors.extend(_validate_env(container.get("env"), f"{path}.env"))
    errors.extend(_validate_mounts(container.get("volumeMounts"), volumes, f"{path}.volumeMounts"))
    errors.extend(_check_enum(container, "imagePullPolicy", PULL_POLICIES, path))
    errors.extend(_validate_resources(container.get("resources"), f"{path}.resources"))
    return errors


def _validate_ports(value: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    names: set[str] = set()
    for item, port in _objects(value, path, errors):
        name = _as_str(port.get("name"), f"{item}.name", errors)
        if name:
            messages = is_valid_port_name(name)
            errors.extend(invalid(f"{item}.name", name, msg) for msg in messages)
            if not messages and name in names:
                errors.append(_duplicate(f"{item}.name", name))
            names.add(name)
        for key in ("containerPort", "hostPort"):
            number = port.get(key)
            if number in (None, 0):
                if key == "containerPort":
                    errors.append(required(f"{item}.containerPort"))
            elif not _is_int(number):
                errors.append(invalid(f"{item}.{key}", number, inclusive_range_error(1, 65535)))
            else:
                errors.extend(invalid(f"{item}.{key}", number, msg) for msg in is_valid_port_num(number))
        protocol = port.get("protocol")
        if protocol not in (None, "") and protocol not in PORT_PROTOCOLS:
            errors.append(not_supported(f"{item}.protocol", protocol, PORT_PROTOCOLS))
    return errors


def _validate_env(value: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for item, var in _objects(value, path, errors):
        name = _as_str(var.get("name"), f"{item}.name", errors)
        if not name:
            errors.append(required(f"{item}.name"))
        errors.extend(invalid(f"{item}.name", name, msg) for msg in is_env_var_name(name))
    return errors


def _validate_mounts(value: Any, volumes: set[str], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    mount_points: set[str] = set()
    for item, mount in _objects(value, path, errors):
        name = _as_str(mount.get("name"), f"{item}.name", errors)
        if not name:
            errors.append(required(f"{item}.name"))
        if name not in volumes:
            errors.append(not_found(f"{item}.name", name))
        mount_path = _as_str(mount.get("mountPath"), f"{item}.mountPath", errors)
        if not mount_path:
            errors.append(required(f"{item}.mountPath"))
        if mount_path in mount_points:
            errors.append(invalid(f"{item}.mountPath", mount_path, "must be unique"))
        mount_points.add(mount_path)
    return errors


def _is_extended(resource: str) -> bool:
    return "/" in resource and "kubernetes.io/" not in resource


def _overcommit_allowed(resource: str) -> bool:
    return not _is_extended(resource) and not resource.startswith("hugepages-")


def _is_standard_container_resource(resource: str) -> bool:
    return resource in STANDARD_CONTAINER_RESOURCES or resource.startswith("hugepages-")


def _validate_resources(value: Any, path: str) -> list[FieldError]:
    """Names, quantity syntax and sign, and requests ≤ limits (== for extended resources)."""
    errors: list[FieldError] = []
    resources = _as_map(value, path, errors)
    parsed: dict[str, dict[str, Fraction]] = {"limits": {}, "requests": {}}
    for section in ("limits", "requests"):
        for key, quantity in _as_map(resources.get(section), f"{path}.{section}", errors).items():
            resource = str(key)
            key_path = f"{path}.{section}[{resource}]"
            errors.extend(invalid(key_path, resource, msg) for msg in is_qualified_name(resource))
            if "/" not in resource and not _is_standard_container_resource(resource):
                errors.append(invalid(key_path, resource, "must be a standard resource for containers"))
            try:
                amount = parse_quantity(quantity)
            except QuantityError as err:
                errors.append(invalid(key_path, quantity, err.reason))
                continue
            if amount < 0:
                errors.append(invalid(key_path, str(quantity), NEGATIVE_MSG))
            elif _is_extended(resource) and amount.denominator != 1:
                errors.append(invalid(key_path, str(quantity), "must be an integer"))
            parsed[section][resource] = amount
            if section == "requests":
                limit_text = _as_map(resources.get("limits"), path, []).get(key)
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


def _validate_toleration(toleration: Any, path: str) -> list[FieldError]:
    if not isinstance(toleration, Mapping):
        return [invalid(path, toleration, "must be an object")]
    errors: list[FieldError] = []
    key = _as_str(toleration.get("key"), f"{path}.key", errors)
    operator = toleration.get("operator") or ""
    value = _as_str(toleration.get("value"), f"{path}.value", errors)
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
