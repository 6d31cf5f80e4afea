"""The TTL janitor as an Airflow asset watcher: it runs in the triggerer for as long as its DAG is active.

Airflow keeps a `BaseEventTrigger` that an `AssetWatcher` names running in a triggerer, moves it to
another triggerer when this one dies, and turns each event it yields into an asset event (so every
cleanup shows in the UI and can start a DAG run). `airflow_broadcast.janitor.ttl_janitor_dag` wires it up.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator, Sequence
from typing import Any

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from airflow_broadcast.cluster.ttl_janitor import run_janitor
from airflow_broadcast.config import current_settings
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
from airflow_broadcast.hooks.metrics import running_in_triggerer

MAX_BACKOFF_SECONDS = 60.0


class TTLJanitorTrigger(BaseEventTrigger):
    """Delete expired BroadcastJob and TFJob records of `namespaces` when their TTL lets them go; never ends.

    Yields one event per deleted record (`ttl_janitor.Cleanup` as a dict). Renews the Lease
    `airflow-broadcast-ttl-janitor` of every namespace while it runs. Kwargs hold names only,
    never credentials: the triggerer resolves the connection itself.
    """

    def __init__(self, namespaces: Sequence[str], kubernetes_conn_id: str = "kubernetes_default",
                 cluster_context: str | None = None) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        if isinstance(namespaces, str) or not namespaces:
            raise ValueError("namespaces must be a non-empty list of namespace names")
        self.namespaces = sorted(set(namespaces))  # the same set is the same trigger, whatever the order
        self.kubernetes_conn_id = kubernetes_conn_id
        self.cluster_context = cluster_context

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{type(self).__module__}.{type(self).__qualname__}", {
            "namespaces": list(self.namespaces),
            "kubernetes_conn_id": self.kubernetes_conn_id,
            "cluster_context": self.cluster_context,
        }

    def holder(self) -> str:
        """Who renews the lease: the triggerer job (Airflow sets `triggerer_job_id`), host and process."""
        job = getattr(self, "triggerer_job_id", None)
        where = f"{socket.gethostname()} (pid {os.getpid()})"
        return f"triggerer job {job} on {where}" if job is not None else where

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Run the janitor; after an error (no connection, API down, a bug) start it again, backing off."""
        running_in_triggerer()
        backoff = 1.0
        while True:
            try:
                settings = current_settings()
                hook = BroadcastKubernetesHook(self.kubernetes_conn_id, cluster_context=self.cluster_context,
                                               settings=settings)
                client = await hook.kube_client()
                async for cleanup in run_janitor(client, self.namespaces, holder=self.holder(),
                                                 unread_grace=settings.unread_result_grace_seconds):
                    backoff = 1.0
                    yield TriggerEvent(cleanup.payload())
            except Exception as exc:
                self.log.warning("TTL janitor of %s stopped (%s: %s); starting again in %.0f s",
                                 ", ".join(self.namespaces), type(exc).__name__, exc, backoff)
            await asyncio.sleep(backoff)
            backoff = min(MAX_BACKOFF_SECONDS, backoff * 2)
