"""Create, read and delete the upstream custom resource of a job left to the cluster's controller."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.cluster.api_errors import AlreadyExists, ClusterApiError, NotFound
from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.cluster.job_records import SUBMISSION, SUBMITTED_BY
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.exceptions import JobConflictError
from airflow_broadcast.reconcilers.handoff import RESOURCES, resource_view
from airflow_broadcast.reconcilers.kind import JobKind, KindName

GONE_WAIT_SECONDS = 30.0


def resources_path(kind: KindName, namespace: str) -> str:
    api_version, plural = RESOURCES[kind]
    return api_path(api_version, plural, namespace=namespace)


def resource_path(kind: KindName, namespace: str, name: str) -> str:
    api_version, plural = RESOURCES[kind]
    return api_path(api_version, plural, namespace=namespace, name=name)


async def crd_served(client: KubeClient, kind: KindName, namespace: str) -> bool:
    """The API server serves the kind here: a one-item LIST answers (404: no such CRD or version).

    A 403 is no answer about the CRD, so `Forbidden` goes to the caller, which says why it keeps the job.
    """
    try:
        await client.get(resources_path(kind, namespace), limit=1)
    except NotFound:
        return False
    return True


async def get_resource(client: KubeClient, kind: KindName, namespace: str, name: str) -> JsonDict | None:
    try:
        return await client.get(resource_path(kind, namespace, name))
    except NotFound:
        return None


async def delete_resource(client: KubeClient, kind: KindName, namespace: str, name: str, uid: str = "") -> bool:
    """Delete it (its pods go by garbage collection); False when it was already gone or replaced."""
    try:
        await client.delete(resource_path(kind, namespace, name), preconditions_uid=uid or None)
    except NotFound:
        return False
    except ClusterApiError as exc:
        if exc.status == 409:  # the uid precondition: another job of that name now
            return False
        raise
    return True


async def submit_resource(client: KubeClient, kind: JobKind[Any, Any], manifest: Mapping[str, Any], *,
                          submitter: str, reattach: bool) -> tuple[JsonDict, bool]:
    """The job's custom resource and whether it was re-attached, under the rule of job records: a running one
    from the same submitter is re-attached, a finished one replaced, anything else is a JobConflictError."""
    meta = manifest.get("metadata") or {}
    namespace, name = str(meta["namespace"]), str(meta["name"])
    submission = uuid.uuid4().hex  # tells our own create, whose answer was lost, from a running resource
    annotations = {**(meta.get("annotations") or {}), SUBMITTED_BY: submitter, SUBMISSION: submission}
    body = {**manifest, "metadata": {**meta, "annotations": annotations}}
    for _ in range(3):
        try:
            return await client.create(resources_path(kind.name, namespace), body), False
        except AlreadyExists:
            pass
        existing = await get_resource(client, kind.name, namespace, name)
        if existing is None:
            continue  # deleted meanwhile: create again
        view = resource_view(existing)
        if view.annotations.get(SUBMISSION) == submission:
            return existing, False
        if kind.is_finished(view.status):
            await delete_resource(client, kind.name, namespace, name, view.uid)
            await _until_gone(client, kind.name, namespace, name)
            continue
        owner = view.annotations.get(SUBMITTED_BY, "")
        if not reattach or owner != submitter:
            raise JobConflictError(f"{kind.name} {namespace}/{name} already exists and runs (submitted by "
                                   f"{owner or 'someone else'}); wait for it, delete it, or give this job another name")
        return existing, True
    raise JobConflictError(f"could not create {kind.name} {namespace}/{name}: it keeps being recreated")


async def _until_gone(client: KubeClient, kind: KindName, namespace: str, name: str) -> None:
    """A finished resource being replaced: wait out its finalizers, if any, before creating the new one."""
    loop = asyncio.get_running_loop()
    until = loop.time() + GONE_WAIT_SECONDS
    while await get_resource(client, kind, namespace, name) is not None:
        if loop.time() > until:
            raise JobConflictError(f"{kind} {namespace}/{name} was deleted to be replaced but is still there")
        await asyncio.sleep(0.5)
