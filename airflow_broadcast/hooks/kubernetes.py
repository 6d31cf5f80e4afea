"""Kubernetes access for this provider, through the cncf provider's `kubernetes` connection."""

from __future__ import annotations

import time
from typing import Any

from airflow.providers.cncf.kubernetes.hooks.kubernetes import AsyncKubernetesHook, KubernetesHook

from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.shared_clients import shared_client
from airflow_broadcast.hooks.metrics import install_airflow_metrics

DEFAULT_NAMESPACE = "default"
EXEC_TOKEN_REFRESH_SECONDS = 60.0

install_airflow_metrics()


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes") if value is not None else False


class BroadcastKubernetesHook(AsyncKubernetesHook):
    """The cncf async hook, plus one shared raw-JSON client per process and connection.

    Configuration loading (kubeconfig, in-cluster, exec plugins) is the cncf hook's;
    what changes is that the resulting client is built once and reused by every
    trigger, instead of once per call.
    """

    def __init__(self, kubernetes_conn_id: str = KubernetesHook.default_conn_name,
                 cluster_context: str | None = None, **kwargs: Any) -> None:
        super().__init__(conn_id=kubernetes_conn_id, cluster_context=cluster_context, **kwargs)
        self._token_loaded_at = time.monotonic()

    def _client_key(self) -> str:
        return f"{self.conn_id}|{self.cluster_context or ''}"

    async def kube_client(self) -> KubeClient:
        return await shared_client(self._client_key(), self._new_api_client)

    async def _new_api_client(self) -> Any:
        from kubernetes_asyncio import client as async_client

        await self._load_config()  # type: ignore[no-untyped-call]
        configuration = self.client_configuration
        assert configuration is not None  # _load_config always sets it
        if _truthy(await self._get_field("disable_verify_ssl")):  # type: ignore[no-untyped-call]
            configuration.verify_ssl = False
        if self._is_exec_auth:
            configuration.refresh_api_key_hook = self._refresh_exec_token
        return async_client.ApiClient(configuration=configuration)

    async def _refresh_exec_token(self, configuration: Any) -> None:
        """Exec-plugin tokens (EKS, GKE) are short-lived: reload them, at most once a minute.

        The cncf hook reloads the kubeconfig on every call for exec auth; the shared
        client asks for it before each request, so the refresh is throttled here.
        """
        now = time.monotonic()
        if now - self._token_loaded_at < EXEC_TOKEN_REFRESH_SECONDS:
            return
        self._token_loaded_at = now
        await self._load_config()  # type: ignore[no-untyped-call]

    async def default_namespace(self) -> str:
        """The connection's namespace, else `default`."""
        namespace = await self._get_field("namespace")  # type: ignore[no-untyped-call]
        return str(namespace) if namespace else DEFAULT_NAMESPACE


def connection_namespace(kubernetes_conn_id: str) -> str:
    """The connection's namespace resolved on a worker (sync), else `default`."""
    namespace = KubernetesHook(conn_id=kubernetes_conn_id).get_namespace()
    return namespace or DEFAULT_NAMESPACE
