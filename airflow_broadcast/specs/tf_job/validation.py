"""TFJob validation: the upstream webhook rules with their exact messages, plus stricter checks.

Upstream (`tfjob_webhook.go`, tfjob.md §1.5) checks the name, managedBy and the
containers, and panics on a null replica spec. Here every rule reports a
FieldError instead, and the gaps upstream leaves open (replica counts, enum
values, child-name length, Chief/Master count) are rejected too (B12, B13).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_broadcast.specs.field_errors import FieldError, forbidden, invalid, not_supported, required
from airflow_broadcast.specs.name_rules import is_dns1035_label, validate_dns1123_label
from airflow_broadcast.specs.tf_job.spec import (
    API_VERSION,
    CHIEF_OR_MASTER,
    CLEAN_POD_POLICIES,
    CONTAINER_NAME,
    DEFAULT_PORT_NAME,
    KIND,
    MANAGED_BY_VALUES,
    MAX_NAME_LENGTH,
    REPLICA_TYPES,
    RESTART_POLICIES,
    SUCCESS_POLICIES,
    normalize_replica_type,
)

NON_NEGATIVE_MESSAGE = "must be greater than or equal to 0"
REPLICAS_PATH = "spec.tfReplicaSpecs"


def validate_manifest(manifest: Mapping[str, Any], *, namespace: str | None = None,
                      strict: bool = True) -> list[FieldError]:
    errors: list[FieldError] = []
    _check_identity(manifest, errors)
    name = _check_metadata(manifest.get("metadata"), namespace, errors)
    spec = manifest.get("spec")
    if spec is not None and not isinstance(spec, Mapping):
        errors.append(invalid("spec", _type_name(spec), "must be an object"))
        spec = None
    spec = spec or {}
    _check_run_policy(spec.get("runPolicy"), strict, errors)
    success = spec.get("successPolicy")
    if success is not None:
        if not isinstance(success, str):
            errors.append(invalid("spec.successPolicy", success, "must be a string"))
        elif strict and success not in SUCCESS_POLICIES:
            errors.append(not_supported("spec.successPolicy", success, SUCCESS_POLICIES))
    _check_bool(spec, "enableDynamicWorker", "spec.enableDynamicWorker", errors)
    replicas = _check_replica_specs(spec.get("tfReplicaSpecs"), strict, errors)
    if name is not None:
        _check_child_names(name, replicas, errors)
    return errors


def validate_immutable_fields(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """Update-only rules: managedBy is immutable (V2), so is a set schedulingPolicy.queue (V9, CEL)."""
    new_run, old_run = _run_policy_of(new), _run_policy_of(old)
    errors = []
    if new_run.get("managedBy") != old_run.get("managedBy"):
        errors.append(invalid("spec.runPolicy.managedBy", new_run.get("managedBy"), "field is immutable"))
    old_sched, new_sched = old_run.get("schedulingPolicy"), new_run.get("schedulingPolicy")
    old_queue = old_sched.get("queue") if isinstance(old_sched, Mapping) else None
    new_queue = new_sched.get("queue") if isinstance(new_sched, Mapping) else None
    if old_queue is not None and new_queue != old_queue:
        errors.append(FieldError("spec.runPolicy.schedulingPolicy", "Invalid",
                                 "spec.runPolicy.schedulingPolicy.queue is immutable", "object", True))
    return errors


def _core_pod_template_errors(template: Any, path: str) -> list[FieldError]:
    """Kubernetes PodTemplateSpec rules for one replica template, so a bad pod fails before anything is created.

    Upstream validates nothing beyond the TFJob rules (pods are only checked when they are
    created); an empty container list is already reported by V5/V7, so it is not repeated.
    """
    from airflow_broadcast.specs.pod_template import validate_pod_template

    spec = template.get("spec") if isinstance(template, Mapping) else None
    if not isinstance(spec, Mapping) or not spec.get("containers"):
        return []
    covered = (".restartPolicy", ".image")  # TFJob rules V6 and the replica restartPolicy own these
    return [e for e in validate_pod_template(template, path) if not e.path.endswith(covered)]


def _run_policy_of(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = manifest.get("spec")
    run = spec.get("runPolicy") if isinstance(spec, Mapping) else None
    return run if isinstance(run, Mapping) else {}


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _check_identity(manifest: Mapping[str, Any], errors: list[FieldError]) -> None:
    for key, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
        value = manifest.get(key)
        if value is None:
            errors.append(required(key, f"must be {expected!r}"))
        elif value != expected:
            errors.append(not_supported(key, value, [expected]))


def _check_metadata(metadata: Any, namespace: str | None, errors: list[FieldError]) -> str | None:
    """Returns the name when it is a valid DNS-1035 label (so child names can be checked)."""
    if metadata is not None and not isinstance(metadata, Mapping):
        errors.append(invalid("metadata", _type_name(metadata), "must be an object"))
        metadata = None
    metadata = metadata or {}
    name = metadata.get("name")
    valid_name: str | None = None
    if name is None or name == "":
        errors.append(required("metadata.name", "name is required: child pods and services are named after it"))
    elif not isinstance(name, str):
        errors.append(invalid("metadata.name", name, "must be a string"))
    elif problems := is_dns1035_label(name):
        errors.append(invalid("metadata.name", name, f"should match: {','.join(problems)}"))
    else:
        valid_name = name
    ns = namespace if namespace is not None else metadata.get("namespace")
    if ns is not None and not isinstance(ns, str):
        errors.append(invalid("metadata.namespace", ns, "must be a string"))
    elif ns is not None:
        errors.extend(validate_dns1123_label(ns, "metadata.namespace"))
    for key in ("labels", "annotations"):
        value = metadata.get(key)
        if value is not None and not (isinstance(value, Mapping) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items())):
            errors.append(invalid(f"metadata.{key}", _type_name(value), "must be a map of string to string"))
    return valid_name


def _check_bool(container: Mapping[str, Any], key: str, path: str, errors: list[FieldError]) -> None:
    value = container.get(key)
    if value is not None and not isinstance(value, bool):
        errors.append(invalid(path, value, "must be a boolean"))


def _check_count(value: Any, path: str, errors: list[FieldError]) -> int | None:
    """An optional non-negative integer field; returns it when usable."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append(invalid(path, value, "must be an integer"))
        return None
    if value < 0:
        errors.append(invalid(path, value, NON_NEGATIVE_MESSAGE))
        return None
    return value


def _check_run_policy(run: Any, strict: bool, errors: list[FieldError]) -> None:
    path = "spec.runPolicy"
    if run is None:
        return
    if not isinstance(run, Mapping):
        errors.append(invalid(path, _type_name(run), "must be an object"))
        return
    policy = run.get("cleanPodPolicy")
    if policy is not None:
        if not isinstance(policy, str):
            errors.append(invalid(f"{path}.cleanPodPolicy", policy, "must be a string"))
        elif strict and policy not in CLEAN_POD_POLICIES:
            errors.append(not_supported(f"{path}.cleanPodPolicy", policy, CLEAN_POD_POLICIES))
    for key in ("ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit"):
        _check_count(run.get(key), f"{path}.{key}", errors)
    _check_bool(run, "suspend", f"{path}.suspend", errors)
    managed_by = run.get("managedBy")
    if managed_by is not None and managed_by not in MANAGED_BY_VALUES:
        errors.append(not_supported(f"{path}.managedBy", managed_by, MANAGED_BY_VALUES))
    scheduling = run.get("schedulingPolicy")
    if scheduling is not None and not isinstance(scheduling, Mapping):
        errors.append(invalid(f"{path}.schedulingPolicy", _type_name(scheduling), "must be an object"))
    elif scheduling is not None:
        _check_scheduling_policy(scheduling, f"{path}.schedulingPolicy", errors)


def _check_scheduling_policy(policy: Mapping[str, Any], path: str, errors: list[FieldError]) -> None:
    """The types a PodGroup needs (gang scheduling): counts, names, and a map of quantities."""
    for key in ("minAvailable", "scheduleTimeoutSeconds"):
        _check_count(policy.get(key), f"{path}.{key}", errors)
    for key in ("queue", "priorityClass"):
        if policy.get(key) is not None and not isinstance(policy[key], str):
            errors.append(invalid(f"{path}.{key}", policy[key], "must be a string"))
    resources = policy.get("minResources")
    if resources is not None and not isinstance(resources, Mapping):
        errors.append(invalid(f"{path}.minResources", _type_name(resources), "must be a map of resource quantities"))
    elif resources is not None:
        for name, value in resources.items():
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                errors.append(invalid(f"{path}.minResources[{name}]", value, "must be a resource quantity"))


def _check_replica_specs(specs: Any, strict: bool, errors: list[FieldError]) -> dict[str, int]:
    """Checks every replica type; returns canonical type → replicas for the types that parsed."""
    if specs is None:
        errors.append(required(REPLICAS_PATH, "must be required"))
        return {}
    if not isinstance(specs, Mapping):
        errors.append(invalid(REPLICAS_PATH, _type_name(specs), "must be an object"))
        return {}
    counts: dict[str, int] = {}
    chief_or_master = 0
    for raw_key, replica in specs.items():
        key = str(raw_key)
        canonical = normalize_replica_type(key)
        path = f"{REPLICAS_PATH}[{key}]"
        if canonical in counts:
            errors.append(FieldError(path, "Duplicate", "", key, True))
        if strict and canonical not in REPLICA_TYPES:
            errors.append(not_supported(REPLICAS_PATH, key, REPLICA_TYPES))
        if canonical in CHIEF_OR_MASTER:
            chief_or_master += 1
        if replica is not None and not isinstance(replica, Mapping):
            errors.append(invalid(path, _type_name(replica), "must be an object"))
            continue
        counts[canonical] = _check_replica(canonical, replica or {}, path, strict, errors)
    if chief_or_master > 1:
        errors.append(forbidden(REPLICAS_PATH, "must not have more than 1 Chief or Master role"))
    return counts


def _check_replica(canonical: str, replica: Mapping[str, Any], path: str, strict: bool,
                   errors: list[FieldError]) -> int:
    replicas = _check_count(replica.get("replicas"), f"{path}.replicas", errors)
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
        errors.append(invalid(path, _type_name(template), "must be an object"))
        return []
    pod_spec = template.get("spec")
    if pod_spec is None:
        return []
    if not isinstance(pod_spec, Mapping):
        errors.append(invalid(f"{path}.spec", _type_name(pod_spec), "must be an object"))
        return []
    containers = pod_spec.get("containers")
    if containers is not None and not isinstance(containers, list):
        errors.append(invalid(f"{path}.spec.containers", _type_name(containers), "must be a list"))
        return []
    return containers or []


def _check_containers(containers: list[Any], path: str, errors: list[FieldError]) -> None:
    """V5 (none), V6 (image), V7 (a `tensorflow` container); no containers gives V5 and V7."""
    if not containers:
        errors.append(required(path, "must be specified"))
    has_tensorflow = False
    for index, container in enumerate(containers):
        if not isinstance(container, Mapping):
            errors.append(invalid(f"{path}[{index}]", _type_name(container), "must be an object"))
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
        errors.append(invalid(path, _type_name(ports), "must be a list"))
        return
    for index, port in enumerate(ports):
        if isinstance(port, Mapping) and port.get("name") == DEFAULT_PORT_NAME:
            number = port.get("containerPort")
            if isinstance(number, bool) or not isinstance(number, int) or not 0 < number < 65536:
                errors.append(invalid(f"{path}[{index}].containerPort", number,
                                      "must be between 1 and 65535, inclusive"))


def _check_child_names(name: str, replicas: Mapping[str, int], errors: list[FieldError]) -> None:
    """B3 / issue #1101: `<name>-<type>-<maxIndex>` names the Service, so it must fit in 63 characters."""
    longest = max((f"{name}-{t.lower()}-{max(n - 1, 0)}" for t, n in replicas.items()), key=len, default="")
    if len(longest) > MAX_NAME_LENGTH:
        allowed = MAX_NAME_LENGTH - (len(longest) - len(name))
        errors.append(invalid(
            "metadata.name", name,
            f"must be no more than {max(allowed, 0)} characters: the child pod and service name "
            f"\"{longest}\" must be a DNS-1035 label of at most {MAX_NAME_LENGTH} characters"))
