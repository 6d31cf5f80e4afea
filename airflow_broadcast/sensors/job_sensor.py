"""The sensor contract shared by BroadcastJob and TFJob: wait for a named job *and* keep reconciling it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any, ClassVar

from airflow.sdk import PokeReturnValue

from airflow_broadcast.cluster.job_records import get_record, record_name
from airflow_broadcast.cluster.kinds.registry import JobOptions, kind_for
from airflow_broadcast.cluster.reconcile_loop import LoopReason
from airflow_broadcast.cluster.worker_loop import run_on_worker
from airflow_broadcast.exceptions import JobFailedError
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook, connection_namespace
from airflow_broadcast.operators.handoff_flow import (
    COMPLETE_METHOD,
    conclude_handed_off,
    find_handed_off,
    poke_handed_off,
)
from airflow_broadcast.operators.job_runtime import conclude, run_inline, task_key
from airflow_broadcast.operators.task_settings import JobTaskSettings
from airflow_broadcast.reconcilers.kind import JobIdentity, JobKind, KindName
from airflow_broadcast.specs.field_errors import InvalidSpecError, invalid
from airflow_broadcast.specs.name_rules import validate_dns1123_label, validate_dns1123_subdomain
from airflow_broadcast.triggers.handoff import HandoffTrigger
from airflow_broadcast.triggers.job_reconcile import (
    JobEventPayload,
    JobReconcileTrigger,
    JobTriggerArgs,
)
from airflow_broadcast.ui.links import JobStatusLink
from airflow_broadcast.version_compat import BaseSensorOperator


class ReconciledJobSensor(JobTaskSettings, BaseSensorOperator):
    """Wait until a submitted job finishes, driving its reconciliation meanwhile.

    The job progresses even when only the sensor runs (for example after an operator with
    `wait_for_completion=False`). Returns the same XCom as the operator. Killing the sensor
    leaves the job's pods running: the job belongs to the task that submitted it.

    :param job_name: metadata.name of the job. (templated)
    :param namespace: its namespace; else the connection's, else `default`. (templated)
    :param deferrable: wait in the triggerer; else each poke runs one reconcile pass. Defaults to Airflow's
        `[operators] default_deferrable`.
    :param startup_timeout_seconds: fail when a pod of the job has been Pending longer (as the operator's);
        the sensor leaves the pods running. 0 or None: no limit.
    :param controller: `airflow` (default) waits on the job record; `cluster` on the custom resource the
        cluster's controller runs (as the operator's `controller="cluster"` creates it); `auto` on the record
        if there is one, else on the custom resource.
    """

    kind: ClassVar[KindName]
    job_options: JobOptions
    template_fields: Sequence[str] = ("job_name", "namespace", "kubernetes_conn_id", "cluster_context")
    ui_color = "#e8f1fb"
    operator_extra_links = (JobStatusLink(),)

    def __init__(self, *, job_name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.job_name = job_name
        self._handed_off = False

    def _args(self, namespace: str, name: str, uid: str, context: Any) -> JobTriggerArgs:
        return JobTriggerArgs(
            kind=self.kind, namespace=namespace, record_name=name, uid=uid, options=self.job_options,
            kubernetes_conn_id=self.kubernetes_conn_id, cluster_context=self.cluster_context,
            resync_seconds=self.resync_seconds, on_kill_action="keep", task_key=task_key(context),
            startup_timeout_seconds=self.startup_timeout_seconds, get_logs=self.get_logs,
        )

    def _resolve(self, context: Any) -> JobTriggerArgs:
        namespace = self.namespace or connection_namespace(self.kubernetes_conn_id)
        self._check_names(namespace)
        uid = find_handed_off(self, namespace)
        self._handed_off = uid is not None
        if uid is not None:
            return self._args(namespace, self.job_name, uid, context)
        name = record_name(self.kind, self.job_name)

        async def find() -> Any:
            hook = BroadcastKubernetesHook(self.kubernetes_conn_id, cluster_context=self.cluster_context)
            return await get_record(await hook.kube_client(), namespace, name)

        record = run_on_worker(find)
        if record is None:
            raise JobFailedError(f"no {self.kind} named {self.job_name} in namespace {namespace} "
                                 f"(its record ConfigMap {name} does not exist)")
        return self._args(namespace, name, str(record["metadata"]["uid"]), context)

    def _check_names(self, namespace: str) -> None:
        """InvalidSpecError before any request: the (templated) names go into API paths."""
        name = self.job_name
        errors = validate_dns1123_subdomain(name, "job_name") if isinstance(name, str) else [
            invalid("job_name", name, "must be a string")]
        errors += validate_dns1123_label(namespace, "namespace")
        if errors:
            raise InvalidSpecError(self.kind, str(name), errors)

    def execute(self, context: Any) -> Any:
        if not self.deferrable:
            return super().execute(context)
        args = self._resolve(context)
        trigger = HandoffTrigger(args) if self._handed_off else JobReconcileTrigger(args)
        self.defer(trigger=trigger, method_name=COMPLETE_METHOD if self._handed_off else "execute_complete",
                   timeout=timedelta(seconds=self.timeout))
        return None

    def poke(self, context: Any) -> PokeReturnValue | bool:
        args = self._resolve(context)
        if self._handed_off:
            return poke_handed_off(self, args)
        outcome, message = run_inline(args, self.log, single_pass=True)
        if outcome is LoopReason.PENDING:
            return False
        return PokeReturnValue(is_done=True, xcom_value=self._conclude(args, outcome, message))

    def execute_complete(self, context: Any, event: JobEventPayload) -> JobIdentity:
        args = self._args(event["namespace"], event["record_name"], event["uid"], context)
        return self._conclude(args, event["status"], event.get("message", ""))

    def job_kind(self) -> JobKind[Any, Any]:
        return kind_for(self.kind, self.job_options)

    def execute_handoff_complete(self, context: Any, event: JobEventPayload) -> JobIdentity:
        args = self._args(event["namespace"], event["record_name"], event["uid"], context)
        return conclude_handed_off(args, event["status"], event.get("message", ""), self.log, self.job_kind())

    def _conclude(self, args: JobTriggerArgs, outcome: str, message: str) -> JobIdentity:
        return conclude(args, outcome, message, self.log, log_tail_lines=self.log_tail_lines,
                        max_logged_failures=self.max_logged_failures)
