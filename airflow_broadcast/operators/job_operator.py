"""The operator contract shared by BroadcastJob and TFJob: validate, submit or re-attach, drive, conclude."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_broadcast.cluster.job_submission import submit_job
from airflow_broadcast.cluster.kinds.registry import JobOptions, kind_for
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.worker_loop import run_on_worker
from airflow_broadcast.hooks.kubernetes import connection_namespace
from airflow_broadcast.operators.handoff_flow import choose, conclude_handed_off, delete_on_kill, run_handed_off
from airflow_broadcast.operators.janitor_check import ttl_janitor_warnings
from airflow_broadcast.operators.job_runtime import (
    conclude,
    defer_timeout,
    execution_deadline,
    run_inline,
    task_key,
)
from airflow_broadcast.operators.manifest_source import is_manifest_path, render_manifest_file
from airflow_broadcast.operators.task_settings import JobTaskSettings
from airflow_broadcast.reconcilers.kind import JobIdentity, JobKind, KindName, ParsedJob, SubmittedJob, identity
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.triggers.job_reconcile import (
    ON_KILL_ACTIONS,
    JobEventPayload,
    JobReconcileTrigger,
    JobTriggerArgs,
    OnKillAction,
)
from airflow_broadcast.ui.links import JobStatusLink

if TYPE_CHECKING:
    import jinja2


class ReconciledJobOperator(JobTaskSettings):
    """Base of BroadcastJobOperator and TFJobOperator; subclasses set `kind` and `job_options`.

    :param manifest: the job as upstream writes it: a dict, YAML/JSON text, or the path of a
        .yaml/.yml/.json file, absolute or relative to the DAG folder or template_searchpath, whose
        content is rendered with Jinja. The strings inside a dict are rendered too, but never read
        as file names. (templated)
    :param namespace: overrides metadata.namespace; else the connection's namespace, else `default`. (templated)
    :param kubernetes_conn_id: an Airflow connection of the cncf `kubernetes` type. (templated)
    :param deferrable: reconcile from the triggerer instead of the worker; defaults to Airflow's
        `[operators] default_deferrable`.
    :param wait_for_completion: False submits the job and returns; a sensor then drives and waits.
    :param reattach: a retry of the same task re-attaches to its running job instead of failing.
    :param on_kill_action: `delete_active_pods` (default) or `keep` when the task is killed.
    :param finish_in_triggerer: end a successful task in the triggerer (Airflow's TaskSuccessEvent) instead of
        resuming it on a worker: the XCom is the same and success is recorded about a second after the job
        finishes instead of several seconds. A failure still resumes on the worker. Such a task runs no
        `execute_complete` and no worker-side task listeners, hence off by default.
    :param startup_timeout_seconds: fail the task when a pod of the job has been Pending (not scheduled, or
        its containers not started) for longer, counted from the pod's creation; its active pods are then
        deleted as on a timeout (per `on_kill_action`). 0 or None: no limit.
    :param controller: `airflow` (default): Airflow is the job's controller. `cluster`: create the real custom
        resource and leave it to the cluster's controller (OpenKruise, training-operator), waiting on its status;
        `on_kill` and `execution_timeout` delete it (per `on_kill_action`). `auto`: `cluster` when the CRD is
        served and a controller writes the job's status within `handoff_probe_seconds`, else `airflow`.
    :param handoff_probe_seconds: how long `auto` waits for a controller to act on the job (default 30).
    """

    kind: ClassVar[KindName]
    job_options: JobOptions
    template_fields: Sequence[str] = ("manifest", "namespace", "kubernetes_conn_id", "cluster_context")
    template_ext: Sequence[str] = ()  # see manifest_source: only the manifest itself may name a file
    template_fields_renderers: ClassVar[dict[str, str]] = {"manifest": "yaml"}
    ui_color = "#d3e4f7"
    operator_extra_links = (JobStatusLink(),)

    def __init__(self, *, manifest: Mapping[str, Any] | str, wait_for_completion: bool = True,
                 reattach: bool = True, on_kill_action: OnKillAction = "delete_active_pods",
                 finish_in_triggerer: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if on_kill_action not in ON_KILL_ACTIONS:
            raise ValueError(f"on_kill_action must be 'delete_active_pods' or 'keep', not {on_kill_action!r}")
        self.manifest = manifest
        self.wait_for_completion = wait_for_completion
        self.reattach = reattach
        self.on_kill_action = on_kill_action
        self.finish_in_triggerer = finish_in_triggerer
        self._args: JobTriggerArgs | None = None
        self._handed_off = False

    def _do_render_template_fields(self, parent: Any, template_fields: Iterable[str], context: Any,
                                   jinja_env: jinja2.Environment, seen_oids: set[int]) -> None:
        """Render as Airflow does, then read and render the file a rendered manifest path names.

        Airflow calls this for plain and for mapped tasks alike (on the unmapped task).
        """
        fields = tuple(template_fields)
        super()._do_render_template_fields(parent, fields, context, jinja_env, seen_oids)
        if parent is self and "manifest" in fields and is_manifest_path(self.manifest):
            self.manifest = render_manifest_file(
                self.manifest, jinja_env, lambda text: self.render_template(text, context, jinja_env))

    # ---- kind-specific ---------------------------------------------------------------------
    def job_kind(self) -> JobKind[Any, Any]:
        return kind_for(self.kind, self.job_options)

    def parse(self, manifest: Mapping[str, Any] | str, namespace: str | None, default_namespace: str) -> ParsedJob:
        """Validate the manifest (InvalidSpecError: nothing is created) and log the kind's warnings."""
        job = self.job_kind().parse(manifest, namespace=namespace, default_namespace=default_namespace)
        for warning in job.warnings:
            self.log.warning("%s", warning)
        return job

    async def before_submit(self, client: KubeClient, job: ParsedJob) -> list[str]:
        """Checks against the cluster before the record is created: warnings to log; an error creates nothing.

        Every kind checks that a TTL janitor runs where the job has a TTL; a kind adds its own checks.
        """
        return await ttl_janitor_warnings(client, job)

    # ---- flow --------------------------------------------------------------------------
    def execute(self, context: Any) -> JobIdentity:
        default_ns = connection_namespace(self.kubernetes_conn_id) if self.namespace is None else self.namespace
        job = self.parse(self.manifest, self.namespace, default_ns)
        ti = context["ti"]
        submitter = f"{ti.dag_id}/{ti.task_id}/{ti.run_id}/{getattr(ti, 'map_index', -1)}"
        if self.controller != "airflow":
            chosen = choose(self, job, submitter, self.controller)
            if chosen.resource is not None:
                meta = chosen.resource["metadata"]
                self._args = self._trigger_args(meta["namespace"], meta["name"], meta["uid"], context,
                                                execution_deadline(context, self.execution_timeout))
                self._handed_off = True
                return run_handed_off(self, chosen, self._args, context)
        record, reattached = run_on_worker(lambda: self._submit(job, submitter))
        deadline = execution_deadline(context, self.execution_timeout)
        self._args = self._trigger_args(record.namespace, record.name, record.uid, context, deadline)
        job_identity = identity(self.kind, record)
        ti.xcom_push(key="job", value=job_identity)
        self.log.info("%s %s/%s %s (record %s, uid %s)", self.kind, record.namespace, record.job_name,
                      "re-attached" if reattached else "submitted", record.name, record.uid)
        if not self.wait_for_completion:
            submitted: SubmittedJob = {**job_identity, "phase": "submitted"}
            return submitted
        if self.deferrable:
            # The deadline counts from startTime, which a suspended or paused job does not have yet
            # (and a resume resets): only a running job bounds the deferral by it.
            active_deadline = self.job_kind().active_deadline(record, time.time())
            timeout = defer_timeout([deadline, active_deadline], self.resync_seconds)
            self.defer(trigger=JobReconcileTrigger(self._args), method_name="execute_complete",
                       timeout=None if timeout is None else timedelta(seconds=timeout))
        outcome, message = run_inline(self._args, self.log)
        return self._conclude(outcome, message)

    async def _submit(self, job: ParsedJob, submitter: str) -> tuple[JobRecord, bool]:
        from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook

        hook = BroadcastKubernetesHook(self.kubernetes_conn_id, cluster_context=self.cluster_context)
        client = await hook.kube_client()
        for warning in await self.before_submit(client, job):
            self.log.warning("%s", warning)
        return await submit_job(client, self.job_kind(), job.name, job.namespace, job.manifest, submitter=submitter,
                                reattach=self.reattach)

    def _trigger_args(self, namespace: str, record_name: str, uid: str, context: Any,
                      deadline: float | None = None) -> JobTriggerArgs:
        return JobTriggerArgs(
            kind=self.kind, namespace=namespace, record_name=record_name, uid=uid, options=self.job_options,
            kubernetes_conn_id=self.kubernetes_conn_id, cluster_context=self.cluster_context, deadline=deadline,
            resync_seconds=self.resync_seconds, on_kill_action=self.on_kill_action, task_key=task_key(context),
            startup_timeout_seconds=self.startup_timeout_seconds, get_logs=self.get_logs,
            finish_in_triggerer=self.finish_in_triggerer,
        )

    def execute_complete(self, context: Any, event: JobEventPayload) -> JobIdentity:
        self._args = self._trigger_args(event["namespace"], event["record_name"], event["uid"], context)
        return self._conclude(event["status"], event.get("message", ""))

    def execute_handoff_complete(self, context: Any, event: JobEventPayload) -> JobIdentity:
        """The end of a deferral in `cluster` mode: conclude from the custom resource."""
        self._args = self._trigger_args(event["namespace"], event["record_name"], event["uid"], context)
        return conclude_handed_off(self._args, event["status"], event.get("message", ""), self.log, self.job_kind())

    def _conclude(self, outcome: str, message: str) -> JobIdentity:
        assert self._args is not None
        return conclude(self._args, outcome, message, self.log, log_tail_lines=self.log_tail_lines,
                        max_logged_failures=self.max_logged_failures)

    def on_kill(self) -> None:
        """Worker-side kill (deferrable=False): stop the job's active pods unless told to keep them."""
        if self._args is None or self.on_kill_action == "keep":
            return
        if self._handed_off:
            delete_on_kill(self, self._args)
            return
        from airflow_broadcast.cluster.job_control import stop_active_children

        args = self._args

        async def stop() -> int:
            client = await args.hook().kube_client()
            return await stop_active_children(client, args.namespace, args.record_name, args.uid)

        self.log.info("on_kill: deleted %d active pod(s)", run_on_worker(stop))
