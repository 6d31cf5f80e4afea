"""Choose the controller of a job and, for `cluster`, create (or re-attach to) its custom resource.

`auto` probes with the job itself: when the CRD is served it creates the custom resource and waits up to
`probe_seconds` for a controller to write its status. A resource nobody acts on is deleted (pods a very slow
controller made of it meanwhile go with it, by garbage collection) and the job runs with Airflow as the
controller. Probing with the job rather than with a throw-away resource means that a cluster whose controller
works starts the job at once, and that no probe object needs RBAC or a name of its own.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_broadcast.cluster.api_errors import Forbidden
from airflow_broadcast.cluster.handoff.resources import (
    crd_served,
    delete_resource,
    get_resource,
    submit_resource,
)
from airflow_broadcast.cluster.handoff.watch import acting, wait_resource
from airflow_broadcast.cluster.job_records import SUBMITTED_BY, get_record, record_name, record_view
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.cluster.reconcile_loop import LoopReason
from airflow_broadcast.exceptions import JobConflictError
from airflow_broadcast.reconcilers.handoff import (
    Controller,
    Decision,
    controller_acting,
    decide,
    foreign_manager,
    provider_only_fields,
    resource_view,
)
from airflow_broadcast.reconcilers.kind import JobKind
from airflow_broadcast.specs.field_errors import InvalidSpecError, forbidden


@dataclass(frozen=True)
class HandOff:
    """The decision, and for `cluster` the custom resource and whether a retry re-attached to it."""

    decision: Decision
    resource: JsonDict | None = None
    reattached: bool = False


async def hand_off(client: KubeClient, kind: JobKind[Any, Any], manifest: Mapping[str, Any], *,
                   requested: Controller, submitter: str, reattach: bool, probe_seconds: float) -> HandOff:
    """The controller for a validated manifest; in `cluster` mode its resource exists when this returns."""
    if requested == "airflow":
        return HandOff(decide(requested, kind.name))
    meta = manifest.get("metadata") or {}
    namespace, name = str(meta["namespace"]), str(meta["name"])
    extensions = provider_only_fields(kind.name, manifest)
    if extensions and requested == "cluster":
        raise InvalidSpecError(kind.name, name, [forbidden(path, (
            "is run by this provider only: with controller='cluster' the cluster's controller runs the job, "
            f"and its {kind.name} CRD would drop the field")) for path in extensions])
    if extensions:
        await _refuse_beside_running_resource(client, kind, namespace, name, extensions, submitter)
        return HandOff(decide("auto", kind.name, extensions=extensions))
    if requested == "auto":
        if reattach and await _record_running(client, kind, namespace, name, submitter):
            return HandOff(Decision("airflow", "a previous try of this task runs it with Airflow as the controller"))
        manager = foreign_manager(kind.name, manifest)
        try:
            served = manager is not None or await crd_served(client, kind.name, namespace)
        except Forbidden as exc:
            return HandOff(Decision("airflow", f"this identity may not list {kind.name} resources "
                                               f"(docs/rbac/handoff.yaml grants it): {exc}"))
        if not served:
            return HandOff(decide("auto", kind.name, crd_served=False))
        if manager is not None:
            requested = "cluster"
    resource, reattached = await submit_resource(client, kind, manifest, submitter=submitter, reattach=reattach)
    if requested == "cluster":
        return HandOff(decide("cluster", kind.name), resource, reattached)
    uid = str(resource["metadata"]["uid"])
    probe = await wait_resource(client, kind, namespace, name, uid, deadline=time.time() + probe_seconds,
                                done=acting(kind), resync=min(5.0, probe_seconds))
    if probe.reason is LoopReason.PENDING:
        return HandOff(decide("auto", kind.name, crd_served=True, acting=True), probe.resource, reattached)
    await delete_resource(client, kind.name, namespace, name, uid)
    return HandOff(decide("auto", kind.name, crd_served=True, acting=False))


async def _refuse_beside_running_resource(client: KubeClient, kind: JobKind[Any, Any], namespace: str, name: str,
                                         extensions: list[str], submitter: str) -> None:
    """JobConflictError while the cluster's controller runs a job of this name: the manifest now sets a field
    only this provider runs (say a retry, after the DAG added it, of a try that handed the job off), and two
    controllers would each put a pod on every node. A resource this identity may not read is not looked at;
    one this task made that no controller acted on (an earlier try's probe, cut short) is deleted, as a probe
    would have deleted it."""
    try:
        existing = await get_resource(client, kind.name, namespace, name)
    except Forbidden:
        return
    if existing is None:
        return
    view = resource_view(existing)
    if kind.is_finished(view.status):
        return
    if view.annotations.get(SUBMITTED_BY) == submitter and not controller_acting(kind.name, view.status):
        await delete_resource(client, kind.name, namespace, name, view.uid)
        return
    owner = view.annotations.get(SUBMITTED_BY) or "someone else"
    raise JobConflictError(
        f"{kind.name} {namespace}/{name} runs with the cluster's controller (uid {view.uid}, submitted by {owner}), "
        f"and this manifest sets {', '.join(extensions)}, which only this provider runs, so Airflow would run a "
        "second copy of the job beside it; wait for it, delete it, or give this job another name")


async def _record_running(client: KubeClient, kind: JobKind[Any, Any], namespace: str, name: str,
                          submitter: str) -> bool:
    """This task's earlier try created a job record that still runs (and no custom resource of that name)."""
    raw = await get_record(client, namespace, record_name(kind.name, name))
    if raw is None:
        return False
    record = record_view(raw)
    mine = record.annotations.get(SUBMITTED_BY) == submitter and not kind.is_finished(record.status)
    return mine and await get_resource(client, kind.name, namespace, name) is None
