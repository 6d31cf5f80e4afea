"""One container of a pod template as Kubernetes validates it: name, image, ports, env, mounts, resources."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_broadcast.specs.field_errors import FieldError, duplicate, invalid, not_found, not_supported, required
from airflow_broadcast.specs.json_fields import as_str, enum_errors, is_int, objects
from airflow_broadcast.specs.name_rules import (
    inclusive_range_error,
    is_env_var_name,
    is_valid_port_name,
    is_valid_port_num,
    validate_dns1123_label,
)
from airflow_broadcast.specs.resource_validation import validate_resources

PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")


def validate_container(container: Mapping[str, Any], volumes: set[str], path: str) -> list[FieldError]:
    """The checks of core `validateContainers` for one container, in its order; `volumes` are the pod's."""
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
    errors.extend(enum_errors(container, "terminationMessagePolicy", TERMINATION_MESSAGE_POLICIES, path))
    errors.extend(_validate_ports(container.get("ports"), f"{path}.ports"))
    errors.extend(_validate_env(container.get("env"), f"{path}.env"))
    errors.extend(_validate_mounts(container.get("volumeMounts"), volumes, f"{path}.volumeMounts"))
    errors.extend(enum_errors(container, "imagePullPolicy", PULL_POLICIES, path))
    errors.extend(validate_resources(container.get("resources"), f"{path}.resources"))
    return errors


def _validate_ports(value: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    names: set[str] = set()
    for item, port in objects(value, path, errors):
        name = as_str(port.get("name"), f"{item}.name", errors)
        if name:
            messages = is_valid_port_name(name)
            errors.extend(invalid(f"{item}.name", name, msg) for msg in messages)
            if not messages and name in names:
                errors.append(duplicate(f"{item}.name", name))
            names.add(name)
        for key in ("containerPort", "hostPort"):
            number = port.get(key)
            if number in (None, 0):
                if key == "containerPort":
                    errors.append(required(f"{item}.containerPort"))
            elif not is_int(number):
                errors.append(invalid(f"{item}.{key}", number, inclusive_range_error(1, 65535)))
            else:
                errors.extend(invalid(f"{item}.{key}", number, msg) for msg in is_valid_port_num(number))
        protocol = port.get("protocol")
        if protocol not in (None, "") and protocol not in PORT_PROTOCOLS:
            errors.append(not_supported(f"{item}.protocol", protocol, PORT_PROTOCOLS))
    return errors


def _validate_env(value: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for item, var in objects(value, path, errors):
        name = as_str(var.get("name"), f"{item}.name", errors)
        if not name:
            errors.append(required(f"{item}.name"))
        errors.extend(invalid(f"{item}.name", name, msg) for msg in is_env_var_name(name))
    return errors


def _validate_mounts(value: Any, volumes: set[str], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    mount_points: set[str] = set()
    for item, mount in objects(value, path, errors):
        name = as_str(mount.get("name"), f"{item}.name", errors)
        if not name:
            errors.append(required(f"{item}.name"))
        if name not in volumes:
            errors.append(not_found(f"{item}.name", name))
        mount_path = as_str(mount.get("mountPath"), f"{item}.mountPath", errors)
        if not mount_path:
            errors.append(required(f"{item}.mountPath"))
        if mount_path in mount_points:
            errors.append(invalid(f"{item}.mountPath", mount_path, "must be unique"))
        mount_points.add(mount_path)
    return errors
