"""The client's HTTP session reads the proxy variables once and never reads netrc."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web
from kubernetes_asyncio import client as async_client

from airflow_broadcast.cluster.http_session import api_client_for, env_proxy
from airflow_broadcast.cluster.kube_client import KubeClient

PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY",
              "all_proxy")


@pytest.fixture(autouse=True)
def _no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)


def test_env_proxy_follows_the_server_scheme(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("HTTP_PROXY", "http://plain.example:3128")
    assert env_proxy("https://api.example:6443") == "http://proxy.example:3128"
    assert env_proxy("http://api.example:8080") == "http://plain.example:3128"


def test_no_proxy_exempts_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,.internal")
    assert env_proxy("https://kube.internal:6443") is None
    assert env_proxy("https://localhost:6443") is None
    assert env_proxy("https://api.example:6443") == "http://proxy.example:3128"


def test_no_variables_no_proxy() -> None:
    assert env_proxy("https://api.example:6443") is None


async def test_the_kubeconfig_proxy_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://env.example:3128")
    cfg = async_client.Configuration(host="https://api.example:6443")
    cfg.proxy = "http://kubeconfig.example:3128"
    api = api_client_for(cfg)
    try:
        assert api.rest_client.proxy == "http://kubeconfig.example:3128"
    finally:
        await api.close()


async def test_the_environment_proxy_is_fixed_when_the_client_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://env.example:3128")
    api = api_client_for(async_client.Configuration(host="https://api.example:6443"))
    try:
        assert api.rest_client.proxy == "http://env.example:3128"
        assert api.rest_client.pool_manager.trust_env is False
    finally:
        await api.close()


async def test_requests_carry_no_netrc_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A netrc entry for the API server's host is not sent (aiohttp would, with trust_env)."""
    seen: list[str | None] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.json_response({"kind": "Status", "status": "Success"})

    app = web.Application()
    app.router.add_get("/version", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    kube = KubeClient(api_client_for(async_client.Configuration(host=f"http://127.0.0.1:{port}")), qps=0)
    try:
        assert await kube.get("/version") == {"kind": "Status", "status": "Success"}
    finally:
        await kube.close()
        await runner.cleanup()
    assert seen == [None]
