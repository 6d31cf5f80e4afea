"""TFJob replica specs: counts, restart policies, the `tensorflow` container and its port, the pod template."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_broadcast.specs.field_errors import FieldError, duplicate, forbidden, invalid, not_supported, required
from airflow_broadcast.specs.json_fields import check_count, json_type_name
from airflow_broadcast.specs.pod_template import validate_pod_template
from airflow_broadcast.specs.tf_job.spec import (
    CHIEF_OR_MASTER,
    CONTAINER_NAME,
    DEFAULT_PORT_NAME,
    REPLICA_TYPES,
    RESTART_POLICIES,
    normalize_replica_type,
)

REPLICAS_PATH = "spec.tfReplicaSpecs"


def check_replica_specs(specs: Any, strict: bool, errors: list[FieldError]) -> dict[str, int]:
    """Checks every replica type; returns canonical type → replicas for the types that parsed."""
    if specs is None:
        errors.append(required(REPLICAS_PATH, "must be required"))
        return {}
    if not isinstance(specs, Mapping):
        errors.append(invalid(REPLICAS_PATH, json_type_name(specs), "must be an object"))
        return {}
    counts: dict[str, int] = {}
    chief_or_master = 0
    for raw_key, replica in specs.items():
        key = str(raw_key)
        canonical = normalize_replica_type(key)
        path = f"{REPLICAS_PATH}[{key}]"
        if canonical in counts:
            errors.append(duplicate(path, key))
        if strict and canonical not in REPLICA_TYPES:
            errors.append(not_supported(REPLICAS_PATH, key, REPLICA_TYPES))
        if canonical in CHIEF_OR_MASTER:
            chief_or_master += 1
        if replica is not None and not isinstance(replica, Mapping):
            errors.append(invalid(path, json_type_name(replica), "must be an object"))
            continue
        counts[canonical] = _check_replica(canonical, replica or {}, path, strict, errors)
    if chief_or_master > 1:
        errors.append(forbidden(REPLICAS_PATH, "must not have more than 1 Chief or Master role"))
    return counts


def _core_pod_template_errors(template: Any, path: str) -> list[FieldError]:
    """Kubernetes PodTemplateSpec rules for one replica template, so a bad pod fails before anything is created.

    Upstream validates nothing beyond the TFJob rules (pods are only checked when they are
    created); an empty container list is already reported by V5/V7, so it is not repeated.
    """
    spec = template.get("spec") if isinstance(template, Mapping) else None
    if not isinstance(spec, Mapping) or not spec.get("containers"):
        return []
    covered = (".restartPolicy", ".image")  # TFJob rules V6 and the replica restartPolicy own these
    return [e for e in validate_pod_template(template, path) if not e.path.endswith(covered)]


def _check_replica(canonical: str, replica: Mapping[str, Any], path: str, strict: bool,
                   errors: list[FieldError]) -> int:
    replicas = check_count(replica.get("replicas"), f"{path}.replicas", errors)
    if replicas is not None and replicas > 1 and canonical in CHIEF_OR_MASTER:
        errors.append(invalid(f"{path}.replicas", replicas, f"must be no more than 1 for a {canonical} replica"))
    policy = replica.get("restartPolicy")
    if policy is not None and policy != "":
        if not isinstance(policy, str):
            errors.append(invalid(f"{path}.restartPolicy", policy, "must be a string"))
        elif strict and policy not in RESTART_POLICIES:
            errors.append(not_supported(f"{path}.restartPolicy", policy, RESTART_POLICIES))
    template = replica.get("template")
    containers = _containers(template, f"{path}.template", errors)
    _check_containers(containers, f"{path}.template.spec.containers", errors)
    if isinstance(template, Mapping):
        errors.extend(_core_pod_template_errors(template, f"{path}.template"))
    return 1 if replicas is None else replicas


def _containers(template: Any, path: str, errors: list[FieldError]) -> list[Any]:
    if template is None:
        return []
    if not isinstance(template, Mapping):
        errors.append(invalid(path, json_type_name(template), "must be an object"))
        return []
    pod_spec = template.get("spec")
    if pod_spec is None:
        return []
    if not isinstance(pod_spec, Mapping):
        errors.append(invalid(f"{path}.spec", json_type_name(pod_spec), "must be an object"))
        return []
    containers = pod_spec.get("containers")
    if containers is not None and not isinstance(containers, list):
        errors.append(invalid(f"{path}.spec.containers", json_type_name(containers), "must be a list"))
        return []
    return containers or []


def _check_containers(containers: list[Any], path: str, errors: list[FieldError]) -> None:
    """V5 (none), V6 (image), V7 (a `tensorflow` container); no containers gives V5 and V7."""
    if not containers:
        errors.append(required(path, "must be specified"))
    has_tensorflow = False
    for index, container in enumerate(containers):
        if not isinstance(container, Mapping):
            errors.append(invalid(f"{path}[{index}]", json_type_name(container), "must be an object"))
            continue
        image = container.get("image")
        if not image or not isinstance(image, str):
            errors.append(required(f"{path}[{index}].image", "must be required"))
        if container.get("name") == CONTAINER_NAME:
            has_tensorflow = True
            _check_default_port(container.get("ports"), f"{path}[{index}].ports", errors)
    if not has_tensorflow:
        errors.append(required(path, f"must have at least one container with name {CONTAINER_NAME}"))


def _check_default_port(ports: Any, path: str, errors: list[FieldError]) -> None:
    """TF_CONFIG and the Services read `tfjob-port`, so its number must be usable."""
    if ports is None:
        return
    if not isinstance(ports, list):
        errors.append(invalid(path, json_type_name(ports), "must be a list"))
        return
    for index, port in enumerate(ports):
        if isinstance(port, Mapping) and port.get("name") == DEFAULT_PORT_NAME:
            number = port.get("containerPort")
            if isinstance(number, bool) or not isinstance(number, int) or not 0 < number < 65536:
                errors.append(invalid(f"{path}[{index}].containerPort", number,
                                      "must be between 1 and 65535, inclusive"))
