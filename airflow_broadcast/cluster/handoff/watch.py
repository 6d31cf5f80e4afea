"""Wait on a handed-off custom resource through the shared watch of its kind in the namespace."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from airflow_broadcast.cluster.handoff.resources import get_resource, resources_path
from airflow_broadcast.cluster.informers import shared_informer
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.cluster.reconcile_loop import LoopReason
from airflow_broadcast.reconcilers.handoff import controller_acting, resource_view, settled_upstream
from airflow_broadcast.reconcilers.kind import JobKind
from airflow_broadcast.reconcilers.observed import JobRecord

RESYNC_SECONDS = 30.0


@dataclass
class HandoffOutcome:
    """Why the wait stopped, the resource as last seen (None once gone), and a message."""

    reason: LoopReason
    resource: JsonDict | None
    message: str = ""


def _identity(obj: JsonDict) -> JsonDict:
    return obj


async def wait_resource(client: KubeClient, kind: JobKind[Any, Any], namespace: str, name: str, uid: str, *,
                        deadline: float | None, done: Callable[[JobRecord], LoopReason | None],
                        progress: Callable[[JobRecord], None] | None = None,
                        resync: float = RESYNC_SECONDS) -> HandoffOutcome:
    """Until `done` names a reason, the resource is gone (or replaced), or `deadline` (epoch) passes.

    The informer wakes the wait on every change; a direct GET confirms a disappearance and backs up a
    stalled watch at each resync.
    """
    informer = shared_informer(client, resources_path(kind.name, namespace), _identity)
    changed = asyncio.Event()
    informer.subscribe("", changed)
    try:
        await informer.wait_synced()
        last: JsonDict | None = None
        while True:
            changed.clear()
            current = informer.values.get(name)
            if current is None or (current.get("metadata") or {}).get("uid") != uid:
                current = await get_resource(client, kind.name, namespace, name)
            if current is None or (current.get("metadata") or {}).get("uid") != uid:
                return HandoffOutcome(LoopReason.GONE, None, f"{kind.name} {namespace}/{name} was deleted")
            view = resource_view(current)
            if progress is not None and current is not last:
                progress(view)
            last = current
            reason = done(view)
            if reason is not None:
                return HandoffOutcome(reason, current)
            remaining = None if deadline is None else deadline - time.time()
            if remaining is not None and remaining <= 0:
                return HandoffOutcome(LoopReason.TIMEOUT, current, "Airflow's deadline (execution_timeout) passed")
            wait = resync if remaining is None else min(resync, remaining)
            try:
                await asyncio.wait_for(changed.wait(), wait)
            except TimeoutError:
                pass
    finally:
        informer.unsubscribe("", changed)


def finished(kind: JobKind[Any, Any]) -> Callable[[JobRecord], LoopReason | None]:
    """The reason a waiting task stops: the job finished, or (Kruise `Never`) every desired pod is done."""

    def check(view: JobRecord) -> LoopReason | None:
        if kind.is_finished(view.status):
            return LoopReason.FINISHED
        return LoopReason.SETTLED if settled_upstream(kind.name, view) else None

    return check


def acting(kind: JobKind[Any, Any]) -> Callable[[JobRecord], LoopReason | None]:
    """The probe of `auto`: stop as soon as a controller wrote the resource's status."""

    def check(view: JobRecord) -> LoopReason | None:
        return LoopReason.PENDING if controller_acting(kind.name, view.status) else None

    return check
