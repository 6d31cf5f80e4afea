"""The sensor contract shared by BroadcastJob and TFJob: wait for a named job *and* keep reconciling it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any, ClassVar

from airflow.sdk import PokeReturnValue

from airflow_broadcast.cluster.job_records import get_record, record_name
from airflow_broadcast.cluster.worker_loop import run_on_worker
from airflow_broadcast.exceptions import JobFailedError
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook, connection_namespace
from airflow_broadcast.operators.job_runtime import JobTarget, conclude, run_inline
from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger
from airflow_broadcast.version_compat import BaseSensorOperator


class KubernetesJobSensor(BaseSensorOperator):
    """Wait until a submitted job finishes, driving its reconciliation meanwhile.

    The job progresses even when only the sensor runs (for example after an operator with
    `wait_for_completion=False`). Returns the same XCom as the operator.

    :param job_name: metadata.name of the job. (templated)
    :param namespace: its namespace; else the connection's, else `default`. (templated)
    :param deferrable: wait in the triggerer (default); else each poke runs one reconcile pass.
    """

    kind: ClassVar[str] = ""
    template_fields: Sequence[str] = ("job_name", "namespace", "kubernetes_conn_id", "cluster_context")
    ui_color = "#e8f1fb"

    def __init__(self, *, job_name: str, namespace: str | None = None,
                 kubernetes_conn_id: str = "kubernetes_default", cluster_context: str | None = None,
                 deferrable: bool = True, resync_seconds: float = 30.0, log_tail_lines: int = 50,
                 max_logged_failures: int = 5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.job_name = job_name
        self.namespace = namespace
        self.kubernetes_conn_id = kubernetes_conn_id
        self.cluster_context = cluster_context
        self.deferrable = deferrable
        self.resync_seconds = resync_seconds
        self.log_tail_lines = log_tail_lines
        self.max_logged_failures = max_logged_failures

    def driver_options(self) -> dict[str, Any]:
        return {}

    def _resolve(self) -> JobTarget:
        namespace = self.namespace or connection_namespace(self.kubernetes_conn_id)
        name = record_name(self.kind, self.job_name)

        async def find() -> Any:
            hook = BroadcastKubernetesHook(self.kubernetes_conn_id, cluster_context=self.cluster_context)
            return await get_record(await hook.kube_client(), namespace, name)

        record = run_on_worker(find)
        if record is None:
            raise JobFailedError(f"no {self.kind} named {self.job_name} in namespace {namespace} "
                                 f"(its record ConfigMap {name} does not exist)")
        return JobTarget(self.kind, namespace, name, str(record["metadata"]["uid"]), self.kubernetes_conn_id,
                         self.cluster_context, self.driver_options())

    def execute(self, context: Any) -> Any:
        if not self.deferrable:
            return super().execute(context)
        target = self._resolve()
        ti = context["ti"]
        self.defer(
            trigger=JobReconcileTrigger(
                kind=self.kind, namespace=target.namespace, record_name=target.record_name, uid=target.uid,
                kubernetes_conn_id=self.kubernetes_conn_id, cluster_context=self.cluster_context,
                options=self.driver_options(), resync_seconds=self.resync_seconds, on_kill_action="keep",
                task_key={"dag_id": ti.dag_id, "task_id": ti.task_id, "run_id": ti.run_id},
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout),
        )
        return None

    def poke(self, context: Any) -> PokeReturnValue | bool:
        target = self._resolve()
        outcome, message = run_inline(target, None, self.resync_seconds, self.log, single_pass=True)
        if outcome == "pending":
            return False
        return PokeReturnValue(is_done=True, xcom_value=self._conclude(target, outcome, message))

    def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
        target = JobTarget(self.kind, event["namespace"], event["record_name"], event["uid"],
                           self.kubernetes_conn_id, self.cluster_context, self.driver_options())
        return self._conclude(target, event["status"], event.get("message", ""))

    def _conclude(self, target: JobTarget, outcome: str, message: str) -> Any:
        return conclude(target, outcome, message, self.log, log_tail_lines=self.log_tail_lines,
                        max_logged_failures=self.max_logged_failures, on_timeout_stop=False)
