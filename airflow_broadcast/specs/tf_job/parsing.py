"""A TFJob manifest → a validated, defaulted `TFJobSpec`, and back (A10).

`to_manifest` renders the defaulted value; parsing that again gives an equal `TFJobSpec`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.specs.api_types import object_meta
from airflow_broadcast.specs.field_errors import InvalidSpecError
from airflow_broadcast.specs.json_fields import mapping_or_empty
from airflow_broadcast.specs.tf_job.defaults import default_tf_job
from airflow_broadcast.specs.tf_job.spec import API_VERSION, KIND, ReplicaSpec, RunPolicy, TFJobSpec, replica_order
from airflow_broadcast.specs.tf_job.validation import load_manifest, validate_tf_job


def parse_tf_job(manifest: Mapping[str, Any] | str, *, namespace: str | None = None,
                 default_namespace: str = "default", strict: bool = True,
                 warnings: list[str] | None = None) -> TFJobSpec:
    """Validate, default and type a TFJob; raises `InvalidSpecError` listing every problem.

    The namespace is `namespace` if given, else `metadata.namespace`, else `default_namespace`.
    Unknown and duplicate fields, and replica specs that never run a deciding pod, are added to `warnings`.
    """
    loaded = load_manifest(manifest, warnings)
    errors = validate_tf_job(loaded, namespace=namespace, strict=strict, warnings=warnings)
    metadata = mapping_or_empty(loaded.get("metadata"))
    if errors:
        raise InvalidSpecError(KIND, str(metadata.get("name") or ""), errors)
    job = default_tf_job(loaded)
    spec = job["spec"]
    run = spec["runPolicy"]
    replicas = spec["tfReplicaSpecs"]
    return TFJobSpec(
        name=str(metadata["name"]),
        namespace=namespace or str(metadata.get("namespace") or default_namespace),
        labels=dict(metadata.get("labels") or {}),
        annotations=dict(metadata.get("annotations") or {}),
        replica_specs={t: ReplicaSpec(int(replicas[t]["replicas"]), replicas[t]["template"],
                                      str(replicas[t]["restartPolicy"]))
                       for t in replica_order(list(replicas))},
        run_policy=RunPolicy(
            clean_pod_policy=str(run["cleanPodPolicy"]),
            ttl_seconds_after_finished=run.get("ttlSecondsAfterFinished"),
            active_deadline_seconds=run.get("activeDeadlineSeconds"),
            backoff_limit=run.get("backoffLimit"),
            suspend=bool(run.get("suspend") or False),
            scheduling_policy=run.get("schedulingPolicy"),
            managed_by=run.get("managedBy"),
        ),
        success_policy=str(spec["successPolicy"]),
        enable_dynamic_worker=bool(spec.get("enableDynamicWorker") or False),
    )


def to_manifest(spec: TFJobSpec) -> dict[str, Any]:
    """The defaulted TFJob as a manifest with the CRD's field names (A10)."""
    metadata = object_meta(spec.name, spec.namespace, spec.labels, spec.annotations)
    run = spec.run_policy
    run_policy: dict[str, Any] = {"cleanPodPolicy": run.clean_pod_policy, "suspend": run.suspend}
    for key, value in (("ttlSecondsAfterFinished", run.ttl_seconds_after_finished),
                       ("activeDeadlineSeconds", run.active_deadline_seconds),
                       ("backoffLimit", run.backoff_limit),
                       ("managedBy", run.managed_by)):
        if value is not None:
            run_policy[key] = value
    if run.scheduling_policy is not None:
        run_policy["schedulingPolicy"] = copy.deepcopy(dict(run.scheduling_policy))
    body: dict[str, Any] = {
        "runPolicy": run_policy,
        "tfReplicaSpecs": {
            t: {"replicas": r.replicas, "restartPolicy": r.restart_policy,
                "template": copy.deepcopy(dict(r.template))}
            for t, r in spec.replica_specs.items()
        },
    }
    if spec.success_policy:
        body["successPolicy"] = spec.success_policy
    if spec.enable_dynamic_worker:
        body["enableDynamicWorker"] = True
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": body}
