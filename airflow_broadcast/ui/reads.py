"""The cluster reads and the one write of the page, through the provider's hook and shared client.

Lists come from shared watch caches (one LIST+WATCH per process, as in the triggerer), so a page
that polls every second costs the API server nothing; a pod's change reaches the cache by watch.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from airflow_broadcast.cluster import job_api
from airflow_broadcast.cluster.api_errors import Forbidden, NotFound
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
from airflow_broadcast.reconcilers.handoff import RESOURCES
from airflow_broadcast.reconcilers.kind import KindName
from airflow_broadcast.reconcilers.observed import RECORD_PART_LABEL, RECORD_UID_LABEL, PodInfo
from airflow_broadcast.ui.handoff_view import owned_pods, pod_index, submitted_by_airflow
from airflow_broadcast.ui.job_view import STOPPED_BY

SYNC_TIMEOUT = 15.0
MAX_EVENTS = 20
STOP_PATCH: dict[str, dict[str, Any]] = {
    "BroadcastJob": {"spec": {"paused": True}},
    "TFJob": {"spec": {"runPolicy": {"suspend": True}}},
}
UNSERVED_SECONDS = 60.0  # how long a kind's 404/403 is believed before the API server is asked again
clock: Callable[[], float] = time.monotonic
_unserved: weakref.WeakKeyDictionary[KubeClient, dict[KindName, float]] = weakref.WeakKeyDictionary()
_served: weakref.WeakKeyDictionary[KubeClient, set[KindName]] = weakref.WeakKeyDictionary()


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


async def resources(client: KubeClient) -> list[JsonDict]:
    """The custom resources Airflow handed to the cluster's controller (both kinds, cluster-wide), from
    shared watch caches. A kind whose CRD is not served (404) or not readable (403) is left out."""
    found: list[JsonDict] = []
    for kind in RESOURCES:
        informer = await _resource_cache(client, kind)
        if informer is not None:
            found += [raw for raw in informer.items() if submitted_by_airflow(raw)]
    return found


async def _resource_cache(client: KubeClient, kind: KindName) -> Informer[JsonDict] | None:
    """The kind's cache, or None while its CRD is not served: that answer is kept for UNSERVED_SECONDS, so
    neither a poll nor a failing watch asks the API server again and again."""
    unserved = _unserved.setdefault(client, {})
    if kind in unserved and clock() - unserved[kind] < UNSERVED_SECONDS:
        return None
    api_version, plural = RESOURCES[kind]
    path = api_path(api_version, plural)
    try:
        if kind not in _served.setdefault(client, set()):
            await client.get(path, limit=1)  # a one-item probe, before a watch that would retry for ever
            _served[client].add(kind)
        return await _synced(shared_informer(client, path, _of_kind(kind)))
    except (NotFound, Forbidden):
        unserved[kind] = clock()
        return None


def _of_kind(kind: KindName) -> Callable[[JsonDict], JsonDict]:
    def transform(obj: JsonDict) -> JsonDict:
        return {**obj, "kind": kind}  # LIST items may omit their kind
    return transform


async def resource_pods(client: KubeClient, kind: KindName, namespace: str, name: str, uid: str) -> list[PodInfo]:
    """The pods the cluster's controller made for the resource, by the label it sets on each of them."""
    label, value = pod_index(kind, name, uid)
    informer = shared_informer(client, api_path("v1", "pods", namespace=namespace), pod_info,
                               label_selector=label, index_label=label)
    return owned_pods((await _synced(informer)).items(value), uid)


async def warnings(client: KubeClient, namespace: str, uid: str, pods: list[PodInfo]) -> list[dict[str, Any]]:
    """The newest Warning events of the job (its record or custom resource, by `uid`) and of its pods."""
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
