"""Builders for the TFJob unit tests: manifests, specs, records, observed children, a tiny cluster.

`TFCluster` applies plans the way the executor would (deletes, then creates, then
the status write); created pods start Pending and tests move them along.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from airflow_broadcast.reconcilers.observed import ContainerExit, JobRecord, PodGroupInfo, PodInfo, ServiceInfo
from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.reconcilers.tf_job.reconciler import TFJobOptions, reconcile_tf_job
from airflow_broadcast.specs.tf_job import parse_tf_job
from airflow_broadcast.specs.tf_job.spec import (
    LABEL_JOB_NAME,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    OPERATOR_NAME,
    TFJobSpec,
)

UID = "job-uid-1"
NOW = 1_800_000_000.0


def container(name: str = "tensorflow", image: str = "tensorflow/tensorflow:2.9.1", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def replica(replicas: int | None = 1, restart_policy: str | None = None, containers: list[Any] | None = None,
            **template_spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"template": {"spec": {"containers": [container()] if containers is None else containers,
                                           **template_spec}}}
    if replicas is not None:
        body["replicas"] = replicas
    if restart_policy is not None:
        body["restartPolicy"] = restart_policy
    return body


def manifest(name: str = "mnist", namespace: str | None = "kubeflow", replicas: dict[str, Any] | None = None, *,
             restart_policy: str | None = None, run_policy: dict[str, Any] | None = None,
             **spec_fields: Any) -> dict[str, Any]:
    """A TFJob manifest; `replicas` maps type → count (or a full replica dict)."""
    specs = {}
    for kind, value in (replicas if replicas is not None else {"Worker": 1}).items():
        specs[kind] = value if isinstance(value, dict) or value is None else replica(value, restart_policy)
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    spec: dict[str, Any] = {"tfReplicaSpecs": specs, **spec_fields}
    if run_policy is not None:
        spec["runPolicy"] = run_policy
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": metadata, "spec": spec}


def make_spec(name: str = "mnist", namespace: str | None = "kubeflow", replicas: dict[str, Any] | None = None,
              *, strict: bool = True, **kwargs: Any) -> TFJobSpec:
    return parse_tf_job(manifest(name, namespace, replicas, **kwargs), strict=strict)


def make_record(spec: TFJobSpec, status: dict[str, Any] | None = None, *, uid: str = UID,
                deleting: bool = False) -> JobRecord:
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": f"{spec.name}-record", "uid": uid,
             "controller": True, "blockOwnerDeletion": True}
    return JobRecord(spec.name, spec.namespace, uid, owner, status or {}, {}, deleting)


def child_labels(job: str, rtype: str, index: int | str) -> dict[str, str]:
    return {LABEL_OPERATOR_NAME: OPERATOR_NAME, LABEL_JOB_NAME: job, LABEL_REPLICA_TYPE: rtype.lower(),
            LABEL_REPLICA_INDEX: str(index)}


def make_pod(job: str, rtype: str, index: int | str, phase: str = "Running", *, uid: str | None = None,
             deleting: bool = False, restarts: int = 0, exit_code: int | None = None, exit_reason: str = "",
             exit_message: str = "", exits: tuple[ContainerExit, ...] | None = None, owner_uid: str = UID,
             restart_policy: str = "Never", waiting_reason: str = "", pending_message: str = "",
             created_at: float = NOW, labels: dict[str, str] | None = None, name: str | None = None) -> PodInfo:
    name = name or f"{job}-{rtype.lower()}-{index}"
    if exits is None:
        exits = () if exit_code is None else (ContainerExit("tensorflow", exit_code, exit_reason, exit_message),)
    return PodInfo(name=name, uid=uid or f"uid-{name}", labels=labels or child_labels(job, rtype, index),
                   annotations={}, owner_uid=owner_uid, owner_kind="ConfigMap", node="node-1", phase=phase,
                   deleting=deleting, restart_policy=restart_policy, restarts=restarts, spec={}, exits=exits,
                   waiting_reason=waiting_reason, pending_message=pending_message, created_at=created_at)


def make_service(job: str, rtype: str, index: int | str, *, uid: str | None = None, owner_uid: str = UID,
                 deleting: bool = False) -> ServiceInfo:
    name = f"{job}-{rtype.lower()}-{index}"
    return ServiceInfo(name, uid or f"svc-{name}", child_labels(job, rtype, index), owner_uid, deleting)


def condition_summary(status: dict[str, Any] | None) -> list[tuple[str, str]]:
    return [(c["type"], c["status"]) for c in (status or {}).get("conditions", [])]


def env_value(pod: dict[str, Any], name: str = "TF_CONFIG") -> str | None:
    for c in pod["spec"]["containers"]:
        for env in c.get("env") or []:
            if env["name"] == name:
                return str(env["value"])
    return None


class TFCluster:
    """An in-memory cluster holding one job's record and children; `step()` = reconcile + apply."""

    def __init__(self, spec: TFJobSpec, *, status: dict[str, Any] | None = None,
                 options: TFJobOptions | None = None, now: float = NOW) -> None:
        self.spec = spec
        self.options = options or TFJobOptions()
        self.record = make_record(spec, status)
        self.pods: dict[str, PodInfo] = {}
        self.services: dict[str, ServiceInfo] = {}
        self.pod_groups: dict[str, PodGroupInfo] = {}
        self.priorities: dict[str, int] = {}
        self.now = now
        self._serial = 0

    @property
    def status(self) -> dict[str, Any]:
        return dict(self.record.status)

    def reconcile(self, now: float | None = None) -> Plan:
        if now is not None:
            self.now = now
        return reconcile_tf_job(self.spec, self.record, list(self.pods.values()), list(self.services.values()),
                                self.now, self.options, pod_groups=list(self.pod_groups.values()),
                                priorities=self.priorities)

    def apply(self, plan: Plan) -> None:
        for delete in plan.deletes:
            store: dict[str, Any] = {"Pod": self.pods, "Service": self.services, "PodGroup": self.pod_groups}[
                delete.kind]
            if delete.name in store and (not delete.uid or store[delete.name].uid == delete.uid):
                del store[delete.name]
        for group in plan.create_objects:
            name = group["metadata"]["name"]
            if name not in self.pod_groups:
                self.pod_groups[name] = PodGroupInfo(name, f"pg-{name}", group["metadata"]["ownerReferences"][0]["uid"],
                                                     "", False)
        for pod in plan.create_pods:
            name = pod["metadata"]["name"]
            if name not in self.pods:
                self._serial += 1
                self.pods[name] = PodInfo(
                    name=name, uid=f"uid-{name}-{self._serial}", labels=dict(pod["metadata"]["labels"]),
                    annotations=dict(pod["metadata"].get("annotations") or {}),
                    owner_uid=pod["metadata"]["ownerReferences"][0]["uid"], owner_kind="ConfigMap", node="",
                    phase="Pending", deleting=False, restart_policy=pod["spec"]["restartPolicy"], restarts=0,
                    spec=copy.deepcopy(pod["spec"]), created_at=self.now)
        for service in plan.create_services:
            name = service["metadata"]["name"]
            if name not in self.services:
                self.services[name] = ServiceInfo(name, f"svc-{name}", dict(service["metadata"]["labels"]),
                                                  service["metadata"]["ownerReferences"][0]["uid"], False)
        if plan.status is not None:
            self.record = replace(self.record, status=copy.deepcopy(plan.status))
        if plan.record_annotations:
            annotations = {**self.record.annotations, **plan.record_annotations}
            self.record = replace(self.record, annotations={k: v for k, v in annotations.items() if v is not None})

    def step(self, now: float | None = None) -> Plan:
        plan = self.reconcile(now)
        self.apply(plan)
        return plan

    def set_pod(self, name: str, phase: str | None = None, **changes: Any) -> None:
        if "exit_code" in changes:
            code = changes.pop("exit_code")
            changes["exits"] = (ContainerExit("tensorflow", code, changes.pop("exit_reason", ""),
                                              changes.pop("exit_message", "")),)
        if phase is not None:
            changes["phase"] = phase
        self.pods[name] = replace(self.pods[name], **changes)

    def set_phase(self, phase: str, rtype: str | None = None, **changes: Any) -> None:
        """Move every pod (of `rtype`, if given) to `phase`; Succeeded pods get a tensorflow exit 0."""
        for name, pod in list(self.pods.items()):
            if rtype is None or pod.labels.get(LABEL_REPLICA_TYPE) == rtype.lower():
                extra = dict(changes)
                if phase == "Succeeded" and "exit_code" not in extra:
                    extra["exit_code"] = 0
                self.set_pod(name, phase, **extra)

    def replace_spec(self, spec: TFJobSpec) -> None:
        self.spec = spec
