"""Kubeflow TFJob (`kubeflow.org/v1`) as typed values: the API's constants and the defaulted, frozen model.

Defaulting is in `defaults`, validation in `validation`, and `parsing` turns a
manifest into a `TFJobSpec` and back; all of them build on this module only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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
