"""BroadcastJob's driver: watch the namespace's pods and every node, and hand them to the kind's reconcile."""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.cluster.informers import shared_informer
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.observation import node_info, node_significance, pod_info
from airflow_broadcast.cluster.plan_executor import ChildEventStyle
from airflow_broadcast.cluster.reconcile_loop import WatchSet
from airflow_broadcast.reconcilers.broadcast_job.kind import BroadcastJobKind, BroadcastObserved
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
        nodes = watched.nodes.items() if watched.nodes is not None else []
        return BroadcastObserved(nodes=nodes, pods=watched.children.items(uid))
