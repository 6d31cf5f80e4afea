"""BroadcastJob admission: OpenKruise's webhook rules (same paths, messages and order), then ours.

The checks upstream lacks ([X] rules V13-V17) reject a job which would misbehave
before anything is created. The pod template is checked as core Kubernetes checks it.
Every name upstream accepts (up to 63 characters) is accepted: pod names shorten a long
job name to stay within 63 characters (V19), as upstream's `generateName` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_broadcast.specs.api_types import MAX_INT32, MAX_INT64
from airflow_broadcast.specs.broadcast_job.node_selection import FIELDS as SELECTION_FIELDS
from airflow_broadcast.specs.broadcast_job.node_selection import validate_node_selection
from airflow_broadcast.specs.broadcast_job.pod_failure_policy import (
    POD_FAILURE_POLICY_FIELDS,
    validate_pod_failure_policy,
)
from airflow_broadcast.specs.broadcast_job.spec import (
    ALLOWED_RESTART_POLICIES,
    API_VERSIONS,
    COMPLETION_NEVER,
    COMPLETION_POLICY_TYPES,
    FAILURE_POLICY_TYPES,
    JOB_NAME_LABEL,
    JOB_UID_LABEL,
    KIND,
    NAME_FMT,
    NAME_MAX_LENGTH,
    NAME_MSG,
    RESERVED_LABELS,
)
from airflow_broadcast.specs.broadcast_job.waves import WAVES_FIELDS, validate_waves
from airflow_broadcast.specs.field_errors import FieldError, forbidden, invalid, not_supported, required
from airflow_broadcast.specs.field_schema import POD_TEMPLATE, TYPE_META, check_fields, known_fields
from airflow_broadcast.specs.int_or_percent import validate_int_or_percent
from airflow_broadcast.specs.json_fields import check_bool, is_int, mapping_or_empty, merge_errors
from airflow_broadcast.specs.name_rules import (
    DNS1123_SUBDOMAIN_MAX,
    is_dns1123_subdomain,
    max_len_error,
    regex_errors,
    validate_annotations,
    validate_dns1123_label,
    validate_labels,
)
from airflow_broadcast.specs.pod_template import validate_pod_template

BROADCAST_JOB_FIELDS = {**TYPE_META, "spec": {
    **known_fields("parallelism", "paused", *SELECTION_FIELDS),  # the node selection is ours (N15)
    **known_fields("rerunOnTemplateChange"),  # ours (V18)
    "podFailurePolicy": POD_FAILURE_POLICY_FIELDS,  # ours (F16)
    "waves": WAVES_FIELDS,  # ours (R16)
    "template": POD_TEMPLATE,
    "completionPolicy": known_fields("type", "activeDeadlineSeconds", "ttlSecondsAfterFinished"),
    # maxFailedNodes and backoffLimitPerNode are ours (F17, F15)
    "failurePolicy": known_fields("type", "restartLimit", "maxFailedNodes", "backoffLimitPerNode"),
}}
"""The CRD's fields (broadcastjobs.apps.kruise.io), and the core PodTemplateSpec it embeds."""


def validate_broadcast_job(manifest: Mapping[str, Any], *, namespace: str | None = None,
                           warnings: list[str] | None = None) -> list[FieldError]:
    """Every problem with the manifest, upstream rules first in upstream order, then ours.

    `manifest` is JSON-shaped (as `parse_manifest` gives it); unknown fields are added to `warnings`.
    """
    if not isinstance(manifest, Mapping):
        return [invalid("<root>", manifest, "must be an object")]
    errors = _validate(manifest, namespace)
    type_errors, unknown = check_fields(manifest, BROADCAST_JOB_FIELDS)
    if warnings is not None:
        warnings.extend(unknown)
    return merge_errors(errors, type_errors)


def _validate(manifest: Mapping[str, Any], namespace: str | None) -> list[FieldError]:
    errors = _validate_type_meta(manifest)
    metadata = manifest.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        errors.append(invalid("metadata", metadata, "must be an object"))
    metadata = mapping_or_empty(metadata)
    errors.extend(_validate_metadata(metadata, namespace))
    spec = manifest.get("spec")
    if spec is None:
        errors.append(required("spec"))
    elif not isinstance(spec, Mapping):
        errors.append(invalid("spec", spec, "must be an object"))
    else:
        errors.extend(_validate_upstream_spec(spec))
        errors.extend(_validate_extended_spec(spec))
    return errors


def _validate_type_meta(manifest: Mapping[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    api_version = manifest.get("apiVersion")
    if api_version is None or api_version == "":
        errors.append(required("apiVersion", f'must be "{API_VERSIONS[1]}" or "{API_VERSIONS[0]}"'))
    elif api_version not in API_VERSIONS:
        errors.append(not_supported("apiVersion", api_version, API_VERSIONS))
    kind = manifest.get("kind")
    if kind is None or kind == "":
        errors.append(required("kind", f'must be "{KIND}"'))
    elif kind != KIND:
        errors.append(not_supported("kind", kind, (KIND,)))
    return errors


def _validate_metadata(metadata: Mapping[str, Any], namespace: str | None) -> list[FieldError]:
    """ObjectMeta as the apiserver (DNS subdomain) and Kruise's name validator check it."""
    errors: list[FieldError] = []
    name = metadata.get("name")
    if name is None or name == "":
        errors.append(required("metadata.name"))
    elif not isinstance(name, str):
        errors.append(invalid("metadata.name", name, "must be a string"))
    else:
        name_errors = regex_errors(name, NAME_FMT, NAME_MSG, "example-com")
        errors.extend(invalid("metadata.name", name, msg) for msg in name_errors)
        if len(name) > NAME_MAX_LENGTH:
            errors.append(invalid("metadata.name", name, max_len_error(NAME_MAX_LENGTH)))
        too_long_for_dns = max_len_error(DNS1123_SUBDOMAIN_MAX)
        errors.extend(
            invalid("metadata.name", name, msg) for msg in is_dns1123_subdomain(name) if msg != too_long_for_dns
        )
    given = metadata.get("namespace")
    if given is not None and not isinstance(given, str):
        errors.append(invalid("metadata.namespace", given, "must be a string"))
    effective = namespace or (given if isinstance(given, str) else "")
    if effective:
        errors.extend(validate_dns1123_label(effective, "metadata.namespace"))
    errors.extend(validate_labels(metadata.get("labels"), "metadata.labels"))
    errors.extend(validate_annotations(metadata.get("annotations"), "metadata.annotations"))
    return errors


def _validate_upstream_spec(spec: Mapping[str, Any]) -> list[FieldError]:
    """Kruise's validateBroadcastJobSpec: W3, W4, W6, W7, then core PodTemplateSpec (W8)."""
    errors: list[FieldError] = []
    completion = mapping_or_empty(spec.get("completionPolicy"))
    if completion.get("type") == COMPLETION_NEVER:
        for key in ("ttlSecondsAfterFinished", "activeDeadlineSeconds"):
            if completion.get(key) is not None:
                message = f"{key} can just work with Always CompletionPolicyType"
                errors.append(invalid(f"spec.completionPolicy.{key}", completion[key], message))
    template = spec.get("template")
    if template is None:
        errors.append(required("spec.template"))
        return errors
    if not isinstance(template, Mapping):
        errors.append(invalid("spec.template", template, "must be an object"))
        return errors
    pod_spec = template.get("spec")
    if pod_spec is None or isinstance(pod_spec, Mapping):
        # Template defaulting turns a missing restartPolicy into Always before this check runs.
        restart_policy = mapping_or_empty(pod_spec).get("restartPolicy") or "Always"
        if restart_policy not in ALLOWED_RESTART_POLICIES:
            errors.append(invalid(
                "spec.template.spec.restartPolicy", restart_policy, "pod restartPolicy can only be Never or OnFailure"
            ))
    labels = mapping_or_empty(mapping_or_empty(template.get("metadata")).get("labels"))
    if any(labels.get(key) not in (None, "") for key in RESERVED_LABELS):
        message = f'"{JOB_NAME_LABEL}" and "{JOB_UID_LABEL}" are not allowed to preset in pod labels'
        errors.append(invalid("spec.template.metadata.labels", dict(labels), message))
    errors.extend(validate_pod_template(template, "spec.template"))
    return errors


def _validate_extended_spec(spec: Mapping[str, Any]) -> list[FieldError]:
    """Checks upstream lacks (V13-V16): each catches a spec the controller would mishandle."""
    errors: list[FieldError] = []
    parallelism = spec.get("parallelism")
    if parallelism is not None and (error := validate_int_or_percent(parallelism, "spec.parallelism")):
        errors.append(error)
    policies: dict[str, Mapping[str, Any]] = {}
    for key, types in (("completionPolicy", COMPLETION_POLICY_TYPES), ("failurePolicy", FAILURE_POLICY_TYPES)):
        policy = spec.get(key)
        if policy is not None and not isinstance(policy, Mapping):
            errors.append(invalid(f"spec.{key}", policy, "must be an object"))
        policies[key] = mapping_or_empty(policy)
        kind = policies[key].get("type")
        if kind not in (None, "") and kind not in types:
            errors.append(not_supported(f"spec.{key}.type", kind, types))
    completion, failure = policies["completionPolicy"], policies["failurePolicy"]
    budget = failure.get("maxFailedNodes")
    if budget is not None and (error := validate_int_or_percent(budget, "spec.failurePolicy.maxFailedNodes")):
        errors.append(error)
    restart_limit = failure.get("restartLimit")
    for path, value, low, high in (
        ("spec.failurePolicy.restartLimit", restart_limit, 0, MAX_INT32),
        ("spec.failurePolicy.backoffLimitPerNode", failure.get("backoffLimitPerNode"), 0, MAX_INT32),
        ("spec.completionPolicy.activeDeadlineSeconds", completion.get("activeDeadlineSeconds"), 1, MAX_INT64),
        ("spec.completionPolicy.ttlSecondsAfterFinished", completion.get("ttlSecondsAfterFinished"), 0, MAX_INT32),
    ):
        if value is not None:
            errors.extend(_check_range(path, value, low, high))
    check_bool(spec.get("paused"), "spec.paused", errors)
    check_bool(spec.get("rerunOnTemplateChange"), "spec.rerunOnTemplateChange", errors)
    errors.extend(validate_node_selection(spec))
    errors.extend(validate_pod_failure_policy(spec))
    errors.extend(validate_waves(spec))
    pod_spec = mapping_or_empty(mapping_or_empty(spec.get("template")).get("spec"))
    if pod_spec.get("nodeName"):
        errors.append(forbidden("spec.template.spec.nodeName", (
            "must not be set: a BroadcastJob pins one pod to each eligible node itself, "
            "so a fixed nodeName would put every pod on the same node"
        )))
    return errors


def broadcast_job_warnings(manifest: Mapping[str, Any]) -> list[str]:
    """Legal but probably unintended settings (V17), reported without refusing the manifest.

    OpenKruise's own restartLimit sample pairs `restartLimit: 3` with `restartPolicy: Never`;
    refusing it would break the promise that upstream YAML works unchanged.
    """
    spec = mapping_or_empty(manifest.get("spec"))
    restart_limit = mapping_or_empty(spec.get("failurePolicy")).get("restartLimit")
    pod_spec = mapping_or_empty(mapping_or_empty(spec.get("template")).get("spec"))
    if is_int(restart_limit) and restart_limit > 0 and pod_spec.get("restartPolicy") == "Never":
        return [f"spec.failurePolicy.restartLimit: {restart_limit} has no effect unless "
                "spec.template.spec.restartPolicy is OnFailure (pods with restartPolicy Never are never restarted)"]
    return []


def _check_range(path: str, value: Any, low: int, high: int) -> list[FieldError]:
    if not is_int(value):
        return [invalid(path, value, "must be an integer")]
    if value < low:
        message = "must be greater than 0" if low == 1 else f"must be greater than or equal to {low}"
        return [invalid(path, value, message)]
    if value > high:
        return [invalid(path, value, f"must be between {low} and {high}, inclusive")]
    return []
