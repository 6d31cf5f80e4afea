"""The hook builds one client per connection; exec-plugin tokens refresh, throttled; TLS verification can be off."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_broadcast.hooks import kubernetes as hook_module
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch) -> BroadcastKubernetesHook:
    from kubernetes_asyncio import client as async_client

    h = BroadcastKubernetesHook("k8s")
    loads: list[int] = []

    async def load_config() -> None:
        loads.append(1)
        h.client_configuration = h.client_configuration or async_client.Configuration()
        h._is_exec_auth = True

    async def get_field(name: str) -> Any:
        return {"disable_verify_ssl": "true"}.get(name)

    monkeypatch.setattr(h, "_load_config", load_config)
    monkeypatch.setattr(h, "_get_field", get_field)
    h.loads = loads  # type: ignore[attr-defined]
    return h


async def test_exec_auth_tokens_refresh_at_most_once_a_minute(hook: BroadcastKubernetesHook,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    api = await hook._new_api_client()
    cfg = api.configuration
    assert cfg.verify_ssl is False
    assert cfg.refresh_api_key_hook is not None
    clock = [1000.0]
    monkeypatch.setattr(hook_module.time, "monotonic", lambda: clock[0])
    hook._token_loaded_at = 1000.0
    await cfg.refresh_api_key_hook(cfg)
    assert len(hook.loads) == 1  # type: ignore[attr-defined]
    clock[0] += 61
    await cfg.refresh_api_key_hook(cfg)
    assert len(hook.loads) == 2  # type: ignore[attr-defined]
    await api.close()
