"""TFJob replica specs: counts, restart policies, the `tensorflow` container and its port, the pod template.

Replica counts are int32 upstream, but each pod's TF_CONFIG lists every replica, so a job's pods
hold replicas² bytes of it in the cluster and in any cache of them. Passes build at most a batch
of pods each (see `reconcilers/tf_job`), yet this provider still runs at most `MAX_REPLICAS`
replicas per job and at most `MAX_POD_VALUES` template values per pass (a documented deviation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_broadcast.specs.field_errors import FieldError, duplicate, forbidden, invalid, not_supported, required
from airflow_broadcast.specs.json_fields import check_count, json_type_name
from airflow_broadcast.specs.manifest_limits import count_values, key_path
from airflow_broadcast.specs.pod_template import validate_pod_template
from airflow_broadcast.specs.tf_job.spec import (
    CHIEF_OR_MASTER,
    CONTAINER_NAME,
    DEFAULT_PORT_NAME,
    REPLICA_TYPES,
    RESTART_POLICIES,
    WORKER,
    normalize_replica_type,
)

REPLICAS_PATH = "spec.tfReplicaSpecs"
MAX_REPLICAS = 2000
MAX_POD_VALUES = 1_000_000


def check_replica_specs(specs: Any, strict: bool, errors: list[FieldError]) -> dict[str, int]:
    """Checks every replica type; returns canonical type → replicas for the types that parsed."""
    if specs is None:
        errors.append(required(REPLICAS_PATH, "must be required"))
        return {}
    if not isinstance(specs, Mapping):
        errors.append(invalid(REPLICAS_PATH, json_type_name(specs), "must be an object"))
        return {}
    counts: dict[str, int] = {}
    chief_or_master = pod_values = 0
    for raw_key, replica in specs.items():
        key = str(raw_key)
        canonical = normalize_replica_type(key)
        path = key_path(REPLICAS_PATH, key)
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
        pod_values += counts[canonical] * count_values((replica or {}).get("template"))
    if chief_or_master > 1:
        errors.append(forbidden(REPLICAS_PATH, "must not have more than 1 Chief or Master role"))
    _check_work(counts, pod_values, errors)
    return counts


def _check_work(counts: Mapping[str, int], pod_values: int, errors: list[FieldError]) -> None:
    """The provider's bounds on what one pass builds (see the module docstring)."""
    total = sum(counts.values())
    if total > MAX_REPLICAS:
        errors.append(invalid(REPLICAS_PATH, total, (
            f"the job has {total} replicas in total; this provider runs at most {MAX_REPLICAS} per TFJob "
            "(every pod's TF_CONFIG lists every replica)")))
    elif pod_values > MAX_POD_VALUES:
        errors.append(invalid(REPLICAS_PATH, pod_values, (
            f"the pods of this job would hold {pod_values} values (replicas times template size); this provider "
            f"builds at most {MAX_POD_VALUES} per TFJob: use fewer replicas or a smaller template")))


def replica_warnings(counts: Mapping[str, int]) -> list[str]:
    """Jobs upstream accepts but which never run a pod to decide their outcome (tfjob.md §2.8.2)."""
    deciding = [t for t in counts if t in CHIEF_OR_MASTER] or [t for t in counts if t == WORKER]
    if not deciding:
        return [f"{REPLICAS_PATH} has no Chief, Master or Worker: like training-operator, the job never succeeds "
                "(it ends only by failing, by activeDeadlineSeconds, or when deleted)"]
    return [f"{key_path(REPLICAS_PATH, t)}.replicas is 0: like training-operator, the job succeeds at once "
            "without waiting for any pod" for t in deciding if counts[t] == 0]


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
    if replicas is not None and replicas > MAX_REPLICAS:
        errors.append(invalid(f"{path}.replicas", replicas, (
            f"must be no more than {MAX_REPLICAS}: this provider runs at most {MAX_REPLICAS} replicas per TFJob "
            "(every pod's TF_CONFIG lists every replica)")))
        replicas = None
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
