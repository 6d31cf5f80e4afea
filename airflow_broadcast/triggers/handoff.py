"""The trigger of hand-off mode: the cluster's controller runs the custom resource; this one only waits on it.

Its kwargs are JobTriggerArgs' (`record_name` names the custom resource), so a restarted triggerer rebuilds it
the same way. The kind's options are unused here: the upstream controller has its own.
"""

from __future__ import annotations

import traceback
from collections.abc import AsyncIterator

from airflow.triggers.base import TriggerEvent

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.handoff.resources import delete_resource
from airflow_broadcast.cluster.handoff.watch import HandoffOutcome, finished, wait_resource
from airflow_broadcast.cluster.kinds.registry import kind_for
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.reconcile_loop import LoopReason
from airflow_broadcast.hooks.metrics import running_in_triggerer
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger, JobTriggerArgs
from airflow_broadcast.triggers.progress import TaskLog


class HandoffTrigger(JobReconcileTrigger):
    """Wait until the upstream controller finishes the job's custom resource, then fire one JobEventPayload."""

    async def run(self) -> AsyncIterator[TriggerEvent]:
        running_in_triggerer()
        try:
            outcome = await wait_handed_off(self.args, await self._hook().kube_client(), self.log)
            phase = str(((outcome.resource or {}).get("status") or {}).get("phase", ""))
            yield self._event(outcome.reason, outcome.message, phase=phase)
        except ClusterApiError as exc:
            yield self._event(LoopReason.ERROR, exc.describe())
        except Exception as exc:
            yield self._event(LoopReason.ERROR, f"{type(exc).__name__}: {exc}", stack_trace=traceback.format_exc())

    async def _stop(self, client: KubeClient) -> str:
        """Delete the custom resource: its controller's garbage collection removes the pods."""
        args = self.args
        deleted = await delete_resource(client, args.kind, args.namespace, args.record_name, args.uid)
        return f"{'deleted' if deleted else 'found no'} {args.kind} {args.namespace}/{args.record_name}"


async def wait_handed_off(args: JobTriggerArgs, client: KubeClient, log: TaskLog) -> HandoffOutcome:
    """Wait until the job finishes (or settles), is deleted, or Airflow's own deadline passes; log each change
    of its phase and counters as the progress line."""
    kind = kind_for(args.kind)
    shown: list[str] = []

    def progress(view: JobRecord) -> None:
        line = kind.progress_line(kind.summary(view))
        if not shown or shown[-1] != line:
            shown.append(line)
            log.info("%s (run by the cluster's controller)", line)

    return await wait_resource(client, kind, args.namespace, args.record_name, args.uid, deadline=args.deadline,
                               done=finished(kind), progress=progress, resync=args.resync_seconds)

