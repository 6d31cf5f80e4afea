"""Raw API objects → the typed values reconcilers read. The only code that digs in pod/service JSON."""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from typing import Any

from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.reconcilers.json_keys import shared_key_dict
from airflow_broadcast.reconcilers.observed import (
    ContainerExit,
    ContainerWaiting,
    NodeInfo,
    PodGroupInfo,
    PodInfo,
    ServiceInfo,
    assigned_node,
)
from airflow_broadcast.specs.timestamps import from_rfc3339

PRIORITY_CLASSES_PATH = api_path("scheduling.k8s.io/v1", "priorityclasses")


def _controller(meta: Mapping[str, Any]) -> tuple[str, str]:
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid", "")), str(ref.get("kind", ""))
    return "", ""


def pod_info(pod: Mapping[str, Any]) -> PodInfo:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    statuses = list(status.get("initContainerStatuses") or []) + list(status.get("containerStatuses") or [])
    exits: list[ContainerExit] = []
    waiting = ""
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        terminated = state.get("terminated")
        if terminated:
            exits.append(_exit(cs, terminated))
        elif (state.get("waiting") or {}).get("reason") and not waiting:
            waiting = str(state["waiting"]["reason"])
    pending = ""
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            pending = f"{cond.get('reason', '')}: {cond.get('message', '')}".strip(": ")
    if not pending and status.get("reason"):
        pending = f"{status.get('reason')}: {status.get('message', '')}".strip(": ")
    if status.get("phase") == "Failed" and status.get("reason") and not exits:
        waiting = str(status["reason"])  # e.g. Evicted: no container ever terminated
        pending = str(status.get("message", "") or "")
    owner_uid, owner_kind = _controller(meta)
    return PodInfo(
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        labels=shared_key_dict(meta.get("labels") or {}),
        annotations=shared_key_dict(meta.get("annotations") or {}),
        owner_uid=owner_uid,
        owner_kind=owner_kind,
        node=assigned_node(spec),
        phase=str(status.get("phase", "") or ""),
        deleting=bool(meta.get("deletionTimestamp")),
        restart_policy=str(spec.get("restartPolicy", "Always")),
        restarts=sum(int(cs.get("restartCount", 0) or 0) for cs in statuses),
        spec=_placement_fields(spec),
        exits=tuple(exits),
        init_exits=() if status.get("phase") == "Failed" and status.get("reason")  # Evicted & co: the pod's reason
        else _init_failures(spec, status.get("initContainerStatuses") or []),
        init_waiting_reason=_init_waiting(status.get("initContainerStatuses") or []),
        waiting_reason=waiting,
        pending_message=pending,
        created_at=from_rfc3339(meta.get("creationTimestamp")) or 0.0,
        waiting=_waiting_with_message(status.get("containerStatuses") or status.get("initContainerStatuses") or []),
        condition_warning=None if statuses else _latest_condition_warning(status.get("conditions") or []),
        conditions=tuple((str(c.get("type", "")), str(c.get("status", ""))) for c in status.get("conditions") or [])
        if status.get("phase") == "Failed" else (),
    )


def _exit(cs: Mapping[str, Any], terminated: Mapping[str, Any]) -> ContainerExit:
    return ContainerExit(str(cs.get("name", "")), int(terminated.get("exitCode", 0) or 0),
                         str(terminated.get("reason", "") or ""), str(terminated.get("message", "") or ""),
                         from_rfc3339(terminated.get("finishedAt")) or 0.0)


def _init_failures(spec: Mapping[str, Any], statuses: list[Mapping[str, Any]]) -> tuple[ContainerExit, ...]:
    """Init containers that ended non-zero. A sidecar (an init container with restartPolicy Always) is left
    out: the kubelet ends it when the pod ends, so its exit code says nothing about the pod."""
    sidecars = {str(c.get("name", "")) for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"}
    ended = []
    for cs in statuses:
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated and int(terminated.get("exitCode", 0) or 0) != 0 and str(cs.get("name", "")) not in sidecars:
            ended.append(_exit(cs, terminated))
    return tuple(ended)


def _init_waiting(statuses: list[Mapping[str, Any]]) -> str:
    for cs in statuses:
        reason = str(((cs.get("state") or {}).get("waiting") or {}).get("reason") or "")
        if reason and reason != "PodInitializing":
            return reason
    return ""


def _waiting_with_message(statuses: list[Mapping[str, Any]]) -> ContainerWaiting | None:
    """The first container waiting with a message: the containers, or the init containers while none has a status."""
    for cs in statuses:
        wait = (cs.get("state") or {}).get("waiting") or {}
        if wait.get("message"):
            return ContainerWaiting(str(cs.get("name", "")), str(wait.get("reason", "") or ""), str(wait["message"]))
    return None


def _latest_condition_warning(conditions: list[Mapping[str, Any]]) -> tuple[str, str] | None:
    """(reason, message) of the most recently changed condition, when it is not True."""
    if not conditions:
        return None
    latest = max(conditions, key=lambda c: from_rfc3339(c.get("lastTransitionTime")) or 0.0)
    if latest.get("status") == "True":
        return None
    return str(latest.get("reason", "") or ""), str(latest.get("message", "") or "")


PLACEMENT_KEYS = ("nodeName", "nodeSelector", "affinity", "tolerations", "resources", "overhead")
CONTAINER_KEYS = ("resources", "restartPolicy")
PER_NODE_KEYS = ("nodeName", "affinity")  # a pinned pod's affinity names its node: sharing would not pay
MAX_COPIES = 4096
_copies: dict[str, Any] = {}
_last_copy: dict[str, Any] = {}  # placement key → the copy it last returned


def _placement_fields(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a pod spec that decide where it fits (N13), which is all a pass reads of it.

    A cache of whole specs would hold each pod's image, volumes and env: a TFJob pod's TF_CONFIG
    lists every replica, so N cached pods would hold N² bytes.
    """
    slim = {k: spec[k] if k in PER_NODE_KEYS else _one_copy(k, spec[k]) for k in PLACEMENT_KEYS if k in spec}
    for key in ("initContainers", "containers"):
        if isinstance(spec.get(key), list):
            slim[key] = _one_copy(key, [{k: c[k] for k in CONTAINER_KEYS if k in c} if isinstance(c, Mapping) else c
                                        for c in spec[key]])
    return slim


def _one_copy(slot: str, value: Any) -> Any:
    """One shared (read-only) instance of each distinct placement value: the pods of a job repeat their
    template's tolerations and resources, and an idle triggerer holds one pod per job.

    Pods arrive in runs of one template, so the copy last used for this slot is tried first: comparing
    it costs far less than the canonical JSON key.
    """
    last = _last_copy.get(slot)
    if last is not None and type(last) is type(value) and last == value:
        return last
    key = json.dumps(value, sort_keys=True, separators=(",", ":"))
    kept = _copies.get(key)
    if kept is None:
        if len(_copies) >= MAX_COPIES:
            _copies.clear()
        kept = _copies[key] = value
    _last_copy[slot] = kept
    return kept


def service_info(svc: Mapping[str, Any]) -> ServiceInfo:
    meta = svc.get("metadata") or {}
    owner_uid, _ = _controller(meta)
    return ServiceInfo(name=str(meta.get("name", "")), uid=str(meta.get("uid", "")),
                       labels=dict(meta.get("labels") or {}), owner_uid=owner_uid,
                       deleting=bool(meta.get("deletionTimestamp")))


def pod_group_info(group: Mapping[str, Any]) -> PodGroupInfo:
    meta = group.get("metadata") or {}
    owner_uid, _ = _controller(meta)
    return PodGroupInfo(name=str(meta.get("name", "")), uid=str(meta.get("uid", "")), owner_uid=owner_uid,
                        phase=str((group.get("status") or {}).get("phase") or ""),
                        deleting=bool(meta.get("deletionTimestamp")))


def priority_value(priority_class: Mapping[str, Any]) -> tuple[str, int]:
    """(name, value) of a PriorityClass, for PodGroup minResources ordering."""
    return str((priority_class.get("metadata") or {}).get("name", "")), int(priority_class.get("value") or 0)


def node_info(node: Mapping[str, Any]) -> NodeInfo:
    return NodeInfo.from_api(node)


def node_significance(node: NodeInfo) -> Hashable:
    """What a node update must change to matter (L7): heartbeats alone never wake a job."""
    return (
        tuple(sorted(node.labels.items())),
        node.taints,
        node.unschedulable,
        tuple(sorted(node.allocatable.items())),
    )
