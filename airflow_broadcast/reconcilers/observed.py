"""Observed cluster state as small immutable values, the input of every reconciler.

The cluster layer builds these from raw API objects in one place; reconcilers
never see client-library models, and never read the clock: `now` is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

RECORD_UID_LABEL = "airflow-broadcast.io/job-uid"  # on every child: the uid of the record that owns it
# On a record's part (a ConfigMap it owns that holds detail too large for it): the record's uid.
RECORD_PART_LABEL = "airflow-broadcast.io/part-of"
# Container waiting reasons that mean "this will not start by itself soon"; ContainerCreating is not one.
STUCK_WAITING_REASONS = frozenset({
    "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError",
    "CreateContainerError", "CrashLoopBackOff", "RunContainerError",
})


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = ""


@dataclass(frozen=True)
class NodeInfo:
    """What node eligibility needs to know about one node."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    allocatable: Mapping[str, str] = field(default_factory=dict)

    @staticmethod
    def from_api(node: Mapping[str, Any]) -> NodeInfo:
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        status = node.get("status") or {}
        return NodeInfo(
            name=str(meta.get("name", "")),
            labels=dict(meta.get("labels") or {}),
            taints=tuple(
                Taint(str(t.get("key", "")), str(t.get("value", "") or ""), str(t.get("effect", "") or ""))
                for t in spec.get("taints") or []
            ),
            unschedulable=bool(spec.get("unschedulable", False)),
            allocatable={str(k): str(v) for k, v in (status.get("allocatable") or {}).items()},
        )


@dataclass(frozen=True)
class ContainerExit:
    """The terminated state of one container."""

    container: str
    exit_code: int
    reason: str = ""
    message: str = ""
    finished_at: float = 0.0


@dataclass(frozen=True)
class ContainerWaiting:
    """The first container that waits with a message (an image pull error, a crash loop back-off)."""

    container: str
    reason: str
    message: str


@dataclass(frozen=True)
class PodInfo:
    """What reconcilers need to know about one child pod.

    `spec` is the pod's raw spec (used to re-check node fitness, §N13). `node` is
    the node the pod is bound or pinned to (spec.nodeName, else the single-value
    `metadata.name In` matchFields term), or "" when it has none. `condition_warning`
    is (reason, message) of the pod's latest condition when that is not True and no
    container has a status yet, as upstream training-operator reports it (TFJob E14).
    """

    name: str
    uid: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    owner_uid: str
    owner_kind: str
    node: str
    phase: str
    deleting: bool
    restart_policy: str
    restarts: int
    spec: Mapping[str, Any]
    exits: tuple[ContainerExit, ...] = ()
    waiting_reason: str = ""
    pending_message: str = ""
    created_at: float = 0.0
    waiting: ContainerWaiting | None = None
    condition_warning: tuple[str, str] | None = None
    conditions: tuple[tuple[str, str], ...] = ()
    """(type, status) of each condition of a Failed pod (e.g. DisruptionTarget), for podFailurePolicy; else ()."""
    init_exits: tuple[ContainerExit, ...] = ()
    """Init containers that ended with a non-zero code (sidecars left out): why a pod failed before it ran."""
    init_waiting_reason: str = ""
    """The first init container's waiting reason other than PodInitializing (an init image that won't pull)."""

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def exit_of(self, container: str | None = None) -> ContainerExit | None:
        """The terminated state of `container`, else of the first container that has one."""
        for exit_ in self.exits:
            if container is None or exit_.container == container:
                return exit_
        return None

    @property
    def failed_in_init(self) -> bool:
        """It ended before any of its containers did: an init container failed."""
        return not self.exits and bool(self.init_exits)

    def final_exit(self) -> ContainerExit | None:
        """The exit that tells how the pod ended: its first ended container, else its first failed init
        container, whose reason then reads as kubectl's STATUS does (`Init:Error`, `Init:ExitCode:1`)."""
        ended = self.exit_of()
        if ended is not None or not self.init_exits:
            return ended
        init = self.init_exits[0]
        return replace(init, reason=f"Init:{init.reason or f'ExitCode:{init.exit_code}'}")

    @property
    def all_exits(self) -> tuple[ContainerExit, ...]:
        """Ended containers, then failed init containers: what podFailurePolicy's exit codes are matched against."""
        return self.exits + self.init_exits if self.init_exits else self.exits


@dataclass(frozen=True)
class PodGroupInfo:
    """A gang-scheduling PodGroup (Volcano or scheduler-plugins); `phase` is its status.phase ("" when unset)."""

    name: str
    uid: str
    owner_uid: str
    phase: str
    deleting: bool


@dataclass(frozen=True)
class ServiceInfo:
    name: str
    uid: str
    labels: Mapping[str, str]
    owner_uid: str
    deleting: bool


def assigned_node(spec: Mapping[str, Any]) -> str:
    """spec.nodeName, else the single value of the first `metadata.name In [x]` matchFields entry."""
    node_name = spec.get("nodeName")
    if node_name:
        return str(node_name)
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in affinity.get("nodeSelectorTerms") or []:
        for req in (term or {}).get("matchFields") or []:
            values = req.get("values") or []
            if req.get("key") == "metadata.name" and req.get("operator") == "In" and len(values) == 1:
                return str(values[0])
    return ""


@dataclass(frozen=True)
class JobRecord:
    """The durable job record as last read: identity, persisted status and flags.

    `owner_reference` is the ownerReference every child must carry, so that
    deleting the record garbage-collects the children. `job_name` and `manifest` are the
    job's; `raw` is the ConfigMap as read, for writes that carry its resourceVersion.
    """

    name: str
    namespace: str
    uid: str
    owner_reference: Mapping[str, Any]
    status: Mapping[str, Any] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    deleting: bool = False
    job_name: str = ""
    manifest: Mapping[str, Any] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict)
