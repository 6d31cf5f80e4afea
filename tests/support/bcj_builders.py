"""Builders for the BroadcastJob reconciler tests: specs, records, nodes, observed pods, a tiny cluster.

Pods are built the way they exist in a real cluster: `build_pod` makes the manifest the
executor would POST (pinned with the matchFields term), the test adds metadata and
status as the API server and kubelet would, and `pod_info` (the cluster layer's own
converter) turns it into the PodInfo the reconciler reads.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from airflow_broadcast.cluster.observation import pod_info
from airflow_broadcast.reconcilers.broadcast_job.pods import build_pod
from airflow_broadcast.reconcilers.broadcast_job.reconciler import BroadcastOptions, reconcile_broadcast_job
from airflow_broadcast.reconcilers.observed import JobRecord, NodeInfo, PodInfo, Taint
from airflow_broadcast.reconcilers.plan import JobEvent, Plan
from airflow_broadcast.specs.broadcast_job import BroadcastJobSpec, parse_broadcast_job
from airflow_broadcast.specs.timestamps import to_rfc3339

NAME = "bcj"
NAMESPACE = "ops"
UID = "record-uid-1"
NOW = 1_800_000_000.0
ROOMY = {"pods": "110", "cpu": "4", "memory": "8Gi", "ephemeral-storage": "100Gi"}
COMPAT = BroadcastOptions(kruise_compat=True)
FIXED = BroadcastOptions()
MODES = {"fixed": FIXED, "compat": COMPAT}
CONTAINER = {"name": "main", "image": "busybox:1.36", "command": ["true"]}


# ---- spec and record ---------------------------------------------------------------------------
def manifest(*, name: str = NAME, namespace: str = NAMESPACE, parallelism: int | str | None = None,
             completion: str | None = None, ads: int | None = None, ttl: int | None = None,
             failure: str | None = None, restart_limit: int | None = None, paused: bool | None = None,
             max_failed_nodes: int | str | None = None, backoff_limit_per_node: int | None = None,
             restart_policy: str = "Never", pod_spec: Mapping[str, Any] | None = None,
             template_labels: Mapping[str, str] | None = None,
             template_annotations: Mapping[str, str] | None = None,
             finalizers: Sequence[str] | None = None) -> dict[str, Any]:
    """A BroadcastJob manifest; only the fields given are set, so the parser's defaults apply."""
    template_spec: dict[str, Any] = {"containers": [dict(CONTAINER)], "restartPolicy": restart_policy,
                                     **copy.deepcopy(dict(pod_spec or {}))}
    template_meta: dict[str, Any] = {}
    if template_labels is not None:
        template_meta["labels"] = dict(template_labels)
    if template_annotations is not None:
        template_meta["annotations"] = dict(template_annotations)
    if finalizers is not None:
        template_meta["finalizers"] = list(finalizers)
    template: dict[str, Any] = {"spec": template_spec}
    if template_meta:
        template["metadata"] = template_meta
    spec: dict[str, Any] = {"template": template}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    completion_policy = {k: v for k, v in (("type", completion), ("activeDeadlineSeconds", ads),
                                           ("ttlSecondsAfterFinished", ttl)) if v is not None}
    if completion_policy:
        spec["completionPolicy"] = completion_policy
    failure_policy = {k: v for k, v in (("type", failure), ("restartLimit", restart_limit),
                                        ("maxFailedNodes", max_failed_nodes),
                                        ("backoffLimitPerNode", backoff_limit_per_node)) if v is not None}
    if failure_policy:
        spec["failurePolicy"] = failure_policy
    if paused is not None:
        spec["paused"] = paused
    return {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def make_spec(**overrides: Any) -> BroadcastJobSpec:
    """`parse_broadcast_job(manifest(**overrides))`: validated and defaulted like a submitted job."""
    return parse_broadcast_job(manifest(**overrides))


def unchecked(spec: BroadcastJobSpec, **changes: Any) -> BroadcastJobSpec:
    """A spec validation would refuse (V13/V14/V16), as upstream would still run it.

    `completion_type`, `ads`, `ttl`, `failure_type`, `restart_limit` change the policies;
    any other keyword replaces the spec field of that name.
    """
    completion = spec.completion_policy
    failure = spec.failure_policy
    if "ttl" in changes:
        completion = replace(completion, ttl_seconds_after_finished=changes.pop("ttl"))
    if "completion_type" in changes:
        completion = replace(completion, type=changes.pop("completion_type"))
    if "ads" in changes:
        completion = replace(completion, active_deadline_seconds=changes.pop("ads"))
    if "failure_type" in changes:
        failure = replace(failure, type=changes.pop("failure_type"))
    if "restart_limit" in changes:
        failure = replace(failure, restart_limit=changes.pop("restart_limit"))
    return replace(spec, completion_policy=completion, failure_policy=failure, **changes)


def owner_reference(uid: str = UID, name: str = NAME) -> dict[str, Any]:
    """The ownerReference every child carries: the job record (a ConfigMap)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid,
            "controller": True, "blockOwnerDeletion": True}


def make_record(status: Mapping[str, Any] | None = None, annotations: Mapping[str, str] | None = None,
                deleting: bool = False, *, uid: str = UID, name: str = NAME,
                namespace: str = NAMESPACE) -> JobRecord:
    return JobRecord(name=name, namespace=namespace, uid=uid, owner_reference=owner_reference(uid, name),
                     status=copy.deepcopy(dict(status or {})), annotations=dict(annotations or {}),
                     deleting=deleting)


def started_status(start: float = NOW - 10, phase: str = "running", **counts: Any) -> dict[str, Any]:
    """The persisted status of a job that has had at least one pass."""
    return {"startTime": to_rfc3339(start), "phase": phase, "active": 0, "succeeded": 0, "failed": 0,
            "desired": 0, **counts}


# ---- nodes -------------------------------------------------------------------------------------
def make_node(name: str, labels: Mapping[str, str] | None = None,
              taints: Iterable[Taint | tuple[str, str, str]] = (), unschedulable: bool = False,
              allocatable: Mapping[str, str] | None = None) -> NodeInfo:
    """A node as `NodeInfo.from_api` reads it; roomy allocatable unless given."""
    return NodeInfo(name=name, labels=dict(labels or {}),
                    taints=tuple(t if isinstance(t, Taint) else Taint(*t) for t in taints),
                    unschedulable=unschedulable, allocatable=dict(ROOMY if allocatable is None else allocatable))


def make_nodes(count: int, prefix: str = "node", **kwargs: Any) -> list[NodeInfo]:
    return [make_node(f"{prefix}-{i:02d}", **kwargs) for i in range(count)]


# ---- pods --------------------------------------------------------------------------------------
def pod_manifest(node: str, spec: BroadcastJobSpec | None = None, record: JobRecord | None = None, *,
                 by_scheduler: bool = True, attempt: int = 1) -> dict[str, Any]:
    """Exactly what the executor would POST for `node`."""
    spec = spec or make_spec()
    record = record or make_record()
    body: dict[str, Any] = build_pod(spec.name, record.namespace, spec.template, record, node, by_scheduler,
                                     attempt)
    return body


def make_pod(node: str, phase: str = "Running", *, spec: BroadcastJobSpec | None = None,
             record: JobRecord | None = None, restarts: int = 0, init_restarts: int = 0,
             restart_policy: str | None = None, deleting: bool = False, exit_code: int | None = None,
             exit_reason: str = "", owned: bool = True, labels: Mapping[str, str | None] | None = None,
             by_scheduler: bool = True, name: str | None = None, uid: str | None = None,
             unschedulable: str | None = None, waiting_reason: str | None = None, attempt: int = 1,
             created_at: float = NOW - 5, spec_changes: Mapping[str, Any] | None = None) -> PodInfo:
    """An observed pod created by `build_pod` for `node`, then moved to `phase` by the kubelet.

    `owned=False` drops the controller ownerRef (an orphan); `labels` overrides labels
    (None removes one); `unschedulable` adds a PodScheduled=False condition with that
    message; `spec_changes` edits the pod spec after pinning (e.g. a nodeSelector).
    """
    body = pod_manifest(node, spec, record, by_scheduler=by_scheduler, attempt=attempt)
    meta = body["metadata"]
    if name is not None:
        meta["name"] = name
    meta["uid"] = uid or f"uid-{meta['name']}"
    meta["creationTimestamp"] = to_rfc3339(created_at)
    if deleting:
        meta["deletionTimestamp"] = to_rfc3339(created_at + 1)
    if not owned:
        meta["ownerReferences"] = []
    for key, value in (labels or {}).items():
        if value is None:
            meta["labels"].pop(key, None)
        else:
            meta["labels"][key] = value
    if restart_policy is not None:
        body["spec"]["restartPolicy"] = restart_policy
    body["spec"].update(copy.deepcopy(dict(spec_changes or {})))
    status: dict[str, Any] = {"phase": phase}
    state: dict[str, Any] = {"running": {}}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "reason": exit_reason or ("Completed" if exit_code == 0
                                                                                   else "Error")}}
    elif phase == "Succeeded":
        state = {"terminated": {"exitCode": 0, "reason": "Completed"}}
    elif phase == "Failed":
        state = {"terminated": {"exitCode": 1, "reason": "Error"}}
    elif phase == "Pending":
        state = {"waiting": {"reason": waiting_reason or "ContainerCreating"}}
    if phase != "Pending" or waiting_reason:
        status["containerStatuses"] = [{"name": "main", "restartCount": restarts, "state": state}]
        if init_restarts:
            status["initContainerStatuses"] = [{"name": "init", "restartCount": init_restarts,
                                                "state": {"terminated": {"exitCode": 0}}}]
    if unschedulable is not None:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "message": unschedulable}]
    body["status"] = status
    return pod_info(body)


# ---- applying plans ----------------------------------------------------------------------------
def attempted_creates(plan: Plan) -> int:
    return len(plan.create_pods) if plan.create_limit is None else min(plan.create_limit, len(plan.create_pods))


def simulate(plan: Plan, record: JobRecord, created: int | None = None) -> JobRecord:
    """The record after the executor applied `plan`, with `created` successful creates (default: all)."""
    attempted = attempted_creates(plan)
    made = attempted if created is None else created
    not_created = [p["metadata"]["name"] for p in plan.create_pods[made:]]
    written = plan.status_after(made, attempted, not_created)
    status = copy.deepcopy(dict(record.status if written is None else written))
    annotations = dict(record.annotations)
    for key, value in plan.record_annotations.items():
        if value is None:
            annotations.pop(key, None)
        else:
            annotations[key] = value
    return replace(record, status=status, annotations=annotations)


def status_of(plan: Plan) -> dict[str, Any]:
    """The status the plan writes (it must write one)."""
    status = plan.status
    assert status is not None, "the plan writes no status"
    return dict(status)


def reasons(plan: Plan) -> list[str]:
    return [e.reason for e in plan.events]


def events_of(plan: Plan, reason: str) -> list[JobEvent]:
    return [e for e in plan.events if e.reason == reason]


def created_nodes(plan: Plan) -> list[str]:
    """Target nodes of the pods the executor would create (respecting create_limit)."""
    pods = plan.create_pods[:attempted_creates(plan)]
    return [p["metadata"]["annotations"]["airflow-broadcast.io/node"] for p in pods]


def conditions(status: Mapping[str, Any] | None) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c["reason"]) for c in (status or {}).get("conditions", [])]


class BCJCluster:
    """One job, its nodes and pods in memory; `step()` reconciles and applies like the executor.

    Deleted pods vanish at once; created pods appear Pending (not yet scheduled).
    """

    def __init__(self, spec: BroadcastJobSpec, nodes: Iterable[NodeInfo], *,
                 options: BroadcastOptions = FIXED, status: Mapping[str, Any] | None = None,
                 now: float = NOW) -> None:
        self.spec = spec
        self.options = options
        self.record = make_record(status)
        self.nodes: dict[str, NodeInfo] = {n.name: n for n in nodes}
        self.pods: dict[str, PodInfo] = {}
        self.now = now
        self.plans: list[Plan] = []

    @property
    def status(self) -> dict[str, Any]:
        return dict(self.record.status)

    def reconcile(self) -> Plan:
        return reconcile_broadcast_job(self.spec, self.record, list(self.nodes.values()),
                                       list(self.pods.values()), self.now, self.options)

    def step(self, advance: float = 1.0, fail_creates: int = 0) -> Plan:
        """Advance the clock, reconcile, apply; the last `fail_creates` creates fail."""
        self.now += advance
        plan = self.reconcile()
        for delete in plan.deletes:
            pod = self.pods.get(delete.name)
            if pod is not None and (not delete.uid or pod.uid == delete.uid):
                del self.pods[delete.name]
        attempted = attempted_creates(plan)
        succeeded = max(0, attempted - fail_creates)
        for body in plan.create_pods[:succeeded]:
            if body["metadata"]["name"] not in self.pods:
                self.pods[body["metadata"]["name"]] = self.pod_from(body)
        self.record = simulate(plan, self.record, created=succeeded)
        self.plans.append(plan)
        return plan

    def pod_from(self, body: Mapping[str, Any]) -> PodInfo:
        manifest_ = copy.deepcopy(dict(body))
        manifest_["metadata"]["uid"] = f"uid-{manifest_['metadata']['name']}-{len(self.plans)}"
        manifest_["metadata"]["creationTimestamp"] = to_rfc3339(self.now)
        manifest_["status"] = {"phase": "Pending"}
        return pod_info(manifest_)

    def pod_on(self, node: str) -> PodInfo:
        matches = [p for p in self.pods.values() if p.node == node]
        assert len(matches) == 1, f"{len(matches)} pods on {node}"
        return matches[0]

    def set_phase(self, phase: str, nodes: Iterable[str] | None = None, **changes: Any) -> None:
        """Move the pods on `nodes` (default: all) to `phase`."""
        wanted = None if nodes is None else set(nodes)
        for name, pod in list(self.pods.items()):
            if wanted is None or pod.node in wanted:
                self.pods[name] = replace(pod, phase=phase, **changes)

    def remove_pod(self, node: str) -> None:
        del self.pods[self.pod_on(node).name]
