"""JobReconcileTrigger with its cluster side stubbed: the given loop, no TTL sweep, a client that is never used."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_broadcast.triggers import job_reconcile
from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger


async def _no_sweep(client: Any, namespace: str, **settings: Any) -> None:
    return None


class _Hook:
    async def kube_client(self) -> object:
        return object()


def stub_trigger_cluster(monkeypatch: pytest.MonkeyPatch, loop: Any) -> None:
    """The trigger runs `loop` in place of `run_reconcile_loop`, without sweeping or reaching a cluster."""
    monkeypatch.setattr(job_reconcile, "run_reconcile_loop", loop)
    monkeypatch.setattr(job_reconcile, "sweep_in_background", _no_sweep)
    monkeypatch.setattr(JobReconcileTrigger, "_hook", lambda self: _Hook())
