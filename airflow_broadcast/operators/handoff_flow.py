"""Hand-off mode on the worker: choose the controller, then wait (inline or deferred) and conclude from the
custom resource's status with the kind's own summary and failure rules."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import PokeReturnValue

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.handoff.choice import HandOff, hand_off
from airflow_broadcast.cluster.handoff.resources import delete_resource, get_resource
from airflow_broadcast.cluster.handoff.watch import finished
from airflow_broadcast.cluster.job_records import get_record, record_name
from airflow_broadcast.cluster.kube_client import JsonDict
from airflow_broadcast.cluster.reconcile_loop import LoopReason
from airflow_broadcast.cluster.worker_loop import run_on_worker
from airflow_broadcast.exceptions import JobFailedError
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
from airflow_broadcast.operators.job_runtime import TIMEOUTS, defer_timeout
from airflow_broadcast.reconcilers.handoff import Controller, resource_view
from airflow_broadcast.reconcilers.kind import JobIdentity, JobKind, ParsedJob, SubmittedJob, identity
from airflow_broadcast.triggers.handoff import HandoffTrigger, wait_handed_off
from airflow_broadcast.triggers.job_reconcile import JobTriggerArgs
from airflow_broadcast.triggers.progress import TaskLog
from airflow_broadcast.triggers.task_output import shown_message, shown_result

COMPLETE_METHOD = "execute_handoff_complete"


def choose(task: Any, job: ParsedJob, submitter: str, requested: Controller) -> HandOff:
    """Run the choice on the worker and say in the task log which controller runs the job, and why."""

    async def choose_now() -> HandOff:
        hook = BroadcastKubernetesHook(task.kubernetes_conn_id, cluster_context=task.cluster_context)
        client = await hook.kube_client()
        return await hand_off(client, task.job_kind(), job.manifest, requested=requested, submitter=submitter,
                              reattach=task.reattach, probe_seconds=task.handoff_probe_seconds)

    chosen = run_on_worker(choose_now)
    task.log.info("controller=%r runs %s %s/%s: %s", chosen.decision.controller, task.kind, job.namespace, job.name,
                  chosen.decision.reason)
    return chosen


def run_handed_off(task: Any, chosen: HandOff, args: JobTriggerArgs, context: Any) -> JobIdentity:
    """The custom resource exists: push its identity, then return, defer, or wait here, as in `airflow` mode."""
    assert chosen.resource is not None
    view = resource_view(chosen.resource)
    job_identity = identity(task.kind, view)
    context["ti"].xcom_push(key="job", value=job_identity)
    task.log.info("%s %s/%s %s (uid %s), run by the cluster's controller", task.kind, view.namespace, view.name,
                  "re-attached" if chosen.reattached else "created", view.uid)
    if not task.wait_for_completion:
        submitted: SubmittedJob = {**job_identity, "phase": "submitted"}
        return submitted
    if task.deferrable:
        timeout = defer_timeout([args.deadline], args.resync_seconds)
        task.defer(trigger=HandoffTrigger(args), method_name=COMPLETE_METHOD,
                   timeout=None if timeout is None else timedelta(seconds=timeout))

    async def wait() -> tuple[str, str]:
        outcome = await wait_handed_off(args, await args.hook().kube_client(), task.log)
        return outcome.reason.value, outcome.message

    outcome, message = run_on_worker(wait)
    return conclude_handed_off(args, outcome, message, task.log, task.job_kind())


def conclude_handed_off(args: JobTriggerArgs, outcome: str, message: str, log: TaskLog,
                        kind: JobKind[Any, Any]) -> JobIdentity:
    """The kind's summary of the resource's final status, or the error its failure or Airflow's deadline raises.

    The TTL is the controller's; a timeout deletes the resource unless `on_kill_action` is `keep`.
    """
    reason = LoopReason(outcome)

    async def collect() -> JobIdentity:
        client = await args.hook().kube_client()
        raw = await get_resource(client, args.kind, args.namespace, args.record_name)
        if raw is None or (raw.get("metadata") or {}).get("uid") != args.uid:
            raise JobFailedError(shown_message(f"{args.kind} {args.namespace}/{args.record_name} disappeared "
                                               f"before its result was read ({message or outcome})"))
        if reason in TIMEOUTS:
            error, what = TIMEOUTS[reason]
            if args.on_kill_action == "delete_active_pods":
                await delete_resource(client, args.kind, args.namespace, args.record_name, args.uid)
                log.warning("%s: deleted %s %s/%s", what, args.kind, args.namespace, args.record_name)
            raise error(shown_message(f"{args.kind} {args.namespace}/{args.record_name}: {message}"))
        if reason in (LoopReason.INVALID, LoopReason.ERROR, LoopReason.GONE):
            raise JobFailedError(shown_message(f"{args.kind} {args.namespace}/{args.record_name}: {message}"))
        summary = kind.summary(resource_view(raw))
        failure = kind.failure(summary)
        if failure:
            raise JobFailedError(shown_message(failure))
        result: JobIdentity = shown_result(summary)
        return result

    try:
        return run_on_worker(collect)
    except ClusterApiError as exc:
        raise JobFailedError(shown_message(exc.describe())) from exc


def delete_on_kill(task: Any, args: JobTriggerArgs) -> None:
    """Worker-side kill in `cluster` mode: delete the custom resource (its pods go with it)."""

    async def delete() -> bool:
        client = await args.hook().kube_client()
        return await delete_resource(client, args.kind, args.namespace, args.record_name, args.uid)

    deleted = run_on_worker(delete)
    task.log.info("on_kill: %s %s %s/%s", "deleted" if deleted else "found no", args.kind, args.namespace,
                  args.record_name)


def find_handed_off(task: Any, namespace: str) -> str | None:
    """For a sensor: the uid of the custom resource it waits on, or None when the job has Airflow as its
    controller (`airflow`, or `auto` finding a job record). `cluster` without the resource fails the task."""
    if task.controller == "airflow":
        return None

    async def find() -> tuple[JsonDict | None, bool]:
        hook = BroadcastKubernetesHook(task.kubernetes_conn_id, cluster_context=task.cluster_context)
        client = await hook.kube_client()
        if task.controller == "auto" and await get_record(client, namespace, record_name(task.kind, task.job_name)):
            return None, False
        return await get_resource(client, task.kind, namespace, task.job_name), True

    resource, looked = run_on_worker(find)
    if resource is not None:
        return str(resource["metadata"]["uid"])
    if looked and task.controller == "cluster":
        raise JobFailedError(f"no {task.kind} custom resource named {task.job_name} in namespace {namespace}")
    return None


def poke_handed_off(task: Any, args: JobTriggerArgs) -> PokeReturnValue | bool:
    """One look at the custom resource: not done yet (False), or the concluded result."""

    async def look() -> LoopReason | None:
        client = await args.hook().kube_client()
        raw = await get_resource(client, args.kind, args.namespace, args.record_name)
        if raw is None or (raw.get("metadata") or {}).get("uid") != args.uid:
            return LoopReason.GONE
        return finished(task.job_kind())(resource_view(raw))

    reason = run_on_worker(look)
    if reason is None:
        return False
    return PokeReturnValue(is_done=True, xcom_value=conclude_handed_off(args, reason.value, "", task.log,
                                                                        task.job_kind()))
