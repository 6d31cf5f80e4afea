"""The replica part of a TFJob pass: upstream's `ReconcilePods` and `ReconcileServices` for each replica type.

Per index below `replicas`: create the missing pod and Service, restart or fail a Failed pod
by its restart policy, scale down what is past `replicas`, count active/succeeded/failed,
and note pods that look stuck (`podWarnings`). Creates go into the plan, at most a batch of
them per pass (the rest in the next); their events come from the executor, once it knows
each create's outcome.
"""

from __future__ import annotations

from airflow_broadcast.reconcilers.observed import PodInfo
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
    tensorflow_exit,
    terminating_warning,
)
from airflow_broadcast.reconcilers.tf_job.gang_scheduling import decorate_pod
from airflow_broadcast.reconcilers.tf_job.pass_state import PassState
from airflow_broadcast.specs.tf_job.spec import RESTART_EXIT_CODE, WORKER
from airflow_broadcast.specs.timestamps import from_rfc3339, to_rfc3339

TEMPLATE_POLICY_MESSAGE = "Restart policy in pod template will be overwritten by restart policy in replica spec"


class ReplicaPass(PassState):
    """Reconciles the pods and Services of each replica type, and fails the job when a replica says so."""

    def _fail(self, message: str, reason: str, replica_type: str, index: int | None, pod: PodInfo | None) -> None:
        """Failed=True (+ completionTime, event, `failure` summary) unless a terminal condition exists."""
        if self.status.get("completionTime") is None:
            self.status["completionTime"] = to_rfc3339(self.now)
        if self._set(st.FAILED, st.TRUE, st.REASON_FAILED, message):
            self._event("Normal", st.REASON_FAILED, message)
            self.status[st.FAILURE] = failure_summary(replica_type, index, pod, reason, message)

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
                elif self._create_pod(replica_type, index):
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

    def _create_pod(self, replica_type: str, index: int) -> bool:
        """Build the missing pod if this pass has room for it (False: a later pass will)."""
        if not self._take_pod_room():
            return False
        manifest = build_pod(self.spec, self.record, replica_type, index, renderer=self._renderer_for_pass())
        if self.gang is not None:
            decorate_pod(manifest, self.spec, replica_type, self.gang)
        self.pod_creates.append(manifest)
        return True

    def _reconcile_services(self, replica_type: str) -> None:
        """`ReconcileServices` (§2.6): one headless Service per index below `replicas`."""
        planned = plan_services(self.spec, self.record, replica_type, self.services, limit=self.service_room)
        for service in planned.extra:
            self._delete(service, "scale down")
        self.more_creates |= planned.more
        self.service_room -= len(planned.creates)
        self.service_creates.extend(planned.creates)
        if planned.error:
            self._event("Warning", "FailedCreateService", f"Error creating: {planned.error}")

    def _record_warnings(self) -> None:
        """`podWarnings` + a Warning event per new or changed message (E14)."""
        current, events = merge_pod_warnings(self.status.pop(st.POD_WARNINGS, None) or {}, self.warnings)
        self.events.extend(events)
        if current:
            self.status[st.POD_WARNINGS] = current
