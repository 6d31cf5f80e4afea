"""Kubeflow TFJob (`kubeflow.org/v1`) as typed values: constants, defaulting, parsing and rendering.

Upstream applies `SetDefaults_TFJob` in memory at every reconcile and never
persists it (tfjob.md §1.4, A8). `default_tf_job` does the same on a copy, so
the caller's manifest is never changed; `to_manifest` renders the defaulted
value, and parsing that again gives an equal `TFJobSpec`.

Validation rules live in `tf_job_validation` (imported lazily: it needs the
constants defined here).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from airflow_broadcast.specs.field_errors import FieldError, InvalidSpecError, invalid

GROUP = "kubeflow.org"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "TFJob"
PLURAL = "tfjobs"
SINGULAR = "tfjob"

CHIEF, EVALUATOR, MASTER, PS, WORKER = "Chief", "Evaluator", "Master", "PS", "Worker"
# Also the order in which upstream's UpdateJobStatus walks the types.
REPLICA_TYPES: tuple[str, ...] = (CHIEF, EVALUATOR, MASTER, PS, WORKER)
CHIEF_OR_MASTER = frozenset({CHIEF, MASTER})

LABEL_OPERATOR_NAME = "training.kubeflow.org/operator-name"
LABEL_JOB_NAME = "training.kubeflow.org/job-name"
LABEL_REPLICA_TYPE = "training.kubeflow.org/replica-type"
LABEL_REPLICA_INDEX = "training.kubeflow.org/replica-index"
LABEL_JOB_ROLE = "training.kubeflow.org/job-role"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
OPERATOR_NAME = "tfjob-controller"
FRAMEWORK_NAME = "tensorflow"
CONTAINER_NAME = "tensorflow"
DEFAULT_PORT_NAME = "tfjob-port"
DEFAULT_PORT = 2222
MAX_NAME_LENGTH = 63

RESTART_ALWAYS, RESTART_ON_FAILURE, RESTART_NEVER, RESTART_EXIT_CODE = "Always", "OnFailure", "Never", "ExitCode"
RESTART_POLICIES: tuple[str, ...] = (RESTART_ALWAYS, RESTART_ON_FAILURE, RESTART_NEVER, RESTART_EXIT_CODE)
CLEAN_POD_NONE, CLEAN_POD_RUNNING, CLEAN_POD_ALL = "None", "Running", "All"
CLEAN_POD_POLICIES: tuple[str, ...] = (CLEAN_POD_NONE, CLEAN_POD_RUNNING, CLEAN_POD_ALL)
SUCCESS_POLICY_DEFAULT, SUCCESS_POLICY_ALL_WORKERS = "", "AllWorkers"
SUCCESS_POLICIES: tuple[str, ...] = (SUCCESS_POLICY_DEFAULT, SUCCESS_POLICY_ALL_WORKERS)
MANAGED_BY_TRAINING_OPERATOR = "kubeflow.org/training-operator"
MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"
MANAGED_BY_VALUES: tuple[str, ...] = (MANAGED_BY_TRAINING_OPERATOR, MANAGED_BY_MULTIKUEUE)

_CANONICAL_TYPES = {t.lower(): t for t in REPLICA_TYPES}


def normalize_replica_type(key: str) -> str:
    """`WORKER` → `Worker`, `ps` → `PS`; unknown keys are returned unchanged (§1.4 step 3)."""
    return _CANONICAL_TYPES.get(key.lower(), key)


def is_chief_or_master(replica_type: str) -> bool:
    return replica_type in CHIEF_OR_MASTER


def is_known_replica_type(replica_type: str) -> bool:
    return replica_type in _CANONICAL_TYPES.values()


@dataclass(frozen=True)
class ReplicaSpec:
    """One replica type after defaulting; `template` is the PodTemplateSpec as plain JSON data."""

    replicas: int
    template: Mapping[str, Any]
    restart_policy: str = RESTART_NEVER


@dataclass(frozen=True)
class RunPolicy:
    clean_pod_policy: str = CLEAN_POD_NONE
    ttl_seconds_after_finished: int | None = None
    active_deadline_seconds: int | None = None
    backoff_limit: int | None = None
    suspend: bool = False
    scheduling_policy: Mapping[str, Any] | None = None
    managed_by: str | None = None


@dataclass(frozen=True)
class TFJobSpec:
    """A defaulted TFJob. `replica_specs` keys are canonical types, in `replica_order` order."""

    name: str
    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    replica_specs: Mapping[str, ReplicaSpec] = field(default_factory=dict)
    run_policy: RunPolicy = field(default_factory=RunPolicy)
    success_policy: str = SUCCESS_POLICY_DEFAULT
    enable_dynamic_worker: bool = False

    @property
    def has_chief_or_master(self) -> bool:
        return any(t in CHIEF_OR_MASTER for t in self.replica_specs)

    @property
    def total_replicas(self) -> int:
        return sum(r.replicas for r in self.replica_specs.values())


def replica_order(types: list[str]) -> list[str]:
    """Known types in upstream order, then unknown types sorted: a deterministic order."""
    known = [t for t in REPLICA_TYPES if t in types]
    return known + sorted(t for t in types if t not in REPLICA_TYPES)


# ---- defaulting ---------------------------------------------------------------------------------

def default_tf_job(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """`SetDefaults_TFJob` on a deep copy; tolerates malformed input (it only fills what it can)."""
    job: dict[str, Any] = copy.deepcopy(dict(manifest))
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return job
    if spec.get("runPolicy") is None:
        spec["runPolicy"] = {}
    run_policy = spec["runPolicy"]
    if isinstance(run_policy, dict) and run_policy.get("cleanPodPolicy") is None:
        run_policy["cleanPodPolicy"] = CLEAN_POD_NONE
    if spec.get("successPolicy") is None:
        spec["successPolicy"] = SUCCESS_POLICY_DEFAULT
    replica_specs = spec.get("tfReplicaSpecs")
    if isinstance(replica_specs, dict):
        normalised: dict[str, Any] = {}
        for key, replica in replica_specs.items():
            if isinstance(replica, dict):
                _default_replica(replica)
            normalised[normalize_replica_type(str(key))] = replica
        spec["tfReplicaSpecs"] = normalised
    return job


def _default_replica(replica: dict[str, Any]) -> None:
    if replica.get("replicas") is None:
        replica["replicas"] = 1
    if not replica.get("restartPolicy"):
        replica["restartPolicy"] = RESTART_NEVER
    template = replica.get("template")
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    containers = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
    if not isinstance(containers, list) or not containers:
        return
    target = next((c for c in containers if isinstance(c, dict) and c.get("name") == CONTAINER_NAME),
                  containers[0])
    if not isinstance(target, dict):
        return
    ports = target.get("ports")
    if ports is None:
        ports = target["ports"] = []
    if isinstance(ports, list) and not any(
            isinstance(p, dict) and p.get("name") == DEFAULT_PORT_NAME for p in ports):
        ports.append({"name": DEFAULT_PORT_NAME, "containerPort": DEFAULT_PORT})


# ---- parsing ------------------------------------------------------------------------------------

def load_manifest(manifest: Mapping[str, Any] | str) -> Mapping[str, Any]:
    """A mapping as is, or YAML/JSON text parsed with `yaml.safe_load`; errors name the problem."""
    if isinstance(manifest, Mapping):
        return manifest
    try:
        loaded = yaml.safe_load(manifest)
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise InvalidSpecError(KIND, "", [FieldError("<manifest>", "Invalid", f"malformed YAML: {detail}")]) from exc
    if not isinstance(loaded, Mapping):
        kind = "empty document" if loaded is None else type(loaded).__name__
        raise InvalidSpecError(KIND, "", [invalid("<manifest>", kind, "must be a mapping (a TFJob object)")])
    return loaded


def validate_tf_job(manifest: Mapping[str, Any] | str, *, namespace: str | None = None,
                    strict: bool = True) -> list[FieldError]:
    """Every problem of a TFJob manifest at once (B1-B14); [] when valid.

    `strict=False` accepts what upstream accepts but this provider rejects by default:
    unknown replica types and unknown restartPolicy/cleanPodPolicy/successPolicy values.
    """
    from airflow_broadcast.specs.tf_job.validation import validate_manifest

    try:
        loaded = load_manifest(manifest)
    except InvalidSpecError as exc:
        return list(exc.errors)
    return validate_manifest(loaded, namespace=namespace, strict=strict)


def validate_tf_job_update(new: Mapping[str, Any] | str, old: Mapping[str, Any], *,
                           namespace: str | None = None, strict: bool = True) -> list[FieldError]:
    """`validate_tf_job` plus the update-only immutability rules (B10, B11)."""
    from airflow_broadcast.specs.tf_job.validation import validate_immutable_fields

    errors = validate_tf_job(new, namespace=namespace, strict=strict)
    try:
        loaded = load_manifest(new)
    except InvalidSpecError:
        return errors
    return errors + validate_immutable_fields(loaded, old)


def parse_tf_job(manifest: Mapping[str, Any] | str, *, namespace: str | None = None,
                 default_namespace: str = "default", strict: bool = True) -> TFJobSpec:
    """Validate, default and type a TFJob; raises `InvalidSpecError` listing every problem.

    The namespace is `namespace` if given, else `metadata.namespace`, else `default_namespace`.
    """
    loaded = load_manifest(manifest)
    errors = validate_tf_job(loaded, namespace=namespace, strict=strict)
    raw_metadata = loaded.get("metadata")
    metadata: Mapping[str, Any] = raw_metadata if isinstance(raw_metadata, Mapping) else {}
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


# ---- rendering ----------------------------------------------------------------------------------

def to_manifest(spec: TFJobSpec) -> dict[str, Any]:
    """The defaulted TFJob as a manifest with the CRD's field names (A10)."""
    metadata: dict[str, Any] = {"name": spec.name, "namespace": spec.namespace}
    if spec.labels:
        metadata["labels"] = dict(spec.labels)
    if spec.annotations:
        metadata["annotations"] = dict(spec.annotations)
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
