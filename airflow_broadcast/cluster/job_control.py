"""User-driven actions on a running job: stop its active children (task killed, deadline passed)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.cluster.api_errors import NotFound
from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.reconcilers.observed import RECORD_UID_LABEL

RECORD_KIND = "ConfigMap"


def owned_by_record(pod: Mapping[str, Any], record_name: str, uid: str) -> bool:
    """The pod's controller is the job record (kind, name and uid), as the reconcilers require of a child.

    The job-uid label alone proves nothing: anyone who can create pods can copy it.
    """
    refs = (pod.get("metadata") or {}).get("ownerReferences") or []
    controller = next((ref for ref in refs if ref.get("controller")), None)
    return bool(uid) and controller is not None and (
        controller.get("uid"), controller.get("kind"), controller.get("name")) == (uid, RECORD_KIND, record_name)


def is_active(pod: Mapping[str, Any]) -> bool:
    """Still running or pending, and not already being deleted; finished pods stay for inspection."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not (pod.get("metadata") or {}).get("deletionTimestamp")


async def stop_active_children(client: KubeClient, namespace: str, record_name: str, uid: str) -> int:
    """Delete the job's active pods: labelled with the record uid AND controlled by the record."""
    pods_path = api_path("v1", "pods", namespace=namespace)
    items, _ = await client.list_all(pods_path, labelSelector=f"{RECORD_UID_LABEL}={uid}")
    active = [p for p in items if owned_by_record(p, record_name, uid) and is_active(p)]

    async def delete(pod: JsonDict) -> None:
        meta = pod["metadata"]
        try:
            await client.delete(api_path("v1", "pods", namespace=namespace, name=meta["name"]),
                                propagation=None, preconditions_uid=str(meta.get("uid", "")))
        except NotFound:
            pass

    await asyncio.gather(*(delete(p) for p in active))
    return len(active)
