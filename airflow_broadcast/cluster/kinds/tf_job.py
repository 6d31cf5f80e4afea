"""TFJob as a job kind of the engine: pods and headless services of the namespace, no nodes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_broadcast.cluster.informers import shared_informer
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.observation import (
    PRIORITY_CLASSES_PATH,
    pod_group_info,
    pod_info,
    priority_value,
    service_info,
)
from airflow_broadcast.cluster.plan_executor import ChildEventStyle
from airflow_broadcast.cluster.reconcile_loop import WatchSet
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.reconcilers.tf_job.children import RECORD_UID_LABEL
from airflow_broadcast.reconcilers.tf_job.gang_scheduling import gang_scheduler
from airflow_broadcast.reconcilers.tf_job.reconciler import TFJobOptions, reconcile_tf_job
from airflow_broadcast.specs.tf_job import parse_tf_job

TF_STYLE = ChildEventStyle(create_ok="SuccessfulCreatePod", create_failed="FailedCreatePod",
                           delete_ok="SuccessfulDeletePod", delete_ok_message="Deleted pod: {name}")


@dataclass(frozen=True)
class TFJobDriver:
    options: TFJobOptions = field(default_factory=TFJobOptions)
    kind: str = "TFJob"
    style: ChildEventStyle = TF_STYLE

    def watch(self, client: KubeClient, namespace: str) -> WatchSet:
        pods = shared_informer(client, f"/api/v1/namespaces/{namespace}/pods", pod_info,
                               label_selector=RECORD_UID_LABEL, index_label=RECORD_UID_LABEL)
        services = shared_informer(client, f"/api/v1/namespaces/{namespace}/services", service_info,
                                   label_selector=RECORD_UID_LABEL, index_label=RECORD_UID_LABEL)
        gang = gang_scheduler(self.options.gang_scheduler, self.options.gang_scheduler_name)
        if gang is None:
            return WatchSet(children=pods, services=services)
        pod_groups = shared_informer(client, f"/apis/{gang.api_version}/namespaces/{namespace}/podgroups",
                                     pod_group_info, label_selector=RECORD_UID_LABEL, index_label=RECORD_UID_LABEL)
        priorities = shared_informer(client, PRIORITY_CLASSES_PATH, priority_value)
        return WatchSet(children=pods, services=services, pod_groups=pod_groups, priorities=priorities)

    def reconcile(self, manifest: Mapping[str, Any], record: JobRecord, watched: WatchSet, now: float) -> Plan:
        spec = parse_tf_job(manifest, namespace=record.namespace)
        services = watched.services.items(record.uid) if watched.services is not None else []
        pod_groups = watched.pod_groups.items(record.uid) if watched.pod_groups is not None else []
        priorities = dict(watched.priorities.items()) if watched.priorities is not None else {}
        return reconcile_tf_job(spec, record, watched.children.items(record.uid), services, now, self.options,
                                pod_groups=pod_groups, priorities=priorities)

    def settled(self, manifest: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
        return False

    def is_finished(self, status: Mapping[str, Any]) -> bool:
        return any(c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True"
                   for c in status.get("conditions") or [])

    def summary(self, record: Mapping[str, Any], status: Mapping[str, Any]) -> dict[str, Any]:
        """The XCom of TFJobOperator and TFJobSensor."""
        meta = record.get("metadata") or {}
        conditions = list(status.get("conditions") or [])
        true = [c for c in conditions if c.get("status") == "True"]
        phase = "Failed" if any(c.get("type") == "Failed" for c in true) else (
            true[-1]["type"] if true else "Created")
        return {
            "kind": self.kind,
            "name": (meta.get("labels") or {}).get("airflow-broadcast.io/job-name", ""),
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
            "record": meta.get("name", ""),
            "phase": phase,
            "conditions": conditions,
            "replicaStatuses": {t: {k: int(counts.get(k, 0)) for k in ("active", "succeeded", "failed")}
                                for t, counts in (status.get("replicaStatuses") or {}).items()},
            "startTime": status.get("startTime"),
            "completionTime": status.get("completionTime"),
            "failure": status.get("failure"),
        }

    def failure(self, summary: Mapping[str, Any]) -> str | None:
        failed = [c for c in summary["conditions"] if c.get("type") == "Failed" and c.get("status") == "True"]
        if not failed:
            return None
        cause = summary.get("failure") or {}
        detail = ""
        if cause:
            detail = (f" Failing replica: {cause.get('replicaType')} {cause.get('index')} (pod {cause.get('pod')}, "
                      f"exit code {cause.get('exitCode', '?')}, {cause.get('reason') or 'no reason'}"
                      f"{': ' + cause['message'] if cause.get('message') else ''}).")
        message = str(failed[-1].get("message", "")).rstrip(".")
        return f"TFJob {summary['namespace']}/{summary['name']} failed: {message}.{detail}"

    def failed_children(self, summary: Mapping[str, Any]) -> list[str]:
        pod = (summary.get("failure") or {}).get("pod")
        return [pod] if pod else []

    def log_container(self, manifest: Mapping[str, Any]) -> str | None:
        return "tensorflow"

    def progress_line(self, summary: Mapping[str, Any]) -> str:
        counts = ", ".join(f"{t}: {s.get('active', 0)} active/{s.get('succeeded', 0)} succeeded/{s.get('failed', 0)} "
                           f"failed" for t, s in sorted(summary["replicaStatuses"].items()))
        return f"TFJob {summary['namespace']}/{summary['name']}: {summary['phase']} ({counts or 'no replicas yet'})"

    def failed_units(self, summary: Mapping[str, Any]) -> dict[str, str]:
        cause = summary.get("failure") or {}
        if not cause:
            return {}
        return {f"{cause.get('replicaType')}-{cause.get('index')}":
                f"pod {cause.get('pod')} exit code {cause.get('exitCode', '?')} {cause.get('reason', '')}".strip()}
