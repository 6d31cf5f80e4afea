"""Execute a Plan: deletes first, then slow-start creates, then the record write, then events.

Idempotent by construction: 404 on delete and AlreadyExists on create (for a pod
we own) count as done, so two triggers applying the same plan cannot duplicate.
The executor decides nothing: it reports each child's create or delete as it
happened (an event and a metric per outcome) and writes the status the plan
gives for the number of creates that succeeded and were sent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from airflow_broadcast.cluster import job_metrics
from airflow_broadcast.cluster.api_errors import AlreadyExists, ClusterApiError, Conflict, NotFound, TransportError
from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.cluster.connection_warmup import warm_connections
from airflow_broadcast.cluster.informers import Informer
from airflow_broadcast.cluster.job_events import EventRecorder
from airflow_broadcast.cluster.job_records import current_record, write_record
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.cluster.record_parts import write_parts
from airflow_broadcast.reconcilers.plan import DeleteChild, JobEvent, Plan

log = logging.getLogger(__name__)
DELETE_CONCURRENCY = 32
# Creates in flight at once; slow-start batches grow past it, so a large batch streams through this window.
CREATE_CONCURRENCY = 64
WARM_FROM_CREATES = 16  # a ramp of five batches or more opens its connections ahead (connection_warmup)


@dataclass(frozen=True)
class ChildEventStyle:
    """Upstream event reasons and message formats for child creates and deletes."""

    create_ok: str = "SuccessfulCreate"
    create_ok_message: str = "Created pod: {name}"
    create_failed: str = "FailedCreate"
    create_failed_message: str = "Error creating: {error}"
    delete_ok: str = "SuccessfulDelete"
    delete_ok_message: str = "Delete pod: {name}"
    service_create_ok: str = "SuccessfulCreateService"
    service_delete_ok: str = "SuccessfulDeleteService"


@dataclass
class ApplyResult:
    created: int = 0
    attempted: int = 0
    not_created: list[str] = field(default_factory=list)  # pods whose create failed or was not sent
    create_errors: list[str] = field(default_factory=list)
    deleted: int = 0
    conflict: bool = False
    record: JsonDict | None = None


_PLURALS = {"Pod": "pods", "Service": "services", "PodGroup": "podgroups"}


def _path(kind: str, namespace: str, name: str = "", api_version: str = "v1") -> str:
    return api_path(api_version, _PLURALS[kind], namespace=namespace, name=name or None)


@dataclass
class PlanExecutor:
    """Applies plans for one job record; keeps the shared caches ahead of the watch (X1/X2)."""

    client: KubeClient
    namespace: str
    record_uid: str
    _: KW_ONLY
    pods: Informer[Any] | None = None
    services: Informer[Any] | None = None
    style: ChildEventStyle = field(default_factory=ChildEventStyle)
    kind: str = ""
    pod_groups: Informer[Any] | None = None
    records: Informer[Any] | None = None

    async def apply(self, plan: Plan, record: Mapping[str, Any], events: EventRecorder) -> ApplyResult:
        result = ApplyResult()
        child_events: list[JobEvent] = []
        if plan.create_pods or plan.create_services or plan.create_objects:
            await self._confirm_owner(record)
        if plan.deletes:
            await self._delete_all(plan.deletes, result, child_events)
        if plan.create_objects:
            await self._create_objects(plan.create_objects, child_events)
        if plan.create_services:
            await self._create_services(plan.create_services, child_events)
        if plan.create_pods:
            await self._create_pods(plan.create_pods, plan.create_limit, result, child_events)
        status = plan.status_after(result.created, result.attempted, result.not_created)
        if plan.record_parts and not await write_parts(self.client, record, plan.record_parts, self.records):
            result.conflict = True  # another writer's part: the pass is recomputed from it
        elif status is not None or plan.record_annotations:
            try:
                result.record = await write_record(self.client, record, status, plan.record_annotations)
            except Conflict:
                result.conflict = True
        if not result.conflict:  # a conflicting pass is recomputed, and its transitions counted then
            job_metrics.count_job_events(self.kind, self.namespace, plan.events)
        await events.record([*child_events, *plan.events])
        return result

    async def _confirm_owner(self, record: Mapping[str, Any]) -> None:
        """X4: create only for a record the cluster still has, under the uid the loop runs for.

        The cache can lag a deletion while the collector already removes the job's pods; a pass
        woken by those removals would otherwise re-create pods for a gone owner. One GET per
        pass that creates; NotFound sends the loop to its gone check.
        """
        name = str((record.get("metadata") or {}).get("name") or "")
        if await current_record(self.client, self.namespace, name, self.record_uid) is None:
            raise NotFound(404, "NotFound", f"job record {self.namespace}/{name} (uid {self.record_uid}) is gone",
                           verb="GET", target=name)

    async def _delete_all(self, deletes: Sequence[DeleteChild], result: ApplyResult,
                          events: list[JobEvent]) -> None:
        gate = asyncio.Semaphore(DELETE_CONCURRENCY)

        async def one(child: DeleteChild) -> None:
            async with gate:
                path = _path(child.kind, self.namespace, child.name, child.api_version)
                try:
                    answer = await self.client.delete(path, propagation=None, preconditions_uid=child.uid or None)
                except (NotFound, Conflict):
                    return  # gone already, or a newer object now has the name
                except ClusterApiError as exc:
                    if child.kind != "PodGroup":
                        raise
                    events.append(JobEvent("Warning", "FailedDeletePodGroup", f"Error deleting: {exc.describe()}"))
                    return
                result.deleted += 1
                if child.done_event is not None:
                    events.append(child.done_event)
                if child.kind == "Pod":
                    self._remember_deleting(answer)
                    job_metrics.count(job_metrics.DELETED_PODS, self.kind, self.namespace)
                    events.append(JobEvent("Normal", self.style.delete_ok,
                                           self.style.delete_ok_message.format(name=child.name)))
                elif child.kind == "Service":
                    events.append(JobEvent("Normal", self.style.service_delete_ok,
                                           f"Deleted service: {child.name}"))
                else:
                    job_metrics.count(job_metrics.DELETED_POD_GROUPS, self.kind, self.namespace)
                    events.append(JobEvent("Normal", "SuccessfulDeletePodGroup", f"Deleted PodGroup: {child.name}"))

        await asyncio.gather(*(one(d) for d in deletes))

    async def _create_one(self, kind: str, manifest: Mapping[str, Any]) -> tuple[bool, str, bool]:
        """(created or already ours, error text, adopted rather than created)."""
        name = manifest["metadata"]["name"]
        api_version = str(manifest.get("apiVersion") or "v1")
        try:
            created = await self.client.create(_path(kind, self.namespace, api_version=api_version), manifest)
        except AlreadyExists:
            try:
                existing = await self.client.get(_path(kind, self.namespace, name, api_version))
            except NotFound:
                return False, f"{kind.lower()} {name} was being deleted; will retry", False
            owners = (existing.get("metadata") or {}).get("ownerReferences") or []
            if any(o.get("uid") == self.record_uid for o in owners):
                self._remember(kind, existing)
                return True, "", True
            return False, f'{kind.lower()}s "{name}" already exists and is not owned by this job', False
        self._remember(kind, created)
        return True, "", False

    def _remember(self, kind: str, obj: JsonDict) -> None:
        informer = {"Pod": self.pods, "Service": self.services, "PodGroup": self.pod_groups}.get(kind)
        if informer is not None:
            informer.upsert(obj, notify=False)

    def _remember_deleting(self, answer: JsonDict) -> None:
        """X2: a graceful delete answers with the pod marked, which the next pass reads as the watch would
        show it (terminating); a Status (the pod is gone) is left to the watch, and so is a pod it removed."""
        meta = (answer.get("metadata") if isinstance(answer, Mapping) else None) or {}
        if self.pods is not None and meta.get("deletionTimestamp") and self.pods.key_of(meta) in self.pods.values:
            self.pods.upsert(answer, notify=False)

    async def _create_objects(self, manifests: Sequence[Mapping[str, Any]], events: list[JobEvent]) -> None:
        """A PodGroup (before the pods that need it); its failure is a Warning, and the pass goes on."""
        for manifest in manifests:
            kind = str(manifest["kind"])
            try:
                ok, error, adopted = await self._create_one(kind, manifest)
            except ClusterApiError as exc:
                ok, error, adopted = False, exc.describe(), False
            if not ok:
                events.append(JobEvent("Warning", f"FailedCreate{kind}", f"Error creating: {error}"))
            elif not adopted and kind == "PodGroup":
                job_metrics.count(job_metrics.CREATED_POD_GROUPS, self.kind, self.namespace)

    async def _create_services(self, manifests: Sequence[Mapping[str, Any]], events: list[JobEvent]) -> None:
        results = await asyncio.gather(*(self._create_one("Service", m) for m in manifests),
                                       return_exceptions=True)
        for manifest, outcome in zip(manifests, results, strict=True):
            name = manifest["metadata"]["name"]
            if isinstance(outcome, BaseException) or not outcome[0]:
                error = outcome if isinstance(outcome, BaseException) else outcome[1]
                events.append(JobEvent("Warning", "FailedCreateService", f"Error creating: {error}"))
                job_metrics.count(job_metrics.SERVICE_FAILED, self.kind, self.namespace)
            elif not outcome[2]:
                job_metrics.count(job_metrics.SERVICE_CREATED, self.kind, self.namespace)
                events.append(JobEvent("Normal", self.style.service_create_ok, f"Created service: {name}"))

    async def _create_pods(self, manifests: Sequence[Mapping[str, Any]], limit: int | None,
                           result: ApplyResult, events: list[JobEvent]) -> None:
        """Slow start (R6/R7): batches of 1, 2, 4, ...; a batch with an error stops the pass.

        The doubling is not capped (as upstream's), so after a few round trips one batch holds the
        rest; at most CREATE_CONCURRENCY creates are in flight, which keeps the pipe full without
        opening thousands of requests at once.
        """
        todo = list(manifests[:limit] if limit is not None else manifests)
        result.not_created.extend(m["metadata"]["name"] for m in manifests[len(todo):])
        gate = asyncio.Semaphore(CREATE_CONCURRENCY)

        async def one(manifest: Mapping[str, Any]) -> tuple[bool, str, bool]:
            async with gate:
                return await self._create_one("Pod", manifest)

        warm = None
        if len(todo) >= WARM_FROM_CREATES:
            ramp_width = min(len(todo), CREATE_CONCURRENCY, self.client.max_inflight)
            warm = asyncio.create_task(warm_connections(self.client, ramp_width - 1))  # batch one holds one
        try:
            await self._ramp(todo, one, result, events)
        finally:
            if warm is not None and not warm.done():
                warm.cancel()

    async def _ramp(self, todo: list[Mapping[str, Any]], one: Any, result: ApplyResult,
                    events: list[JobEvent]) -> None:
        batch = 1
        while todo:
            current, todo = todo[:batch], todo[batch:]
            outcomes = await asyncio.gather(*(one(m) for m in current), return_exceptions=True)
            failed, fresh = False, 0
            for manifest, outcome in zip(current, outcomes, strict=True):
                name = manifest["metadata"]["name"]
                if isinstance(outcome, TransportError) and "Timeout" in str(outcome):
                    continue  # R8: a timed-out create is neither counted nor an error
                result.attempted += 1
                if isinstance(outcome, BaseException) or not outcome[0]:
                    if isinstance(outcome, BaseException):
                        message = outcome.describe() if isinstance(outcome, ClusterApiError) else str(outcome)
                    else:
                        message = outcome[1]
                    result.not_created.append(name)
                    result.create_errors.append(message)
                    events.append(JobEvent("Warning", self.style.create_failed,
                                           self.style.create_failed_message.format(error=message)))
                    failed = True
                else:
                    result.created += 1
                    if not outcome[2]:  # an adopted pod was created earlier, and reported then
                        fresh += 1
                        events.append(JobEvent("Normal", self.style.create_ok,
                                               self.style.create_ok_message.format(name=name)))
            job_metrics.count(job_metrics.CREATED_PODS, self.kind, self.namespace, fresh)  # one call per batch
            if failed:
                result.not_created.extend(m["metadata"]["name"] for m in todo)
                return
            batch = min(batch * 2, len(todo)) if todo else batch
