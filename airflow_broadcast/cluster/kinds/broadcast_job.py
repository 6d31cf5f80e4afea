"""BroadcastJob's driver: watch the namespace's pods and every node, and hand them to the kind's reconcile."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.cluster.informers import shared_informer
from airflow_broadcast.cluster.job_records import read_status, record_path
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.observation import node_info, node_significance, pod_info
from airflow_broadcast.cluster.plan_executor import ChildEventStyle
from airflow_broadcast.cluster.reconcile_loop import WatchSet
from airflow_broadcast.cluster.record_parts import cached_parts, read_parts
from airflow_broadcast.reconcilers.broadcast_job.kind import BroadcastJobKind, BroadcastObserved
from airflow_broadcast.reconcilers.broadcast_job.node_table import is_sharded, merged
from airflow_broadcast.reconcilers.observed import RECORD_UID_LABEL


@dataclass(frozen=True)
class BroadcastJobDriver:
    """Pods of the namespace (label-selected, indexed by record uid) plus every node of the cluster."""

    kind: BroadcastJobKind = field(default_factory=BroadcastJobKind)
    style: ChildEventStyle = field(default_factory=ChildEventStyle)

    def watch(self, client: KubeClient, namespace: str) -> WatchSet:
        pods = shared_informer(client, api_path("v1", "pods", namespace=namespace), pod_info,
                               label_selector=RECORD_UID_LABEL, index_label=RECORD_UID_LABEL)
        nodes = shared_informer(client, api_path("v1", "nodes"), node_info, significant=node_significance)
        return WatchSet(children=pods, nodes=nodes)

    def observe(self, watched: WatchSet, uid: str) -> BroadcastObserved:
        nodes = watched.nodes.snapshot() if watched.nodes is not None else []
        return BroadcastObserved(nodes=nodes, pods=watched.children.snapshot(uid),
                                 parts=cached_parts(watched.records, uid))


async def read_node_table(client: KubeClient, namespace: str, record_name: str) -> dict[str, Any]:
    """Every node's result of a BroadcastJob: the record's own `status.nodes`, or the union of its parts.

    The record and the XCom show at most a capped view of a large table; this is the whole of it.
    """
    raw = await client.get(record_path(namespace, record_name))
    status = read_status(raw)
    if not is_sharded(status):
        return dict(status.get("nodes") or {})
    parts = await read_parts(client, namespace, str((raw.get("metadata") or {}).get("uid", "")))
    return merged(record_name, parts)
