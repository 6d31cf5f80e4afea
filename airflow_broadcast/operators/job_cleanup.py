"""JobCleanupOperator: a scheduled sweep of expired BroadcastJob and TFJob records (ttlSecondsAfterFinished)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_broadcast.cluster.ttl_sweeper import sweep_expired_records
from airflow_broadcast.cluster.worker_loop import run_on_worker
from airflow_broadcast.config import current_settings
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook, connection_namespace
from airflow_broadcast.version_compat import BaseOperator


class JobCleanupOperator(BaseOperator):
    """Delete every job record whose TTL has expired (its pods and services follow by garbage collection).

    Triggers of this provider sweep their namespace when they start; schedule this operator
    to guarantee cleanup in namespaces where no job runs for a while.

    :param namespaces: namespaces to sweep; default: the connection's namespace, else `default`. (templated)
    """

    template_fields: Sequence[str] = ("namespaces", "kubernetes_conn_id", "cluster_context")

    def __init__(self, *, namespaces: Sequence[str] | None = None, kubernetes_conn_id: str = "kubernetes_default",
                 cluster_context: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.namespaces = namespaces
        self.kubernetes_conn_id = kubernetes_conn_id
        self.cluster_context = cluster_context

    def execute(self, context: Any) -> list[str]:
        namespaces = list(self.namespaces or [connection_namespace(self.kubernetes_conn_id)])
        grace = current_settings().unread_result_grace_seconds

        async def sweep() -> list[str]:
            hook = BroadcastKubernetesHook(self.kubernetes_conn_id, cluster_context=self.cluster_context)
            client = await hook.kube_client()
            deleted: list[str] = []
            for namespace in namespaces:
                swept = await sweep_expired_records(client, namespace, unread_grace=grace)
                deleted += [f"{namespace}/{name}" for name in swept]
            return deleted

        deleted = run_on_worker(sweep)
        self.log.info("Deleted %d expired job record(s): %s", len(deleted), ", ".join(deleted) or "none")
        return deleted
