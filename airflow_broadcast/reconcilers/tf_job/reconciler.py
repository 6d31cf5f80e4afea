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
nothing and applies cleanPodPolicy at once, and the TTL deletes the job only on a later
pass, so the terminal status is written first. Inputs it relies on: `PodInfo.restarts`
sums init and regular container restarts, `created_at` is the creation time, and for a
Failed pod `waiting_reason`/`pending_message` carry the pod's status.reason/message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from airflow_broadcast.reconcilers.observed import JobRecord, PodGroupInfo, PodInfo, ServiceInfo
from airflow_broadcast.reconcilers.plan import Plan, earliest
from airflow_broadcast.reconcilers.tf_job import status as st
from airflow_broadcast.reconcilers.tf_job.children import (
    abnormal_pod_warning,
    build_pod,
    exit_code,
    failure_summary,
    index_slices,
    is_restartable,
    merge_pod_warnings,
    plan_services,
    replica_index,
    tensorflow_exit,
    terminating_warning,
)
from airflow_broadcast.reconcilers.tf_job.gang_scheduling import (
    CUSTOM_SCHEDULER_MESSAGE,
    decorate_pod,
    uses_custom_scheduler,
)
from airflow_broadcast.reconcilers.tf_job.options import TFJobOptions
from airflow_broadcast.reconcilers.tf_job.pass_state import PassState
from airflow_broadcast.specs.tf_job.spec import (
    CLEAN_POD_ALL,
    LABEL_REPLICA_TYPE,
    MANAGED_BY_TRAINING_OPERATOR,
    RESTART_EXIT_CODE,
    WORKER,
    TFJobSpec,
)
from airflow_broadcast.specs.timestamps import from_rfc3339, to_rfc3339

__all__ = ["TFJobOptions", "reconcile_tf_job"]

TEMPLATE_POLICY_MESSAGE = "Restart policy in pod template will be overwritten by restart policy in replica spec"
_CREATE_REASONS = frozenset({"SuccessfulCreatePod", "SuccessfulCreateService", "SetPodTemplateRestartPolicy",
                             "SetPodTemplateSchedulerName"})


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


class _Pass(PassState):
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
            events=tuple(self.events),
            delete_job=self.delete_job,
            requeue_after=self.requeue,
            finished=st.is_finished(self.status),
        )

    # ---- the three kinds of pass ---------------------------------------------------------------
    def _finished(self, *, may_delete: bool = True) -> None:
        self._clean_up(self.spec.run_policy.clean_pod_policy, "cleanPodPolicy")
        self._drop_pod_group()
        if st.is_true(self.status, st.SUCCEEDED):
            for entry in (self.status.get("replicaStatuses") or {}).values():
                if entry and entry.get("active"):
                    entry["succeeded"] = int(entry.get("succeeded", 0)) + int(entry.pop("active"))
        self._ttl(may_delete=may_delete)

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
            self.requeue = earliest(self.requeue, st.deadline_left(self.spec, self.status, self.now))

    def _finish_now(self) -> None:
        """The job finished in this pass: create nothing more, and clean up now rather than next pass."""
        self.pod_creates.clear()
        self.service_creates.clear()
        self.object_creates.clear()
        self.events = [e for e in self.events if e.reason not in _CREATE_REASONS]
        self._finished(may_delete=False)

    # ---- failing -----------------------------------------------------------------------------
    def _fail(self, message: str, reason: str, replica_type: str, index: int | None, pod: PodInfo | None) -> None:
        """Failed=True (+ completionTime, event, `failure` summary) unless a terminal condition exists."""
        if self.status.get("completionTime") is None:
            self.status["completionTime"] = to_rfc3339(self.now)
        if self._set(st.FAILED, st.TRUE, st.REASON_FAILED, message):
            self._event("Normal", st.REASON_FAILED, message)
            self.status[st.FAILURE] = failure_summary(replica_type, index, pod, reason, message)

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
        self._ttl(may_delete=False)

    # ---- replicas ------------------------------------------------------------------------------
    def _recorded(self, replica_type: str, replicas: int) -> set[int]:
        if self.options.compat_recreate_succeeded:
            return set()
        return {int(i) for i in (self.status.get(st.SUCCEEDED_INDEXES) or {}).get(replica_type) or ()
                if int(i) < replicas}

    def _reconcile_pods(self, replica_type: str) -> None:
        """`ReconcilePods` for one type (E1-E13): create, scale down, restart, count."""
        replica = self.spec.replica_specs[replica_type]
        slices = index_slices(self.pods_by_type.get(replica_type.lower(), ()))
        recorded = self._recorded(replica_type, replica.replicas)
        succeeded_indexes = set(recorded)
        started = from_rfc3339(self.status.get("startTime"))
        active = succeeded = failed = created = 0
        for index in sorted(set(range(replica.replicas)) | slices.keys()):
            group = slices.get(index)
            in_range = index < replica.replicas
            if not group:
                if index in recorded:
                    succeeded += 1
                    self.worker0_completed |= replica_type == WORKER and index == 0
                else:
                    self._create_pod(replica_type, index)
                    created += 1
                continue
            if len(group) > 1:
                names = ", ".join(sorted(p.name for p in group))
                for pod in group:
                    self.warnings[pod.name] = ("DuplicatePods", f"Pods {names} share replica "
                                               f"{replica_type.lower()} index {index}; none is acted on")
                continue
            pod = group[0]
            if not in_range:
                if pod.deleting:
                    continue
                self._delete(pod, "scale down")
            elif pod.deleting and not pod.terminal and started is not None and 0 < pod.created_at < started:
                continue
            code = exit_code(pod)
            if tensorflow_exit(pod) is not None and not pod.deleting and index not in recorded:
                self._event("Normal", "ExitedWithCode",
                            f"Pod: {self.spec.namespace}.{pod.name} exited with code {code}")
            if in_range:
                self._replica_pod(replica_type, index, pod, code)
                if pod.phase == "Succeeded":
                    succeeded_indexes.add(index)
            if pod.phase == "Running" and not pod.deleting:
                active += 1
            elif pod.phase == "Succeeded":
                succeeded += 1
            elif pod.phase == "Failed" or (pod.phase == "Running" and pod.deleting):
                failed += 1
                self.failed_pods.setdefault(replica_type, []).append((index, pod))
        entry = {k: v for k, v in (("active", active), ("succeeded", succeeded), ("failed", failed)) if v}
        self.status.setdefault("replicaStatuses", {})[replica_type] = entry
        if not self.options.compat_recreate_succeeded:
            indexes = {**self.status.pop(st.SUCCEEDED_INDEXES, {}), replica_type: sorted(succeeded_indexes)}
            if kept := {t: v for t, v in indexes.items() if v}:
                self.status[st.SUCCEEDED_INDEXES] = kept
        if created and (replica.template.get("spec") or {}).get("restartPolicy"):
            self._event("Warning", "SetPodTemplateRestartPolicy", TEMPLATE_POLICY_MESSAGE)

    def _replica_pod(self, replica_type: str, index: int, pod: PodInfo, code: int) -> None:
        """One in-range pod: restart or fail it by policy, and note anything abnormal."""
        policy = self.spec.replica_specs[replica_type].restart_policy
        if pod.phase == "Failed":
            if is_restartable(policy, code):
                self._restart(replica_type, pod, delete=True)
            elif policy == RESTART_EXIT_CODE:
                message = st.exit_code_failed_message(self.spec.name, replica_type)
                self._fail(message, "Error", replica_type, index, pod)
        elif pod.deleting and not pod.terminal:
            if pod.phase == "Running" and policy in st.RESTARTABLE_POLICIES:
                self._restart(replica_type, pod, delete=False)
            self.warnings[pod.name] = terminating_warning(pod)
        elif pod.phase == "Succeeded":
            self.worker0_completed |= replica_type == WORKER and index == 0 and code == 0
        elif (warning := abnormal_pod_warning(pod)) is not None:
            self.warnings[pod.name] = warning

    def _restart(self, replica_type: str, pod: PodInfo, *, delete: bool) -> None:
        """E6/E7: delete the Failed pod (re-created on a later pass) and report Restarting."""
        if delete:
            self._delete(pod, "restart")
        message = st.restarting_message(self.spec.name, replica_type)
        restarted = self.status.setdefault(st.RESTARTED_PODS, {})
        if restarted.get(pod.name) != pod.uid:
            restarted[pod.name] = pod.uid
            counts = self.status.setdefault(st.CONTROLLER_RESTARTS, {})
            counts[replica_type] = int(counts.get(replica_type, 0)) + 1
            self._event("Warning", st.REASON_RESTARTING, message)
        self._set(st.RESTARTING, st.TRUE, st.REASON_RESTARTING, message)

    def _create_pod(self, replica_type: str, index: int) -> None:
        manifest = build_pod(self.spec, self.record, replica_type, index, renderer=self._renderer_for_pass())
        if self.gang is not None:
            decorate_pod(manifest, self.spec, replica_type, self.gang)
        self.pod_creates.append(manifest)
        self._event("Normal", "SuccessfulCreatePod", f"Created pod: {manifest['metadata']['name']}")

    def _reconcile_services(self, replica_type: str) -> None:
        """`ReconcileServices` (§2.6): one headless Service per index below `replicas`."""
        creates, extra, error = plan_services(self.spec, self.record, replica_type, self.services)
        for service in extra:
            self._delete(service, "scale down")
        for manifest in creates:
            self.service_creates.append(manifest)
            self._event("Normal", "SuccessfulCreateService", f"Created service: {manifest['metadata']['name']}")
        if error:
            self._event("Warning", "FailedCreateService", f"Error creating: {error}")

    def _record_warnings(self) -> None:
        """`podWarnings` + a Warning event per new or changed message (E14)."""
        current, events = merge_pod_warnings(self.status.pop(st.POD_WARNINGS, None) or {}, self.warnings)
        self.events.extend(events)
        if current:
            self.status[st.POD_WARNINGS] = current
