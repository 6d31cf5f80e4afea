"""TFJob children: names, labels, the Pod and headless Service of one replica, and what a pod tells.

Names are deterministic (`<job>-<type>-<index>`, §2.3), so a repeated create is an
AlreadyExists the executor counts as done. Every child carries the job record's
ownerReference (deleting the record garbage-collects the children) and the
`airflow-broadcast.io/job-uid` label the shared watch selects on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from airflow_broadcast.reconcilers.json_copy import clone
from airflow_broadcast.reconcilers.observed import RECORD_UID_LABEL, ContainerExit, JobRecord, PodInfo, ServiceInfo
from airflow_broadcast.reconcilers.plan import JobEvent
from airflow_broadcast.reconcilers.tf_job.cluster_config import TFConfigRenderer
from airflow_broadcast.specs.tf_job.spec import (
    CHIEF_OR_MASTER,
    CONTAINER_NAME,
    LABEL_JOB_NAME,
    LABEL_JOB_ROLE,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    OPERATOR_NAME,
    RESTART_EXIT_CODE,
    RESTART_NEVER,
    WORKER,
    TFJobSpec,
)

TF_CONFIG_ENV = "TF_CONFIG"
NO_EXIT_CODE = 0xBEEF  # upstream's "no terminated tensorflow container" marker (48879)
MAX_WARNING_LENGTH = 512
MAX_POD_WARNINGS = 20


def child_name(job_name: str, replica_type: str, index: int) -> str:
    """`GenGeneralName`: `<job>-<lowercase type>-<index>`, `/` replaced by `-` (C1)."""
    return f"{job_name}-{replica_type.lower()}-{index}".replace("/", "-")


def job_selector(job_name: str) -> dict[str, str]:
    """The labels upstream lists children by."""
    return {LABEL_OPERATOR_NAME: OPERATOR_NAME, LABEL_JOB_NAME: job_name}


def replica_labels(job_name: str, replica_type: str, index: int) -> dict[str, str]:
    """The four controller labels: also the Service selector (C2, C7)."""
    return {**job_selector(job_name), LABEL_REPLICA_TYPE: replica_type.lower(), LABEL_REPLICA_INDEX: str(index)}


def is_master_role(spec: TFJobSpec, replica_type: str, index: int) -> bool:
    """Every Chief/Master pod if the job has one, else worker 0 (C3)."""
    if spec.has_chief_or_master:
        return replica_type in CHIEF_OR_MASTER
    return replica_type == WORKER and index == 0


def replica_index(labels: Mapping[str, str]) -> int | None:
    """The `replica-index` label as a non-negative int, or None when absent or unparsable (E5)."""
    value = labels.get(LABEL_REPLICA_INDEX, "")
    return int(value) if value.isascii() and value.isdigit() else None


def by_replica_type(children: Sequence[Any]) -> dict[str, list[Any]]:
    """Children (pods or services) by their lowercase `replica-type` label."""
    grouped: dict[str, list[Any]] = {}
    for child in children:
        grouped.setdefault(child.labels.get(LABEL_REPLICA_TYPE, ""), []).append(child)
    return grouped


def index_slices(children: Sequence[PodInfo]) -> dict[int, list[PodInfo]]:
    """Pods by replica index; pods without a usable index are left out (E5)."""
    slices: dict[int, list[PodInfo]] = {}
    for child in children:
        index = replica_index(child.labels)
        if index is not None:
            slices.setdefault(index, []).append(child)
    return slices


def pod_restart_policy(replica_policy: str) -> str:
    """The pod's own policy: `ExitCode` is enforced by the controller, so the pod gets `Never` (C9)."""
    return RESTART_NEVER if replica_policy == RESTART_EXIT_CODE else replica_policy


def tensorflow_container(template: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for container in (template.get("spec") or {}).get("containers") or []:
        if container.get("name") == CONTAINER_NAME:
            return container  # type: ignore[no-any-return]
    return None


def build_pod(spec: TFJobSpec, record: JobRecord, replica_type: str, index: int, *,
              cluster_domain: str = "", renderer: TFConfigRenderer | None = None) -> dict[str, Any]:
    """The Pod of one replica (§2.4): template copy, merged labels, owner ref, policy, TF_CONFIG."""
    template = spec.replica_specs[replica_type].template
    meta = template.get("metadata") or {}
    labels = dict(meta.get("labels") or {})
    labels.update(replica_labels(spec.name, replica_type, index))
    if is_master_role(spec, replica_type, index):
        labels[LABEL_JOB_ROLE] = "master"
    labels[RECORD_UID_LABEL] = record.uid
    metadata: dict[str, Any] = {"name": child_name(spec.name, replica_type, index), "namespace": spec.namespace,
                                "labels": labels}
    if meta.get("annotations"):
        metadata["annotations"] = dict(meta["annotations"])
    if meta.get("finalizers"):
        metadata["finalizers"] = list(meta["finalizers"])
    metadata["ownerReferences"] = [dict(record.owner_reference)]
    pod_spec: dict[str, Any] = clone(template.get("spec") or {})
    pod_spec["restartPolicy"] = pod_restart_policy(spec.replica_specs[replica_type].restart_policy)
    renderer = renderer or TFConfigRenderer(spec, cluster_domain)
    tf_config = renderer.render(replica_type, index)
    if tf_config is not None:
        for container in pod_spec.get("containers") or []:
            if container.get("name") == CONTAINER_NAME:
                container["env"] = [*(container.get("env") or []), {"name": TF_CONFIG_ENV, "value": tf_config}]
                break
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def build_service(spec: TFJobSpec, record: JobRecord, replica_type: str, index: int) -> dict[str, Any]:
    """The headless Service of one replica (§2.6); ValueError when there is no `tensorflow` container."""
    container = tensorflow_container(spec.replica_specs[replica_type].template)
    if container is None:
        raise ValueError("failed to find the port")
    selector = replica_labels(spec.name, replica_type, index)
    service_spec: dict[str, Any] = {"clusterIP": "None", "selector": dict(selector)}
    ports = [{"name": p.get("name"), "port": p.get("containerPort")} for p in container.get("ports") or []]
    if ports:
        service_spec["ports"] = ports
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": child_name(spec.name, replica_type, index),
            "namespace": spec.namespace,
            "labels": {**selector, RECORD_UID_LABEL: record.uid},
            "ownerReferences": [dict(record.owner_reference)],
        },
        "spec": service_spec,
    }


class ServicePlan(NamedTuple):
    """`ReconcileServices` for one type: what to create and delete, and what stopped creation."""

    creates: list[dict[str, Any]]
    extra: list[ServiceInfo]  # past `replicas`: deleted
    error: str  # what stopped creation ("" if nothing did)
    more: bool  # missing Services left beyond `limit`, for a later pass


def plan_services(spec: TFJobSpec, record: JobRecord, replica_type: str, services: Sequence[ServiceInfo],
                  limit: int | None = None) -> ServicePlan:
    """Services to create (missing indexes below `replicas`, at most `limit` of them, lowest indexes
    first) and Services past `replicas` to delete."""
    replicas = spec.replica_specs[replica_type].replicas
    present: set[int] = set()
    extra: list[ServiceInfo] = []
    for service in services:
        index = replica_index(service.labels)
        if index is None or service.labels.get(LABEL_REPLICA_TYPE) != replica_type.lower():
            continue
        present.add(index)
        if index >= replicas:
            extra.append(service)
    creates: list[dict[str, Any]] = []
    for index in range(replicas):
        if index in present:
            continue
        if limit is not None and len(creates) >= limit:
            return ServicePlan(creates, extra, "", True)
        try:
            creates.append(build_service(spec, record, replica_type, index))
        except ValueError as exc:
            return ServicePlan(creates, extra, str(exc), False)
    return ServicePlan(creates, extra, "", False)


# ---- reading observed pods ----------------------------------------------------------------------

def tensorflow_exit(pod: PodInfo) -> ContainerExit | None:
    """The terminated state of the `tensorflow` container, if it has one."""
    for exit_ in pod.exits:
        if exit_.container == CONTAINER_NAME:
            return exit_
    return None


def exit_code(pod: PodInfo) -> int:
    """The `tensorflow` exit code, or 0xbeef when it has not terminated (E9, Q11)."""
    exit_ = tensorflow_exit(pod)
    return NO_EXIT_CODE if exit_ is None else exit_.exit_code


def is_restartable(replica_policy: str, code: int) -> bool:
    """Failed pods restart under OnFailure/Always, and under ExitCode when the code is ≥ 128 (E6, E7)."""
    return replica_policy in ("OnFailure", "Always") or (replica_policy == RESTART_EXIT_CODE and code >= 128)


def abnormal_pod_warning(pod: PodInfo) -> tuple[str, str] | None:
    """(reason, message) of a Warning for an active pod that is not healthy, else None (E14).

    Mirrors upstream `RecordAbnormalPods`, in its words: a container terminated non-zero, else a
    container waiting with a message, else, while no container has a status, the pod's latest
    condition when it is not True (its reason, e.g. `Unschedulable`, is the event's reason).
    Upstream warns once per such container; this reports the pod's first.
    """
    for exit_ in pod.exits:
        if exit_.exit_code != 0:
            return exit_.reason or "Error", _clip(
                f"Error pod {pod.name} container {exit_.container} exitCode: {exit_.exit_code} "
                f"terminated message: {exit_.message}")
    if pod.waiting is not None:
        return pod.waiting.reason or "Waiting", _clip(
            f"Error pod {pod.name} container {pod.waiting.container} waiting message: {pod.waiting.message}")
    if pod.condition_warning is not None:
        reason, message = pod.condition_warning
        return reason or "PodPending", _clip(f"Error pod {pod.name} condition message: {message}")
    return None


def terminating_warning(pod: PodInfo) -> tuple[str, str]:
    """A pod deleted while running: it counts as failed, and if its node is gone it may never leave."""
    return "PodTerminating", _clip(
        f"Pod {pod.name} is terminating while it was running; it counts as failed. If its node is "
        "unreachable it stays Terminating until the node returns or the pod is force-deleted")


def failure_summary(replica_type: str, index: int | None, pod: PodInfo | None, reason: str,
                    message: str) -> dict[str, Any]:
    """The `failure` status key (N10): which replica failed, its exit code and why.

    The pod's details replace `reason`/`message` only when that pod failed (a backoff
    culprit still running keeps BackoffLimitExceeded). A Failed pod without a terminated
    `tensorflow` container (eviction, node loss) reports `waiting_reason`/`pending_message`,
    which the cluster layer fills from the pod's `status.reason`/`status.message`.
    """
    summary: dict[str, Any] = {"replicaType": replica_type or None, "index": index,
                               "pod": pod.name if pod else None, "exitCode": None,
                               "reason": reason, "message": message}
    if pod is None or not (pod.phase == "Failed" or (pod.deleting and not pod.terminal)):
        return summary
    exit_ = tensorflow_exit(pod) or pod.final_exit()
    if exit_ is not None:
        summary["exitCode"] = exit_.exit_code
    if pod.phase == "Failed" and pod.waiting_reason and not pod.failed_in_init:
        summary["reason"] = pod.waiting_reason
        summary["message"] = _clip(pod.pending_message or message)
    elif exit_ is not None:
        summary["reason"] = exit_.reason or reason
        summary["message"] = _clip(exit_.message or message)
        if pod.failed_in_init:
            summary["container"] = exit_.container  # whose log tells why
    elif not pod.terminal:
        summary["reason"] = "Terminating"
    return summary


def _clip(text: str) -> str:
    return text if len(text) <= MAX_WARNING_LENGTH else text[: MAX_WARNING_LENGTH - 3] + "..."


def merge_pod_warnings(previous: Mapping[str, str], warnings: Mapping[str, tuple[str, str]]
                       ) -> tuple[dict[str, str], list[JobEvent]]:
    """The new `podWarnings` (at most 20, by pod name) and a Warning event for each new or changed one."""
    current = dict(sorted(warnings.items())[:MAX_POD_WARNINGS])
    events = [JobEvent("Warning", reason, message) for name, (reason, message) in current.items()
              if previous.get(name) != message]
    return {name: message for name, (_, message) in current.items()}, events
