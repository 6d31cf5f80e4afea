"""A BroadcastJob manifest → a validated `BroadcastJobSpec` with the mutating webhook's defaults, and back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_broadcast.specs.api_types import object_meta
from airflow_broadcast.specs.broadcast_job.node_selection import node_selection_manifest, parse_node_selection
from airflow_broadcast.specs.broadcast_job.pod_failure_policy import (
    parse_pod_failure_policy,
    pod_failure_policy_manifest,
)
from airflow_broadcast.specs.broadcast_job.spec import (
    API_VERSION,
    COMPLETION_ALWAYS,
    DEFAULT_PARALLELISM,
    FAILURE_FAIL_FAST,
    KIND,
    BroadcastJobSpec,
    CompletionPolicy,
    FailurePolicy,
)
from airflow_broadcast.specs.broadcast_job.validation import validate_broadcast_job
from airflow_broadcast.specs.broadcast_job.waves import parse_waves, waves_manifest
from airflow_broadcast.specs.field_errors import InvalidSpecError
from airflow_broadcast.specs.json_fields import mapping_or_empty
from airflow_broadcast.specs.manifest_text import parse_manifest


def parse_broadcast_job(
    manifest: Mapping[str, Any] | str, *, namespace: str | None = None, default_namespace: str = "default",
    warnings: list[str] | None = None,
) -> BroadcastJobSpec:
    """Validate and default a manifest (mapping or YAML/JSON text) into a BroadcastJobSpec.

    Raises ManifestError for undecodable text and InvalidSpecError listing every problem.
    The namespace is the `namespace` argument, else `metadata.namespace`, else `default_namespace`.
    Unknown and duplicate fields are added to `warnings`, as the API server's field validation reports them.
    """
    document = parse_manifest(manifest, what=f"{KIND} manifest", warnings=warnings)
    errors = validate_broadcast_job(document, namespace=namespace, warnings=warnings)
    metadata = mapping_or_empty(document.get("metadata"))
    if errors:
        name = metadata.get("name")
        raise InvalidSpecError(KIND, name if isinstance(name, str) else "", errors)
    spec = document["spec"]
    completion = mapping_or_empty(spec.get("completionPolicy"))
    failure = mapping_or_empty(spec.get("failurePolicy"))
    parallelism = spec.get("parallelism")
    return BroadcastJobSpec(
        api_version=document["apiVersion"],
        name=metadata["name"],
        namespace=namespace or metadata.get("namespace") or default_namespace,
        labels=dict(metadata.get("labels") or {}),
        annotations=dict(metadata.get("annotations") or {}),
        parallelism=DEFAULT_PARALLELISM if parallelism is None else parallelism,
        template=dict(spec["template"]),
        completion_policy=CompletionPolicy(
            type=completion.get("type") or COMPLETION_ALWAYS,
            active_deadline_seconds=completion.get("activeDeadlineSeconds"),
            ttl_seconds_after_finished=completion.get("ttlSecondsAfterFinished"),
        ),
        failure_policy=FailurePolicy(
            type=failure.get("type") or FAILURE_FAIL_FAST,
            restart_limit=failure.get("restartLimit") or 0,
            max_failed_nodes=failure.get("maxFailedNodes") or 0,
            backoff_limit_per_node=failure.get("backoffLimitPerNode") or 0,
        ),
        paused=spec.get("paused") is True,
        rerun_on_template_change=spec.get("rerunOnTemplateChange") is True,
        node_selection=parse_node_selection(spec),
        pod_failure_rules=parse_pod_failure_policy(spec),
        waves=parse_waves(spec),
    )


def to_manifest(spec: BroadcastJobSpec) -> dict[str, Any]:
    """The defaulted manifest in v1beta1 form, serialised as Go would (omitempty fields left out)."""
    metadata = object_meta(spec.name, spec.namespace, spec.labels, spec.annotations)
    completion: dict[str, Any] = {"type": spec.completion_policy.type}
    if spec.completion_policy.active_deadline_seconds is not None:
        completion["activeDeadlineSeconds"] = spec.completion_policy.active_deadline_seconds
    if spec.completion_policy.ttl_seconds_after_finished is not None:
        completion["ttlSecondsAfterFinished"] = spec.completion_policy.ttl_seconds_after_finished
    failure: dict[str, Any] = {"type": spec.failure_policy.type}
    if spec.failure_policy.restart_limit:
        failure["restartLimit"] = spec.failure_policy.restart_limit
    if spec.failure_policy.max_failed_nodes:
        failure["maxFailedNodes"] = spec.failure_policy.max_failed_nodes
    if spec.failure_policy.backoff_limit_per_node:
        failure["backoffLimitPerNode"] = spec.failure_policy.backoff_limit_per_node
    body: dict[str, Any] = {
        "parallelism": spec.parallelism,
        "template": parse_manifest(spec.template, what="template"),
        "completionPolicy": completion,
        "failurePolicy": failure,
    }
    if spec.paused:
        body["paused"] = True
    if spec.rerun_on_template_change:
        body["rerunOnTemplateChange"] = True
    body.update(node_selection_manifest(spec.node_selection))
    body.update(pod_failure_policy_manifest(spec.pod_failure_rules))
    body.update(waves_manifest(spec.waves))
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": body}
