"""BroadcastJob as a job kind of the engine: what to watch and how one pass is computed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_broadcast.cluster.informers import shared_informer
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.observation import node_info, node_significance, pod_info
from airflow_broadcast.cluster.plan_executor import ChildEventStyle
from airflow_broadcast.cluster.reconcile_loop import WatchSet
from airflow_broadcast.reconcilers.broadcast_job.pods import RECORD_UID_LABEL
from airflow_broadcast.reconcilers.broadcast_job.reconciler import BroadcastOptions, reconcile_broadcast_job
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.specs.broadcast_job import parse_broadcast_job


@dataclass(frozen=True)
class BroadcastJobDriver:
    """Pods of the namespace (label-selected, indexed by record uid) plus every node of the cluster."""

    options: BroadcastOptions = field(default_factory=BroadcastOptions)
    kind: str = "BroadcastJob"
    style: ChildEventStyle = field(default_factory=ChildEventStyle)

    def watch(self, client: KubeClient, namespace: str) -> WatchSet:
        pods = shared_informer(client, f"/api/v1/namespaces/{namespace}/pods", pod_info,
                               label_selector=RECORD_UID_LABEL, index_label=RECORD_UID_LABEL)
        nodes = shared_informer(client, "/api/v1/nodes", node_info, significant=node_significance)
        return WatchSet(children=pods, nodes=nodes)

    def reconcile(self, manifest: Mapping[str, Any], record: JobRecord, watched: WatchSet, now: float) -> Plan:
        spec = parse_broadcast_job(manifest, namespace=record.namespace)
        nodes = watched.nodes.items() if watched.nodes is not None else []
        return reconcile_broadcast_job(spec, record, nodes, watched.children.items(record.uid), now, self.options)

    def settled(self, manifest: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
        """A `Never` job never finishes: a waiting task returns once every desired node is done."""
        policy = ((manifest.get("spec") or {}).get("completionPolicy") or {}).get("type")
        if policy != "Never" or status.get("phase") not in ("running",):
            return False
        desired = int(status.get("desired", 0))
        done = sum(1 for n in (status.get("nodes") or {}).values() if n.get("phase") in ("Succeeded", "Failed"))
        return desired > 0 and done >= desired and int(status.get("active", 0)) == 0

    def is_finished(self, status: Mapping[str, Any]) -> bool:
        return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                   for c in status.get("conditions") or [])

    def summary(self, record: Mapping[str, Any], status: Mapping[str, Any]) -> dict[str, Any]:
        """The XCom of the operator and the sensor: identity, phase, counts, per-node results."""
        meta = record.get("metadata") or {}
        labels = meta.get("labels") or {}
        return {
            "kind": self.kind,
            "name": labels.get("airflow-broadcast.io/job-name", ""),
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
            "record": meta.get("name", ""),
            "phase": status.get("phase", ""),
            "desired": int(status.get("desired", 0)),
            "active": int(status.get("active", 0)),
            "succeeded": int(status.get("succeeded", 0)),
            "failed": int(status.get("failed", 0)),
            "startTime": status.get("startTime"),
            "completionTime": status.get("completionTime"),
            "conditions": list(status.get("conditions") or []),
            "nodes": dict(status.get("nodes") or {}),
            "ineligibleNodes": dict(status.get("ineligibleNodes") or {}),
        }

    def failure(self, summary: Mapping[str, Any]) -> str | None:
        """Why the job failed, naming the failed nodes with exit code and reason; None if it did not."""
        failed = [c for c in summary["conditions"] if c.get("type") == "Failed" and c.get("status") == "True"]
        if not failed:
            return None
        nodes = [(n, r) for n, r in sorted(summary["nodes"].items()) if r.get("phase") == "Failed"]
        shown = ", ".join(
            f"{n} (pod {r.get('pod')}, exit code {r.get('exitCode', '?')}, {r.get('reason') or 'no reason'})"
            for n, r in nodes[:20])
        more = f" and {len(nodes) - 20} more" if len(nodes) > 20 else ""
        detail = f" Failed nodes: {shown}{more}." if nodes else ""
        counts = f"{summary['succeeded']} succeeded, {summary['failed']} failed of {summary['desired']} desired"
        return (f"BroadcastJob {summary['namespace']}/{summary['name']} failed: "
                f"{failed[-1].get('message', '')} ({counts}).{detail}")

    def failed_children(self, summary: Mapping[str, Any]) -> list[str]:
        return [r["pod"] for _, r in sorted(summary["nodes"].items()) if r.get("phase") == "Failed" and r.get("pod")]

    def log_container(self, manifest: Mapping[str, Any]) -> str | None:
        containers = (((manifest.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
        return str(containers[0].get("name")) if containers else None

    def progress_line(self, summary: Mapping[str, Any]) -> str:
        done = summary["succeeded"] + summary["failed"]
        return (f"BroadcastJob {summary['namespace']}/{summary['name']}: {done}/{summary['desired']} done "
                f"({summary['succeeded']} succeeded, {summary['failed']} failed, {summary['active']} active), "
                f"phase {summary['phase'] or 'pending'}")

    def failed_units(self, summary: Mapping[str, Any]) -> dict[str, str]:
        """node → one-line failure description, for progress logging."""
        return {n: f"pod {r.get('pod')} exit code {r.get('exitCode', '?')} {r.get('reason', '')}".strip()
                for n, r in summary["nodes"].items() if r.get("phase") == "Failed"}
