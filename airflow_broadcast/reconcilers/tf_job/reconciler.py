"""One TFJob reconcile pass, in training-operator v1.9.4's order of operations (tfjob.md §2.2).

Pure and level-triggered: the inputs are the defaulted spec, the job record (its
last persisted status), the job's observed pods and services and `now`; the
output is a Plan. Running a pass again on the same inputs gives the same plan,
and a pass over the state a plan produced writes nothing (M3, M4, M6).

`record.status` has the upstream JSON shape (`conditions`, `replicaStatuses`,
`startTime`, `completionTime`; zero counts omitted as Go's omitempty does) plus
these extension keys, all optional:

* `succeededIndexes` `{type: [index, ...]}`: indexes whose pod was seen Succeeded.
  They are never re-created when the pod disappears and keep counting as succeeded
  (E13, Q3 fix; off with `compat_recreate_succeeded`). Cleared on suspend, because a
  resumed job starts every replica afresh as upstream does.
* `controllerRestarts` `{type: count}`: pods this controller deleted to restart them
  (Failed under OnFailure/Always/ExitCode≥128) or that were deleted while Running.
  Added to the backoffLimit sum (J6, Q2 fix; off with `compat_exitcode_ignores_backoff`).
* `restartedPods` `{pod name: uid}`: the last restarted uid per name, so that a stale
  observation of the same pod is not counted twice.
* `failure` `{replicaType, index, pod, exitCode, reason, message}`: why the job failed
  (N10). `reason` is the tensorflow container's terminated reason (OOMKilled, Error),
  the pod's own reason for a Failed pod without one (Evicted), `Terminating` for a pod
  deleted while running, or BackoffLimitExceeded / DeadlineExceeded.
* `podWarnings` `{pod name: message}`: active pods that look stuck (E14, #1282, #2072):
  a container terminated non-zero, a waiting container (ImagePullBackOff, ...), an
  unschedulable Pending pod, a pod Terminating while running, duplicate pods for one
  index. A Warning event is recorded only when a pod's message changes, so a pod stuck
  for hours gives one event and a visible status entry instead of a silent loop or an
  event per pass. At most 20 entries. Nothing is force-deleted (no grace clock here).

Deliberate differences from upstream, besides the Q-fixes above: children are only
created for indexes below `replicas`; a terminating pod past `replicas` is not counted
(scale-down would fail the job); a restartable replica's pod deleted while Running is a
restart (Restarting), a Never replica's a failure; a terminating pod created before the
current `startTime` is a leftover of a suspended run and waits; suspend and the All
policy also delete services whose pod is gone; the pass that finishes the job creates
nothing and applies cleanPodPolicy at once; no pass deletes the job: the TTL is an
expiry stamped on the record with the terminal status (see `expiry.py`); a pass builds at
most a batch of missing pods and Services (upstream order, see `pass_state.py`) and asks
for the next pass at once, so a large job never holds every pod's TF_CONFIG in memory. The replica
part of a pass is in `replicas.py`. Inputs it relies on: `PodInfo.restarts`
sums init and regular container restarts, `created_at` is the creation time, and for a
Failed pod `waiting_reason`/`pending_message` carry the pod's status.reason/message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from airflow_broadcast.reconcilers.observed import JobRecord, PodGroupInfo, PodInfo, ServiceInfo
from airflow_broadcast.reconcilers.plan import Plan, earliest
from airflow_broadcast.reconcilers.tf_job import status as st
from airflow_broadcast.reconcilers.tf_job.children import failure_summary, replica_index
from airflow_broadcast.reconcilers.tf_job.gang_scheduling import CUSTOM_SCHEDULER_MESSAGE, uses_custom_scheduler
from airflow_broadcast.reconcilers.tf_job.options import TFJobOptions
from airflow_broadcast.reconcilers.tf_job.replicas import ReplicaPass
from airflow_broadcast.specs.tf_job.spec import (
    CLEAN_POD_ALL,
    LABEL_REPLICA_TYPE,
    MANAGED_BY_TRAINING_OPERATOR,
    TFJobSpec,
)
from airflow_broadcast.specs.timestamps import to_rfc3339

__all__ = ["TFJobOptions", "reconcile_tf_job"]

# Warnings about the templates of pods being created: a pass that ends up creating nothing drops them.
_CREATE_WARNINGS = frozenset({"SetPodTemplateRestartPolicy", "SetPodTemplateSchedulerName"})


def reconcile_tf_job(spec: TFJobSpec, record: JobRecord, pods: Sequence[PodInfo],
                     services: Sequence[ServiceInfo], now: float, options: TFJobOptions | None = None, *,
                     pod_groups: Sequence[PodGroupInfo] = (), priorities: Mapping[str, int] | None = None) -> Plan:
    """Decide one pass. A job being deleted, or managed by another controller, gets an empty plan (M1, K6).

    `pod_groups` and `priorities` (PriorityClass name → value) matter only with gang scheduling on.
    """
    managed_by = spec.run_policy.managed_by
    if record.deleting or (managed_by is not None and managed_by != MANAGED_BY_TRAINING_OPERATOR):
        return Plan()
    return _Pass(spec, record, pods, services, now, options or TFJobOptions(), pod_groups=pod_groups,
                 priorities=priorities).run()


class _Pass(ReplicaPass):
    """The decisions of one pass, in upstream order; `run()` returns the Plan."""

    def run(self) -> Plan:
        if st.is_finished(self.status):
            self._finished()
        elif self.spec.run_policy.suspend:
            self._suspended()
        else:
            self._active()
        return Plan(
            create_pods=tuple(self.pod_creates),
            create_services=tuple(self.service_creates),
            create_objects=tuple(self.object_creates),
            deletes=tuple(self.deletes),
            status=None if self.status == self.original else self.status,
            record_annotations=self.annotations,
            events=tuple(self.events),
            requeue_after=self.requeue,
            finished=st.is_finished(self.status),
        )

    # ---- the three kinds of pass ---------------------------------------------------------------
    def _finished(self) -> None:
        self._clean_up(self.spec.run_policy.clean_pod_policy, "cleanPodPolicy")
        self._drop_pod_group()
        if st.is_true(self.status, st.SUCCEEDED):
            for entry in (self.status.get("replicaStatuses") or {}).values():
                if entry and entry.get("active"):
                    entry["succeeded"] = int(entry.get("succeeded", 0)) + int(entry.pop("active"))
        self._ttl()

    def _suspended(self) -> None:
        name = self.spec.name
        self._set(st.CREATED, st.TRUE, st.REASON_CREATED, st.created_message(name))
        self._clean_up(CLEAN_POD_ALL, "suspend")
        self._drop_pod_group()
        for entry in (self.status.get("replicaStatuses") or {}).values():
            if entry:
                entry.pop("active", None)
        message = st.suspended_message(name)
        if st.is_true(self.status, st.RUNNING):
            self._set(st.RUNNING, st.FALSE, st.REASON_SUSPENDED, message)
        if not st.is_true(self.status, st.SUSPENDED) and self._set(
                st.SUSPENDED, st.TRUE, st.REASON_SUSPENDED, message):
            self._event("Normal", st.REASON_SUSPENDED, message)
        self.status.pop(st.SUCCEEDED_INDEXES, None)
        self.status.pop(st.POD_WARNINGS, None)

    def _active(self) -> None:
        name = self.spec.name
        self._set(st.CREATED, st.TRUE, st.REASON_CREATED, st.created_message(name))
        if st.is_true(self.status, st.SUSPENDED):
            message = st.resumed_message(name)
            self._set(st.SUSPENDED, st.FALSE, st.REASON_RESUMED, message)
            self.status["startTime"] = to_rfc3339(self.now)
            self._event("Normal", st.REASON_RESUMED, message)
        limit = st.policy_failure(self.spec, self.status, self.pods, self.pods_by_type, self.now,
                                  count_controller_restarts=not self.options.compat_exitcode_ignores_backoff)
        if limit is not None:
            self._fail_by_policy(*limit)
            return
        if self.gang is not None and self._sync_pod_group():
            self.requeue = earliest(self.requeue, st.deadline_left(self.spec, self.status, self.now))
            return
        for replica_type in self.spec.replica_specs:
            self._reconcile_pods(replica_type)
            self._reconcile_services(replica_type)
        events, failed_type = st.update_job_status(
            self.spec, self.status, self.now, worker0_completed=self.worker0_completed,
            succeeded_is_terminal=not self.options.compat_succeeded_then_failed)
        self.events.extend(events)
        if failed_type is not None:
            failed = self.failed_pods.get(failed_type)
            index, pod = failed[0] if failed else (None, None)
            message = str(self.status["conditions"][-1].get("message", ""))
            self.status[st.FAILURE] = failure_summary(failed_type, index, pod, "Failed", message)
        self._record_warnings()
        if self.pod_creates and self.gang is not None and uses_custom_scheduler(self.spec, self.gang):
            self._event("Warning", "SetPodTemplateSchedulerName", CUSTOM_SCHEDULER_MESSAGE)
        if st.is_finished(self.status):
            self._finish_now()
        else:
            self.requeue = earliest(self.requeue, st.deadline_left(self.spec, self.status, self.now),
                                    0.0 if self.more_creates else None)

    def _finish_now(self) -> None:
        """The job finished in this pass: create nothing more, and clean up now rather than next pass."""
        self.pod_creates.clear()
        self.service_creates.clear()
        self.object_creates.clear()
        self.more_creates = False
        self.events = [e for e in self.events if e.reason not in _CREATE_WARNINGS]
        self._finished()

    # ---- failing -----------------------------------------------------------------------------
    def _fail_by_policy(self, message: str, reason: str, culprit: PodInfo | None) -> None:
        """Backoff/deadline. v1.9.4 sets Failed before the cleanup, so cleanPodPolicy applies (G6, I5)."""
        replica_type, index = "", None
        if culprit is not None:
            kind = culprit.labels.get(LABEL_REPLICA_TYPE, "")
            replica_type = next((t for t in self.spec.replica_specs if t.lower() == kind), kind)
            index = replica_index(culprit.labels)
        self._fail(message, reason, replica_type, index, culprit)
        policy = self.spec.run_policy.clean_pod_policy
        self._clean_up(CLEAN_POD_ALL if self.options.compat_cleanup_ignores_policy_on_failure else policy,
                       "cleanPodPolicy")
        self._drop_pod_group()
        self._ttl()
