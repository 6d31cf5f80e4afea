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


@pytest.mark.parametrize("frozen", [True, False])
async def test_first_client_freezes_the_heap_unless_disabled(monkeypatch: pytest.MonkeyPatch, frozen: bool) -> None:
    monkeypatch.setattr(shared_clients, "_frozen", False)
    gc.unfreeze()
    try:
        await shared_clients.shared_client(f"freeze-{frozen}", _factory, freeze_heap=frozen)
        assert (gc.get_freeze_count() > 0) is frozen
    finally:
        gc.unfreeze()
