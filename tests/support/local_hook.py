"""Make the provider's hook reach the local cluster with a given kubeconfig, as a task's connection would."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
from support.engine import kube_client


class LocalHook:
    """Patches BroadcastKubernetesHook.kube_client; `close()` closes the clients opened so far (in the
    running loop), `close_now()` from synchronous code."""

    def __init__(self, kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened: list[Any] = []

        async def open_client(hook: BroadcastKubernetesHook) -> Any:
            self.opened.append(await kube_client(kubeconfig))
            return self.opened[-1]

        monkeypatch.setattr(BroadcastKubernetesHook, "kube_client", open_client)

    async def close(self) -> None:
        while self.opened:
            await self.opened.pop().close()

    def close_now(self) -> None:
        asyncio.run(self.close())
