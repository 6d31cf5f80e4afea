"""The ApiClient's HTTP session, without environment lookups on every request.

kubernetes_asyncio opens its aiohttp session with `trust_env=True`. aiohttp then reads `~/.netrc`
and the proxy variables in a worker thread on every request: two thread hand-offs per request,
which were a fifth of the engine's CPU in a 1,000-pod create storm. Here the proxy variables are
read once, when the client is built (client-go and kubectl honour HTTPS_PROXY, HTTP_PROXY and
NO_PROXY the same way), a kubeconfig `proxy-url` still wins, and netrc, which no Kubernetes
client reads, is not read.
"""

from __future__ import annotations

import urllib.request
from typing import Any
from urllib.parse import urlsplit

import aiohttp

READ_BUFFER_BYTES = 2**21  # as kubernetes_asyncio sets it: one watch event can be a large object


def env_proxy(server: str) -> str | None:
    """The proxy the environment names for `server` (HTTPS_PROXY for https, ...), unless NO_PROXY exempts it."""
    parts = urlsplit(server)
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme or "https")
    if not proxy or not parts.hostname:
        return None
    host = f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname
    if urllib.request.proxy_bypass(host):
        return None
    return proxy


def api_client_for(configuration: Any) -> Any:
    """kubernetes_asyncio's ApiClient for `configuration`, whose session reads no environment per request.

    The proxy is fixed first (the configuration's own `proxy-url`, else the environment's), because the
    ApiClient copies it when it is built. The new session keeps the old one's connector (TLS context and
    pool); the old session is detached, not closed.
    """
    from kubernetes_asyncio import client as async_client

    if not configuration.proxy:
        configuration.proxy = env_proxy(configuration.host)
    api_client = async_client.ApiClient(configuration=configuration)
    rest = api_client.rest_client
    old: aiohttp.ClientSession = rest.pool_manager
    rest.pool_manager = aiohttp.ClientSession(connector=old.connector, trust_env=False,
                                              read_bufsize=READ_BUFFER_BYTES)
    old.detach()
    return api_client
