"""Kubernetes Events recorded against the job record, as upstream controllers record them on the job."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.reconcilers.plan import JobEvent

log = logging.getLogger(__name__)
COMPONENT = "airflow-broadcast"


class EventRecorder:
    """Posts core/v1 Events best-effort: a failed event never fails a reconcile pass."""

    def __init__(self, client: KubeClient, record: Mapping[str, Any]) -> None:
        self.client = client
        meta = record.get("metadata") or {}
        self.namespace = str(meta.get("namespace", ""))
        self.involved = {"apiVersion": "v1", "kind": "ConfigMap", "name": meta.get("name", ""),
                         "namespace": self.namespace, "uid": meta.get("uid", "")}
        self.recorded: list[JobEvent] = []

    async def record(self, events: Sequence[JobEvent]) -> None:
        if not events:
            return
        self.recorded.extend(events)
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        path = f"/api/v1/namespaces/{self.namespace}/events"

        async def post(event: JobEvent) -> None:
            body = {
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"generateName": f"{self.involved['name']}.", "namespace": self.namespace},
                "involvedObject": self.involved, "reason": event.reason, "message": event.message[:1024],
                "type": event.type, "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
                "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
            }
            try:
                await self.client.request("POST", path, body=body, retry=False)
            except ClusterApiError as exc:
                log.debug("event %s not recorded: %s", event.reason, exc)

        await asyncio.gather(*(post(e) for e in events))
