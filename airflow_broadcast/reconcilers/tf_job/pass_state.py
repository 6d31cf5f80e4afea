"""The scratch state of one TFJob reconcile pass, and its primitive actions.

`reconciler.py` and `replicas.py` decide what a pass does; this module holds what they
work on (the observed children, the status being built, the plan being collected) and
the small actions they repeat: conditions, deletes, cleanPodPolicy, the TTL expiry, and
the gang PodGroup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_broadcast.reconcilers.expiry import expiry_change
from airflow_broadcast.reconcilers.json_copy import clone
from airflow_broadcast.reconcilers.observed import JobRecord, PodGroupInfo, PodInfo, ServiceInfo
from airflow_broadcast.reconcilers.plan import DeleteChild, JobEvent
from airflow_broadcast.reconcilers.tf_job import status as st
from airflow_broadcast.reconcilers.tf_job.children import by_replica_type
from airflow_broadcast.reconcilers.tf_job.cluster_config import TFConfigRenderer
from airflow_broadcast.reconcilers.tf_job.gang_scheduling import (
    TERMINATED_MESSAGE,
    delays_pod_creation,
    gang_scheduler,
    own_pod_group,
    pod_group_manifest,
)
from airflow_broadcast.reconcilers.tf_job.options import TFJobOptions
from airflow_broadcast.specs.tf_job.spec import CLEAN_POD_NONE, CLEAN_POD_RUNNING, WORKER, TFJobSpec
from airflow_broadcast.specs.timestamps import from_rfc3339, to_rfc3339

LAST_RECONCILE_REFRESH = 60.0  # L4: how often a pass waiting for Volcano refreshes lastReconcileTime
# Creates one pass may build: four slow-start windows of the executor's 64 in flight, about half a second of
# the client's 500 QPS, so a 1,005-pod job takes four back-to-back passes and never holds every manifest at once.
CREATE_BATCH = 256
# Every pod's TF_CONFIG lists every replica: past ~3,000 replicas the batch shrinks so that the TF_CONFIG
# strings one pass builds stay under this many characters (but the batch never drops below MIN_CREATE_BATCH).
TF_CONFIG_BUDGET = 16 * 1024 * 1024
MIN_CREATE_BATCH = 32


class PassState:
    """Scratch state of one pass and the primitive actions every kind of pass uses."""

    def __init__(self, spec: TFJobSpec, record: JobRecord, pods: Sequence[PodInfo],
                 services: Sequence[ServiceInfo], now: float, options: TFJobOptions, *,
                 pod_groups: Sequence[PodGroupInfo] = (), priorities: Mapping[str, int] | None = None) -> None:
        self.spec, self.record, self.now, self.options = spec, record, now, options
        self.pods = [p for p in pods if p.owner_uid == record.uid]
        self.services = [s for s in services if s.owner_uid == record.uid]
        self.original: dict[str, Any] = clone(record.status)
        self.status: dict[str, Any] = clone(record.status)
        self.events: list[JobEvent] = []
        self.deletes: list[DeleteChild] = []
        self.deleted: set[tuple[str, str]] = set()
        self.pod_creates: list[dict[str, Any]] = []
        self.service_creates: list[dict[str, Any]] = []
        self.requeue: float | None = None
        self.annotations: dict[str, str | None] = {}
        self.pods_by_type: dict[str, list[PodInfo]] = by_replica_type(self.pods)
        self.failed_pods: dict[str, list[tuple[int, PodInfo]]] = {}
        self.warnings: dict[str, tuple[str, str]] = {}
        self.worker0_completed = WORKER not in spec.replica_specs
        self._renderer: TFConfigRenderer | None = None
        self.gang = gang_scheduler(options.gang_scheduler, options.gang_scheduler_name)
        self.pod_group = own_pod_group(pod_groups, spec, record) if self.gang is not None else None
        self.priorities: Mapping[str, int] = priorities or {}
        self.object_creates: list[dict[str, Any]] = []
        self.service_room = CREATE_BATCH
        self._pod_room: int | None = None
        self.more_creates = False  # children left for the next pass, which is asked for at once

    # ---- helpers -------------------------------------------------------------------------------
    def _event(self, kind: str, reason: str, message: str) -> None:
        self.events.append(JobEvent(kind, reason, message))

    def _set(self, kind: str, status: str, reason: str, message: str) -> bool:
        return st.set_condition(self.status, kind, status, reason, message, self.now,
                                succeeded_is_terminal=not self.options.compat_succeeded_then_failed)

    def _delete(self, child: PodInfo | ServiceInfo, why: str) -> None:
        """Delete a child once per pass, unless it is already terminating (G5); uid-guarded."""
        kind = "Pod" if isinstance(child, PodInfo) else "Service"
        if child.deleting or (kind, child.name) in self.deleted:
            return
        self.deleted.add((kind, child.name))
        self.deletes.append(DeleteChild(kind, child.name, child.uid, why))

    def _clean_up(self, policy: str, why: str) -> None:
        """`DeletePodsAndServices` (G1-G5): None keeps all, Running takes Running/Pending, else all."""
        if policy == CLEAN_POD_NONE:
            return
        services = {s.name: s for s in self.services}
        for pod in self.pods:
            if policy == CLEAN_POD_RUNNING and pod.phase not in ("Running", "Pending"):
                continue
            self._delete(pod, why)
            if pod.name in services:
                self._delete(services[pod.name], why)
        if policy != CLEAN_POD_RUNNING:
            for service in self.services:
                self._delete(service, why)

    def _ttl(self) -> None:
        """`CleanupJob` (H1-H6) as a stamp: the record expires at completionTime + TTL; never while suspended.

        A missing completionTime is backfilled from the terminal condition (H5). Deleting the
        record is left to the task that reads the result and to the sweeper.
        """
        ttl = self.spec.run_policy.ttl_seconds_after_finished
        expires = None
        if ttl is not None and not self.spec.run_policy.suspend:
            done = st.finished_at(self.status)
            done = self.now if done is None else done
            if self.status.get("completionTime") is None:
                self.status["completionTime"] = to_rfc3339(done)
            expires = done + ttl
        self.annotations.update(expiry_change(self.record.annotations, expires))

    def _renderer_for_pass(self) -> TFConfigRenderer:
        if self._renderer is None:
            self._renderer = TFConfigRenderer(self.spec, self.options.cluster_domain,
                                              exclude_evaluator=self.options.exclude_evaluator_from_cluster,
                                              sparse_ps_empty_list=self.options.sparse_ps_empty_list)
        return self._renderer

    def _take_pod_room(self) -> bool:
        """Room for one more pod manifest in this pass; when there is none, the next pass builds it."""
        if self._pod_room is None:
            size = self._renderer_for_pass().size_bound()
            self._pod_room = min(CREATE_BATCH, max(MIN_CREATE_BATCH, TF_CONFIG_BUDGET // max(size, 1)))
        if self._pod_room <= 0:
            self.more_creates = True
            return False
        self._pod_room -= 1
        return True

    # ---- gang scheduling (L1-L7) ----------------------------------------------------------------
    def _sync_pod_group(self) -> bool:
        """Create the PodGroup when missing; True while Volcano has not admitted it (no pods yet, L4)."""
        assert self.gang is not None
        if self.pod_group is None:
            self.object_creates.append(pod_group_manifest(self.spec, self.record, self.gang, self.priorities))
        if not delays_pod_creation(self.gang, self.pod_group):
            return False
        last = from_rfc3339(self.status.get("lastReconcileTime"))
        if last is None or self.now - last >= LAST_RECONCILE_REFRESH:
            self.status["lastReconcileTime"] = to_rfc3339(self.now)
        return True

    def _drop_pod_group(self) -> None:
        """L7: the job finished, failed or was suspended: delete its PodGroup (JobTerminated first)."""
        group = self.pod_group
        if self.gang is None or group is None or group.deleting:
            return
        self._event("Normal", "JobTerminated", TERMINATED_MESSAGE)
        self.deletes.append(DeleteChild("PodGroup", group.name, group.uid, "terminated", self.gang.api_version))
