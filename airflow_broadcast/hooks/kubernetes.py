"""Kubernetes access for this provider, through the cncf provider's `kubernetes` connection."""

from __future__ import annotations

import logging
import time
from typing import Any

from airflow.providers.common.compat.connection import get_async_connection, get_async_extra_dejson

from airflow_broadcast.cluster.http_session import api_client_for
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.shared_clients import shared_client
from airflow_broadcast.config import Settings, current_settings
from airflow_broadcast.hooks.kube_config import DEFAULT_NAMESPACE, ConnectionConfig, CredentialLoader, namespace_of
from airflow_broadcast.hooks.metrics import install_airflow_metrics
from airflow_broadcast.version_compat import AirflowNotFoundException, BaseHook

__all__ = ["DEFAULT_NAMESPACE", "BroadcastKubernetesHook", "connection_namespace"]

log = logging.getLogger(__name__)

install_airflow_metrics()


class BroadcastKubernetesHook(BaseHook):
    """One shared raw-JSON client per process and connection, configured from the connection's extras.

    The connection is the cncf `kubernetes` type; its documented extras are read through Airflow's public
    connection API (see `hooks/kube_config.py`). The client is built once and reused by every trigger,
    instead of once per call.
    """

    conn_name_attr = "kubernetes_conn_id"
    default_conn_name = "kubernetes_default"
    conn_type = "kubernetes"
    hook_name = "Kubernetes (broadcast and TF jobs)"

    def __init__(self, kubernetes_conn_id: str = default_conn_name, cluster_context: str | None = None,
                 settings: Settings | None = None) -> None:
        super().__init__()
        self.conn_id = kubernetes_conn_id
        self.cluster_context = cluster_context
        self.settings = settings if settings is not None else current_settings()

    async def connection_extras(self) -> dict[str, Any]:
        """The connection's extras; a missing `kubernetes_default` is an empty connection, as in the cncf hook."""
        try:
            connection = await get_async_connection(self.conn_id, hook=type(self))
        except AirflowNotFoundException:
            if self.conn_id != self.default_conn_name:
                raise
            return {}
        return dict(await get_async_extra_dejson(connection))

    def _client_key(self) -> str:
        return f"{self.conn_id}|{self.cluster_context or ''}"

    async def kube_client(self) -> KubeClient:
        s = self.settings
        return await shared_client(self._client_key(), self._new_api_client, freeze_heap=s.freeze_startup_heap,
                                   release_heap=s.release_freed_heap, qps=s.client_qps, burst=s.client_burst,
                                   request_timeout=s.client_request_timeout, max_retries=s.client_max_retries,
                                   max_inflight=s.client_max_inflight)

    async def _new_api_client(self) -> Any:
        from kubernetes_asyncio import client as async_client

        source = ConnectionConfig.from_extras(await self.connection_extras(), self.cluster_context)
        configuration = async_client.Configuration()
        configuration.connection_pool_maxsize = 0  # no pool cap: watches hold theirs, KubeClient caps requests
        loader = await source.load(configuration)
        if loader is not None:
            refresher = CredentialRefresher(source, loader, self.settings.credential_refresh_seconds)
            configuration.refresh_api_key_hook = refresher
        return api_client_for(configuration)

    async def default_namespace(self) -> str:
        """The connection's namespace, else `default`."""
        return namespace_of(await self.connection_extras())


class CredentialRefresher:
    """Kubeconfig credentials expire (exec plugins such as EKS and GKE, OIDC): reload them, throttled.

    The client calls this before each request; the kubeconfig's loader runs the exec plugin again
    (or reuses a token that has not expired), at most once per `interval` seconds.
    """

    def __init__(self, source: ConnectionConfig, loader: CredentialLoader, interval: float) -> None:
        self.source = source
        self.loader = loader
        self.interval = interval
        self.loaded_at = time.monotonic()

    async def __call__(self, configuration: Any) -> None:
        now = time.monotonic()
        if now - self.loaded_at < self.interval:
            return
        self.loaded_at = now
        try:
            await self.loader.load_and_set(configuration)
        except Exception as exc:  # keep the current credentials: the API answers 401 if they really expired
            log.warning("Reloading the kubeconfig credentials failed: %s", exc)
        self.source.apply_overrides(configuration)


def connection_namespace(kubernetes_conn_id: str) -> str:
    """The connection's namespace resolved on a worker (sync), else `default`."""
    try:
        connection = BaseHook.get_connection(kubernetes_conn_id)
    except AirflowNotFoundException:
        if kubernetes_conn_id != BroadcastKubernetesHook.default_conn_name:
            raise
        return DEFAULT_NAMESPACE
    return namespace_of(connection.extra_dejson)
