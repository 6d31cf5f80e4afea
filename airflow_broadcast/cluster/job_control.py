"""User-driven actions on a running job: stop its active children (task killed)."""

from __future__ import annotations

import asyncio

from airflow_broadcast.cluster.api_errors import NotFound
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.reconcilers.broadcast_job.pods import RECORD_UID_LABEL


async def stop_active_children(client: KubeClient, namespace: str, record_name: str, uid: str) -> int:
    """Delete the job's pods that are still running or pending; finished pods stay for inspection."""
    items, _ = await client.list_all(f"/api/v1/namespaces/{namespace}/pods",
                                     labelSelector=f"{RECORD_UID_LABEL}={uid}")
    active = [p for p in items if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
              and not (p.get("metadata") or {}).get("deletionTimestamp")]

    async def delete(pod: dict[str, object]) -> None:
        meta = pod["metadata"]
        assert isinstance(meta, dict)
        try:
            await client.delete(f"/api/v1/namespaces/{namespace}/pods/{meta['name']}",
                                propagation=None, preconditions_uid=str(meta.get("uid", "")))
        except NotFound:
            pass

    await asyncio.gather(*(delete(p) for p in active))
    return len(active)
