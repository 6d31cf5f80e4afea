"""The operator contract shared by BroadcastJob and TFJob: validate, submit or re-attach, drive, conclude."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar

from airflow_broadcast.cluster.job_records import read_status
from airflow_broadcast.cluster.job_submission import submit_job
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.worker_loop import run_on_worker
from airflow_broadcast.hooks.kubernetes import connection_namespace
from airflow_broadcast.operators.job_runtime import (
    JobTarget,
    conclude,
    defer_timeout,
    execution_deadline,
    run_inline,
)
from airflow_broadcast.specs.timestamps import from_rfc3339
from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger
from airflow_broadcast.version_compat import BaseOperator


@dataclass(frozen=True)
class ParsedJob:
    """A validated manifest: identity, the canonical manifest to store, and its timing policy."""

    name: str
    namespace: str
    manifest: Mapping[str, Any]
    active_deadline_seconds: int | None
    starts_suspended: bool = False


class KubernetesJobOperator(BaseOperator):
    """Base of BroadcastJobOperator and TFJobOperator; subclasses set `kind` and `parse()`.

    :param manifest: the job as upstream writes it: a dict, YAML/JSON text, or a path to a
        .yaml/.yml/.json file (found relative to the DAG folder or template_searchpath). (templated)
    :param namespace: overrides metadata.namespace; else the connection's namespace, else `default`. (templated)
    :param kubernetes_conn_id: an Airflow connection of the cncf `kubernetes` type. (templated)
    :param deferrable: reconcile from the triggerer (default) instead of the worker.
    :param wait_for_completion: False submits the job and returns; a sensor then drives and waits.
    :param reattach: a retry of the same task re-attaches to its running job instead of failing.
    :param on_kill_action: `delete_active_pods` (default) or `keep` when the task is killed.
    """

    kind: ClassVar[str] = ""
    template_fields: Sequence[str] = ("manifest", "namespace", "kubernetes_conn_id", "cluster_context")
    template_ext: Sequence[str] = (".yaml", ".yml", ".json")
    template_fields_renderers: ClassVar[dict[str, str]] = {"manifest": "yaml"}
    ui_color = "#d3e4f7"

    def __init__(self, *, manifest: Mapping[str, Any] | str, namespace: str | None = None,
                 kubernetes_conn_id: str = "kubernetes_default", cluster_context: str | None = None,
                 deferrable: bool = True, wait_for_completion: bool = True, reattach: bool = True,
                 on_kill_action: str = "delete_active_pods", resync_seconds: float = 30.0,
                 log_tail_lines: int = 50, max_logged_failures: int = 5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if on_kill_action not in ("delete_active_pods", "keep"):
            raise ValueError(f"on_kill_action must be 'delete_active_pods' or 'keep', not {on_kill_action!r}")
        self.manifest = manifest
        self.namespace = namespace
        self.kubernetes_conn_id = kubernetes_conn_id
        self.cluster_context = cluster_context
        self.deferrable = deferrable
        self.wait_for_completion = wait_for_completion
        self.reattach = reattach
        self.on_kill_action = on_kill_action
        self.resync_seconds = resync_seconds
        self.log_tail_lines = log_tail_lines
        self.max_logged_failures = max_logged_failures
        self._target: JobTarget | None = None

    # ---- kind-specific ---------------------------------------------------------------------
    def parse(self, manifest: Mapping[str, Any] | str, namespace: str | None, default_namespace: str) -> ParsedJob:
        raise NotImplementedError

    def driver_options(self) -> dict[str, Any]:
        return {}

    def is_finished(self, status: Mapping[str, Any]) -> bool:
        raise NotImplementedError

    async def before_submit(self, client: KubeClient, job: ParsedJob) -> list[str]:
        """Checks against the cluster before the record is created: warnings to log; an error creates nothing."""
        return []

    # ---- flow --------------------------------------------------------------------------
    def execute(self, context: Any) -> Any:
        default_ns = connection_namespace(self.kubernetes_conn_id) if self.namespace is None else self.namespace
        job = self.parse(self.manifest, self.namespace, default_ns)  # InvalidSpecError: nothing is created
        ti = context["ti"]
        submitter = f"{ti.dag_id}/{ti.task_id}/{ti.run_id}/{getattr(ti, 'map_index', -1)}"
        submission = run_on_worker(lambda: self._submit(job, submitter))
        self._target = JobTarget(self.kind, job.namespace, submission.name, submission.uid,
                                 self.kubernetes_conn_id, self.cluster_context, self.driver_options())
        ti.xcom_push(key="job", value={"kind": self.kind, "name": job.name, "namespace": job.namespace,
                                       "record": submission.name, "uid": submission.uid})
        self.log.info("%s %s/%s %s (record %s, uid %s)", self.kind, job.namespace, job.name,
                      "re-attached" if submission.reattached else "submitted", submission.name, submission.uid)
        if not self.wait_for_completion:
            return {"kind": self.kind, "name": job.name, "namespace": job.namespace, "uid": submission.uid,
                    "record": submission.name, "phase": "submitted"}
        deadline = execution_deadline(context, self.execution_timeout)
        if self.deferrable:
            status = read_status(submission.record)
            ads_deadline = None
            # The deadline counts from startTime, which a suspended or paused job does not have yet
            # (and a resume resets): only a running job bounds the deferral by it.
            if job.active_deadline_seconds is not None and not job.starts_suspended:
                started = from_rfc3339(status.get("startTime")) or time.time()
                ads_deadline = started + job.active_deadline_seconds
            timeout = defer_timeout([deadline, ads_deadline], self.resync_seconds)
            self.defer(trigger=self._trigger(deadline, context), method_name="execute_complete",
                       timeout=None if timeout is None else timedelta(seconds=timeout))
        outcome, message = run_inline(self._target, deadline, self.resync_seconds, self.log)
        return self._conclude(outcome, message)

    async def _submit(self, job: ParsedJob, submitter: str) -> Any:
        from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook

        hook = BroadcastKubernetesHook(self.kubernetes_conn_id, cluster_context=self.cluster_context)
        client = await hook.kube_client()
        for warning in await self.before_submit(client, job):
            self.log.warning("%s", warning)
        return await submit_job(client, self.kind, job.name, job.namespace, job.manifest, submitter=submitter,
                                reattach=self.reattach, is_finished=self.is_finished)

    def _trigger(self, deadline: float | None, context: Any) -> JobReconcileTrigger:
        assert self._target is not None
        ti = context["ti"]
        return JobReconcileTrigger(
            kind=self.kind, namespace=self._target.namespace, record_name=self._target.record_name,
            uid=self._target.uid, kubernetes_conn_id=self.kubernetes_conn_id, cluster_context=self.cluster_context,
            deadline=deadline, options=self.driver_options(), resync_seconds=self.resync_seconds,
            on_kill_action=self.on_kill_action,
            task_key={"dag_id": ti.dag_id, "task_id": ti.task_id, "run_id": ti.run_id},
        )

    def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
        self._target = JobTarget(event["kind"], event["namespace"], event["record_name"], event["uid"],
                                 self.kubernetes_conn_id, self.cluster_context, self.driver_options())
        return self._conclude(event["status"], event.get("message", ""))

    def _conclude(self, outcome: str, message: str) -> Any:
        assert self._target is not None
        return conclude(self._target, outcome, message, self.log, log_tail_lines=self.log_tail_lines,
                        max_logged_failures=self.max_logged_failures,
                        on_timeout_stop=self.on_kill_action == "delete_active_pods")

    def on_kill(self) -> None:
        """Worker-side kill (deferrable=False): stop the job's active pods unless told to keep them."""
        if self._target is None or self.on_kill_action == "keep":
            return
        from airflow_broadcast.cluster.job_control import stop_active_children

        target = self._target

        async def stop() -> int:
            client = await target.hook().kube_client()
            return await stop_active_children(client, target.namespace, target.record_name, target.uid)

        self.log.info("on_kill: deleted %d active pod(s)", run_on_worker(stop))

