"""TFJob validation: the upstream webhook rules with their exact messages, plus stricter checks.

Upstream (`tfjob_webhook.go`, tfjob.md §1.5) checks the name, managedBy and the
containers, and panics on a null replica spec. Here every rule reports a
FieldError instead, and the gaps upstream leaves open (replica counts, enum
values, Chief/Master count) are rejected too (B12, B13). Names are accepted
exactly as upstream accepts them; one whose Service names would be too long
only warns (`tf_job_warnings`). Replica specs are checked in `replica_validation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_broadcast.specs.api_types import MAX_INT32, MAX_INT64
from airflow_broadcast.specs.field_errors import FieldError, InvalidSpecError, invalid, not_supported, required
from airflow_broadcast.specs.field_schema import POD_TEMPLATE, TYPE_META, MapOf, check_fields, known_fields
from airflow_broadcast.specs.json_fields import check_bool, check_count, json_type_name, merge_errors
from airflow_broadcast.specs.manifest_limits import ManifestError, key_path
from airflow_broadcast.specs.manifest_text import parse_manifest
from airflow_broadcast.specs.name_rules import (
    is_dns1035_label,
    validate_annotations,
    validate_dns1123_label,
    validate_labels,
)
from airflow_broadcast.specs.quantities import QuantityError, parse_quantity
from airflow_broadcast.specs.tf_job.replica_validation import check_replica_specs, replica_warnings
from airflow_broadcast.specs.tf_job.spec import (
    API_VERSION,
    CLEAN_POD_POLICIES,
    KIND,
    MANAGED_BY_VALUES,
    MAX_NAME_LENGTH,
    SUCCESS_POLICIES,
)

TF_JOB_FIELDS = {**TYPE_META, "spec": {
    **known_fields("successPolicy", "enableDynamicWorker"),
    "runPolicy": {**known_fields("cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit",
                                 "suspend", "managedBy"),
                  "schedulingPolicy": known_fields("minAvailable", "queue", "minResources", "priorityClass",
                                                   "scheduleTimeoutSeconds")},
    "tfReplicaSpecs": MapOf({**known_fields("replicas", "restartPolicy"), "template": POD_TEMPLATE}),
}}
"""The CRD's fields (tfjobs.kubeflow.org v1), for unknown-field warnings and type checks."""


def load_manifest(manifest: Mapping[str, Any] | str, warnings: list[str] | None = None) -> dict[str, Any]:
    """A JSON-shaped copy of a mapping or of YAML/JSON text, decoded within the manifest bounds.

    Raises InvalidSpecError naming the field (`<manifest>` for the text as a whole);
    duplicate keys are added to `warnings`.
    """
    try:
        return parse_manifest(manifest, what=f"{KIND} manifest", warnings=warnings)
    except ManifestError as exc:
        raise InvalidSpecError(KIND, "", [FieldError(exc.path or "<manifest>", "Invalid", exc.reason)]) from None


def validate_tf_job(manifest: Mapping[str, Any] | str, *, namespace: str | None = None,
                    strict: bool = True, warnings: list[str] | None = None) -> list[FieldError]:
    """Every problem of a TFJob manifest at once (B1-B14); [] when valid.

    `strict=False` accepts what upstream accepts but this provider rejects by default:
    unknown replica types and unknown restartPolicy/cleanPodPolicy/successPolicy values.
    Unknown and duplicate fields, a job that can never start a pod, and with `strict=False` each value
    that strict mode would refuse, are added to `warnings`.
    """
    try:
        loaded = load_manifest(manifest, warnings)
    except InvalidSpecError as exc:
        return list(exc.errors)
    errors: list[FieldError] = []
    _check_identity(loaded, errors)
    _check_metadata(loaded.get("metadata"), namespace, errors)
    spec = loaded.get("spec")
    if spec is not None and not isinstance(spec, Mapping):
        errors.append(invalid("spec", json_type_name(spec), "must be an object"))
        spec = None
    spec = spec or {}
    _check_run_policy(spec.get("runPolicy"), strict, errors)
    success = spec.get("successPolicy")
    if success is not None:
        if not isinstance(success, str):
            errors.append(invalid("spec.successPolicy", success, "must be a string"))
        elif strict and success not in SUCCESS_POLICIES:
            errors.append(not_supported("spec.successPolicy", success, SUCCESS_POLICIES))
    check_bool(spec.get("enableDynamicWorker"), "spec.enableDynamicWorker", errors)
    replicas = check_replica_specs(spec.get("tfReplicaSpecs"), strict, errors)
    type_errors, unknown = check_fields(loaded, TF_JOB_FIELDS)
    if warnings is not None:
        warnings.extend(unknown)
        warnings.extend(replica_warnings(replicas))
        if not strict:  # B13's compat mode: what strict mode refuses is accepted, but said
            lenient = {str(e) for e in errors}
            warnings.extend(f"accepted as upstream accepts it (strict=False): {e}"
                            for e in validate_tf_job(loaded, namespace=namespace) if str(e) not in lenient)
    return merge_errors(errors, type_errors)


def tf_job_warnings(manifest: Mapping[str, Any] | str) -> list[str]:
    """What upstream accepts but cannot fully run: a Service name `<name>-<type>-<index>` over 63 characters.

    Upstream validates only the job name (a DNS-1035 label, V1), so a long name is accepted and
    its Services are refused by the API server (issue #1101). This provider accepts the same
    names and does the same (`FailedCreateService` warnings, the pods still run), but says so first.
    """
    loaded = load_manifest(manifest)
    metadata, spec = loaded.get("metadata"), loaded.get("spec")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not isinstance(name, str) or not isinstance(spec, Mapping):
        return []
    replicas = check_replica_specs(spec.get("tfReplicaSpecs"), False, [])
    longest = max((f"{name}-{t.lower()}-{max(n - 1, 0)}" for t, n in replicas.items()), key=len, default="")
    if len(longest) <= MAX_NAME_LENGTH:
        return []
    allowed = MAX_NAME_LENGTH - (len(longest) - len(name))
    return [f'metadata.name: the Service name "{longest}" is longer than {MAX_NAME_LENGTH} characters, so the '
            "API server refuses it and the Services of this job are not created (FailedCreateService, as with "
            "the training-operator, kubeflow/training-operator#1101): the pods run, but the TF_CONFIG host names "
            f"do not resolve. Replicas that talk to each other need a name of at most {max(allowed, 1)} characters"]


def validate_tf_job_update(new: Mapping[str, Any] | str, old: Mapping[str, Any], *,
                           namespace: str | None = None, strict: bool = True) -> list[FieldError]:
    """`validate_tf_job` plus the update-only immutability rules (B10, B11)."""
    errors = validate_tf_job(new, namespace=namespace, strict=strict)
    try:
        loaded = load_manifest(new)
    except InvalidSpecError:
        return errors
    return errors + _immutable_field_errors(loaded, old)


def _immutable_field_errors(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
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


def _run_policy_of(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = manifest.get("spec")
    run = spec.get("runPolicy") if isinstance(spec, Mapping) else None
    return run if isinstance(run, Mapping) else {}


def _check_identity(manifest: Mapping[str, Any], errors: list[FieldError]) -> None:
    for key, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
        value = manifest.get(key)
        if value is None:
            errors.append(required(key, f"must be {expected!r}"))
        elif value != expected:
            errors.append(not_supported(key, value, [expected]))


def _check_metadata(metadata: Any, namespace: str | None, errors: list[FieldError]) -> None:
    """V1: the name is a DNS-1035 label of at most 63 characters, the only name rule upstream has."""
    if metadata is not None and not isinstance(metadata, Mapping):
        errors.append(invalid("metadata", json_type_name(metadata), "must be an object"))
        metadata = None
    metadata = metadata or {}
    name = metadata.get("name")
    if name is None or name == "":
        errors.append(required("metadata.name", "name is required: child pods and services are named after it"))
    elif not isinstance(name, str):
        errors.append(invalid("metadata.name", name, "must be a string"))
    elif problems := is_dns1035_label(name):
        errors.append(invalid("metadata.name", name, f"should match: {','.join(problems)}"))
    ns = namespace if namespace is not None else metadata.get("namespace")
    if ns is not None and not isinstance(ns, str):
        errors.append(invalid("metadata.namespace", ns, "must be a string"))
    elif ns is not None:
        errors.extend(validate_dns1123_label(ns, "metadata.namespace"))
    errors.extend(validate_labels(metadata.get("labels"), "metadata.labels"))
    errors.extend(validate_annotations(metadata.get("annotations"), "metadata.annotations"))


def _check_run_policy(run: Any, strict: bool, errors: list[FieldError]) -> None:
    path = "spec.runPolicy"
    if run is None:
        return
    if not isinstance(run, Mapping):
        errors.append(invalid(path, json_type_name(run), "must be an object"))
        return
    policy = run.get("cleanPodPolicy")
    if policy is not None:
        if not isinstance(policy, str):
            errors.append(invalid(f"{path}.cleanPodPolicy", policy, "must be a string"))
        elif strict and policy not in CLEAN_POD_POLICIES:
            errors.append(not_supported(f"{path}.cleanPodPolicy", policy, CLEAN_POD_POLICIES))
    for key, maximum in (("ttlSecondsAfterFinished", MAX_INT32), ("activeDeadlineSeconds", MAX_INT64),
                         ("backoffLimit", MAX_INT32)):
        check_count(run.get(key), f"{path}.{key}", errors, maximum)
    check_bool(run.get("suspend"), f"{path}.suspend", errors)
    managed_by = run.get("managedBy")
    if managed_by is not None and managed_by not in MANAGED_BY_VALUES:
        errors.append(not_supported(f"{path}.managedBy", managed_by, MANAGED_BY_VALUES))
    scheduling = run.get("schedulingPolicy")
    if scheduling is not None and not isinstance(scheduling, Mapping):
        errors.append(invalid(f"{path}.schedulingPolicy", json_type_name(scheduling), "must be an object"))
    elif scheduling is not None:
        _check_scheduling_policy(scheduling, f"{path}.schedulingPolicy", errors)


def _check_scheduling_policy(policy: Mapping[str, Any], path: str, errors: list[FieldError]) -> None:
    """The types a PodGroup needs (gang scheduling): counts, names, and a map of quantities."""
    for key in ("minAvailable", "scheduleTimeoutSeconds"):
        check_count(policy.get(key), f"{path}.{key}", errors)
    for key in ("queue", "priorityClass"):
        if policy.get(key) is not None and not isinstance(policy[key], str):
            errors.append(invalid(f"{path}.{key}", policy[key], "must be a string"))
    resources = policy.get("minResources")
    if resources is not None and not isinstance(resources, Mapping):
        message = "must be a map of resource quantities"
        errors.append(invalid(f"{path}.minResources", json_type_name(resources), message))
    elif resources is not None:
        for name, value in resources.items():
            try:
                parse_quantity(value)
            except QuantityError as err:
                errors.append(invalid(key_path(f"{path}.minResources", str(name)), value, err.reason))
