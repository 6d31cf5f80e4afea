"""BroadcastJob children: which observed pods are ours, how they count, and what a new pod looks like."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_broadcast.reconcilers.json_copy import clone
from airflow_broadcast.reconcilers.observed import RECORD_UID_LABEL, JobRecord, PodInfo
from airflow_broadcast.reconcilers.plan import JobEvent
from airflow_broadcast.specs.broadcast_job.spec import JOB_NAME_LABEL, JOB_UID_LABEL

NODE_ANNOTATION = "airflow-broadcast.io/node"
ATTEMPT_ANNOTATION = "airflow-broadcast.io/attempt"
TEMPLATE_ANNOTATION = "airflow-broadcast.io/template-hash"  # V18, with spec.rerunOnTemplateChange only
NODE_HASH_LENGTH = 10
POD_NAME_MAX_LENGTH = 63  # a DNS-1123 label, as generated names are
UNSCHEDULABLE_REASON = "Unschedulable"


def pod_name_for(job_name: str, record_uid: str, node_name: str) -> str:
    """Deterministic pod name `<job>-<10 hex of sha256(uid/node)>`, so a repeated create is a 409 (P11).

    The record uid is in the hash so that a new run of the same job never collides with
    pods of the previous run that garbage collection has not removed yet. Like the API
    server's `generateName`, a long job name is cut (never the hash) so that the pod name
    stays a 63-character DNS label, usable as the pod's hostname; the full job name is
    in the `broadcastjob-name` label.
    """
    digest = hashlib.sha256(f"{record_uid}/{node_name}".encode()).hexdigest()[:NODE_HASH_LENGTH]
    prefix = job_name[:POD_NAME_MAX_LENGTH - NODE_HASH_LENGTH - 1].rstrip("-")
    return f"{prefix}-{digest}"


def is_owned(pod: PodInfo, job_name: str, record_uid: str, owner_kind: str | None = None) -> bool:
    """Both reserved labels with our values and a controller ownerRef to the record (P7).

    Like upstream's controllerRef check, the ref must name the owner's kind as well as its
    uid when `owner_kind` is given.
    """
    return (
        pod.labels.get(JOB_NAME_LABEL) == job_name
        and pod.labels.get(JOB_UID_LABEL) == record_uid
        and pod.owner_uid == record_uid
        and (owner_kind is None or pod.owner_kind == owner_kind)
    )


def attempt_of(pod: PodInfo) -> int:
    """The attempt number the pod was created with (P12); 1 for pods without the annotation."""
    try:
        return max(1, int(pod.annotations.get(ATTEMPT_ANNOTATION, "1")))
    except ValueError:
        return 1


def unschedulable_detail(pod: PodInfo) -> str | None:
    """The scheduler's message for a Pending pod it could not place (L11), else None."""
    message = pod.pending_message  # "<PodScheduled reason>: <message>", as the cluster layer writes it
    if pod.phase != "Pending" or pod.deleting or message.partition(":")[0] != UNSCHEDULABLE_REASON:
        return None
    return message.partition(":")[2].strip()


def restart_failed(pod: PodInfo, restart_limit: int) -> bool:
    """OnFailure pods whose summed container restarts exceed the limit count as failed (F1-F3)."""
    return pod.restart_policy == "OnFailure" and pod.restarts > restart_limit


def bucket_of(pod: PodInfo, restart_limit: int) -> str:
    """filterPods (§3.3): succeeded, failed (or past the restart limit), active, or "" (terminating)."""
    if pod.phase in ("Succeeded", "Failed"):
        return pod.phase.lower()
    if pod.deleting:
        return ""
    return "failed" if restart_failed(pod, restart_limit) else "active"


def running_progress(old: PodInfo, new: PodInfo) -> bool:
    """A live pod that started running (or changed while running) in a way no decision reads.

    Active, succeeded and failed counts stay as they were, so a pass could only move the node's shown
    phase, which is a count-only write and waits a second anyway (ProgressWrites). Anything a pass
    decides on (an exit, a waiting container, restarts, deletion, the node, ownership, the placement
    fields) makes the change count at once.
    """
    return (new.phase == "Running" and old.phase in ("Pending", "Running") and not new.deleting
            and not old.deleting and not new.exits and not new.waiting_reason and new.waiting is None
            and new.restarts == old.restarts and new.node == old.node and new.owner_uid == old.owner_uid
            and new.labels == old.labels and new.annotations == old.annotations and new.spec == old.spec)


def map_pods_to_nodes(pods: Sequence[PodInfo]) -> tuple[dict[str, PodInfo], list[JobEvent]]:
    """node → pod (last one wins, as upstream) and a Warning for every duplicate (P9)."""
    by_node: dict[str, PodInfo] = {}
    events: list[JobEvent] = []
    for pod in pods:
        if not pod.node:
            continue
        if pod.node in by_node:
            events.append(JobEvent("Warning", "DuplicatePodCreatedOnSameNode",
                                   f"Duplicated pod {pod.name} found on same node {pod.node}"))
        by_node[pod.node] = pod
    return by_node, events


def pin_to_node(spec: dict[str, Any], node_name: str, by_scheduler: bool) -> None:
    """Scheduler mode replaces the required node affinity with one name pin (P4); else nodeName (P5)."""
    if not by_scheduler:
        spec["nodeName"] = node_name
        return
    affinity = spec.setdefault("affinity", {}) or {}
    spec["affinity"] = affinity
    node_affinity = affinity.setdefault("nodeAffinity", {}) or {}
    affinity["nodeAffinity"] = node_affinity
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
        ]
    }


def template_hash(template: Mapping[str, Any]) -> str:
    """16 hex of sha256 of the template's canonical JSON: the same for every pass that reads the same template."""
    text = json.dumps(template, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def build_pod(job_name: str, namespace: str, template: Mapping[str, Any], record: JobRecord,
              node_name: str, by_scheduler: bool, attempt: int = 1, template_id: str | None = None) -> dict[str, Any]:
    """The pod for one node: template labels/annotations/finalizers + reserved labels, owner ref, pin."""
    meta = template.get("metadata") or {}
    labels = dict(meta.get("labels") or {})
    labels.update({JOB_NAME_LABEL: job_name, JOB_UID_LABEL: record.uid, RECORD_UID_LABEL: record.uid})
    annotations = dict(meta.get("annotations") or {})
    annotations.update({NODE_ANNOTATION: node_name, ATTEMPT_ANNOTATION: str(attempt)})
    if template_id is not None:
        annotations[TEMPLATE_ANNOTATION] = template_id
    metadata: dict[str, Any] = {
        "name": pod_name_for(job_name, record.uid, node_name),
        "generateName": f"{job_name}-",
        "namespace": namespace,
        "labels": labels,
        "annotations": annotations,
        "ownerReferences": [dict(record.owner_reference)],
    }
    if meta.get("finalizers"):
        metadata["finalizers"] = list(meta["finalizers"])
    spec = clone(template.get("spec") or {})
    pin_to_node(spec, node_name, by_scheduler)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def node_result(pod: PodInfo) -> dict[str, Any]:
    """The per-node line of the status and the XCom (S11)."""
    exit_ = pod.final_exit()
    result: dict[str, Any] = {"pod": pod.name, "phase": "Terminating" if pod.deleting and not pod.terminal
                              else pod.phase or "Pending",
                              "restarts": pod.restarts, "attempt": attempt_of(pod)}
    if TEMPLATE_ANNOTATION in pod.annotations:
        result["template"] = pod.annotations[TEMPLATE_ANNOTATION]
    if exit_ is not None and pod.terminal:
        result["exitCode"] = exit_.exit_code
        result["reason"] = exit_.reason
        if pod.failed_in_init:
            result["container"] = exit_.container  # whose log tells why
        if exit_.message:
            result["message"] = exit_.message[:500]
    elif pod.waiting_reason:
        result["reason"] = pod.waiting_reason
    elif unschedulable_detail(pod) is not None:
        result["reason"] = UNSCHEDULABLE_REASON
    if pod.pending_message and pod.phase == "Pending":
        result["message"] = pod.pending_message[:500]
    return result
