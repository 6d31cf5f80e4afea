"""BroadcastJob (apps.kruise.io): the API's constants, the labels it reserves on pods, and the typed, frozen spec.

Validation is in `validation`; `parsing` turns a manifest into a `BroadcastJobSpec`
with the mutating webhook's defaults, and back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_broadcast.specs.api_types import MAX_INT32
from airflow_broadcast.specs.broadcast_job.node_selection import NodeSelection
from airflow_broadcast.specs.broadcast_job.pod_failure_policy import FailureRule
from airflow_broadcast.specs.broadcast_job.waves import Waves
from airflow_broadcast.specs.int_or_percent import scaled_value

GROUP = "apps.kruise.io"
VERSION_V1ALPHA1 = "v1alpha1"
VERSION_V1BETA1 = "v1beta1"
VERSIONS = (VERSION_V1ALPHA1, VERSION_V1BETA1)
API_VERSION = f"{GROUP}/{VERSION_V1BETA1}"
API_VERSIONS = (f"{GROUP}/{VERSION_V1ALPHA1}", API_VERSION)
KIND = "BroadcastJob"
PLURAL = "broadcastjobs"
SHORT_NAME = "bcj"

# Set on every pod of a job (upstream's JobNameLabelKey and ControllerUIDLabelKey); users may not preset them.
JOB_NAME_LABEL = "broadcastjob-name"
JOB_UID_LABEL = "broadcastjob-controller-uid"
RESERVED_LABELS = (JOB_NAME_LABEL, JOB_UID_LABEL)

DEFAULT_PARALLELISM = MAX_INT32
COMPLETION_ALWAYS = "Always"
COMPLETION_NEVER = "Never"
COMPLETION_POLICY_TYPES = (COMPLETION_ALWAYS, COMPLETION_NEVER)
FAILURE_CONTINUE = "Continue"
FAILURE_FAIL_FAST = "FailFast"
FAILURE_PAUSE = "Pause"
FAILURE_POLICY_TYPES = (FAILURE_CONTINUE, FAILURE_FAIL_FAST, FAILURE_PAUSE)
ALLOWED_RESTART_POLICIES = ("OnFailure", "Never")

NAME_MAX_LENGTH = 63

NAME_FMT = r"^[a-zA-Z0-9\-]+$"
NAME_MSG = "BroadcastJob name must consist of alphanumeric characters or '-'"


@dataclass(frozen=True)
class CompletionPolicy:
    type: str = COMPLETION_ALWAYS
    active_deadline_seconds: int | None = None
    ttl_seconds_after_finished: int | None = None


@dataclass(frozen=True)
class FailurePolicy:
    type: str = FAILURE_FAIL_FAST
    restart_limit: int = 0
    max_failed_nodes: int | str = 0
    backoff_limit_per_node: int = 0
    """F15: how many times a node whose pod failed runs again (after a backoff) before it counts as failed."""

    def budget(self, desired: int) -> int:
        """F17: the failed nodes FailFast and Pause let pass (a percent is of `desired`, rounded down).

        0 for a value validation refuses (a record edited by hand): any failure counts, as upstream.
        """
        try:
            return max(0, scaled_value(self.max_failed_nodes, desired, round_up=False))
        except ValueError:
            return 0

    def tolerates(self, failed_nodes: int, desired: int) -> bool:
        """F17: these failed nodes are within the budget (never without one: upstream acts on any failed pod)."""
        return bool(self.max_failed_nodes) and failed_nodes <= self.budget(desired)


@dataclass(frozen=True, kw_only=True)
class BroadcastJobSpec:
    """A validated, defaulted BroadcastJob. Mappings are private copies: treat them as read-only."""

    api_version: str = API_VERSION
    name: str
    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    parallelism: int | str = DEFAULT_PARALLELISM
    template: Mapping[str, Any]
    completion_policy: CompletionPolicy = field(default_factory=CompletionPolicy)
    failure_policy: FailurePolicy = field(default_factory=FailurePolicy)
    paused: bool = False
    node_selection: NodeSelection = field(default_factory=NodeSelection)
    pod_failure_rules: tuple[FailureRule, ...] = ()
    waves: Waves | None = None
    rerun_on_template_change: bool = False  # V18: a node that ran an earlier template runs again
