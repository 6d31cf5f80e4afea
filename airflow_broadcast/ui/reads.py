"""The cluster reads and the one write of the page, through the provider's hook and shared client.

Lists come from shared watch caches (one LIST+WATCH per process, as in the triggerer), so a page
that polls every second costs the API server nothing; a pod's change reaches the cache by watch.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.cluster import job_api
from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.cluster.informers import Informer, shared_informer
from airflow_broadcast.cluster.job_control import stop_active_children
from airflow_broadcast.cluster.job_records import MANAGED_BY, MANAGED_BY_LABEL, record_view
from airflow_broadcast.cluster.job_warnings import WarningEvent, events_informer
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.cluster.observation import pod_info
from airflow_broadcast.cluster.pod_logs import log_tail
from airflow_broadcast.cluster.record_parts import cached_parts, record_index
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
from airflow_broadcast.reconcilers.broadcast_job.node_table import is_sharded, merged
from airflow_broadcast.reconcilers.observed import RECORD_PART_LABEL, RECORD_UID_LABEL, PodInfo
from airflow_broadcast.ui.job_view import STOPPED_BY

SYNC_TIMEOUT = 15.0
MAX_EVENTS = 20
STOP_PATCH: dict[str, dict[str, Any]] = {
    "BroadcastJob": {"spec": {"paused": True}},
    "TFJob": {"spec": {"runPolicy": {"suspend": True}}},
}


async def client_for(conn_id: str) -> KubeClient:
    return await BroadcastKubernetesHook(conn_id).kube_client()


async def _synced(informer: Informer[Any]) -> Informer[Any]:
    await informer.wait_synced(SYNC_TIMEOUT)
    return informer


def _record_cache(client: KubeClient) -> Informer[JsonDict]:
    """Job records and their node-table parts, cluster-wide; parts are indexed under their record's uid."""
    return shared_informer(client, api_path("v1", "configmaps"), _same,
                           label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY}", index_by=record_index)


async def records(client: KubeClient) -> list[JsonDict]:
    """Every job record of the cluster the client reaches (not the parts that hold large node tables)."""
    items = (await _synced(_record_cache(client))).items()
    return [raw for raw in items if not ((raw.get("metadata") or {}).get("labels") or {}).get(RECORD_PART_LABEL)]


def _same(obj: JsonDict) -> JsonDict:
    return obj


async def node_table(client: KubeClient, raw: JsonDict) -> JsonDict | None:
    """The whole node table of a BroadcastJob whose record keeps only a capped view, else None."""
    view = record_view(raw)
    if not is_sharded(view.status):
        return None
    return merged(view.name, cached_parts(await _synced(_record_cache(client)), view.uid))


async def job_pods(client: KubeClient, namespace: str, uid: str) -> list[PodInfo]:
    """The job's pods, from the same watch cache the reconcile loop uses."""
    informer = shared_informer(client, api_path("v1", "pods", namespace=namespace), pod_info,
                               label_selector=RECORD_UID_LABEL, index_label=RECORD_UID_LABEL)
    return list((await _synced(informer)).items(uid))


async def warnings(client: KubeClient, namespace: str, uid: str, pods: list[PodInfo]) -> list[dict[str, Any]]:
    """The newest Warning events of the record and of its pods."""
    informer: Informer[WarningEvent] = await _synced(events_informer(client, namespace))
    found = [*informer.items(uid), *(e for pod in pods for e in informer.items(pod.uid))]
    found.sort(key=lambda e: e.last_seen, reverse=True)
    return [{"object": f"{e.involved_kind}/{e.involved_name}", "reason": e.reason, "message": e.message,
             "count": e.count, "lastSeen": e.last_seen} for e in found[:MAX_EVENTS]]


async def pod_log(client: KubeClient, namespace: str, pod: str, container: str | None, lines: int) -> str:
    return await log_tail(client, namespace, pod, container=container, lines=lines)


async def stop_job(client: KubeClient, kind: str, namespace: str, name: str, record: str, uid: str,
                   user: str) -> int:
    """Pause (BroadcastJob) or suspend (TFJob) the job so no pod is re-created, mark who stopped it, then
    delete its active pods as `on_kill` does. Returns how many pods were deleted."""
    patch: Mapping[str, Any] = {**STOP_PATCH[kind], "metadata": {
        "uid": uid, "annotations": {STOPPED_BY: f"{user} at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}"}}}
    await job_api.update_job(client, kind, namespace, name, patch)
    return await stop_active_children(client, namespace, record, uid)
