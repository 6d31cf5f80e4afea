"""The first shared client freezes the start-up heap once, so full GCs stop stalling the triggerer loop."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from airflow_broadcast.cluster import shared_clients


class _Api:
    async def close(self) -> None:
        return None


async def _factory() -> Any:
    return _Api()


@pytest.mark.parametrize(("setting", "frozen"), [("true", True), ("false", False)])
async def test_first_client_freezes_the_heap_unless_disabled(monkeypatch: pytest.MonkeyPatch, setting: str,
                                                              frozen: bool) -> None:
    monkeypatch.setenv("AIRFLOW_BROADCAST_GC_FREEZE", setting)
    monkeypatch.setattr(shared_clients, "_frozen", False)
    gc.unfreeze()
    try:
        await shared_clients.shared_client(f"freeze-{setting}", _factory)
        assert (gc.get_freeze_count() > 0) is frozen
    finally:
        gc.unfreeze()
