"""The deferrable trigger that *is* the controller: it reconciles one job until it is done.

Kwargs carry identifiers, switches and absolute timestamps only (never credentials):
Airflow stores them in plain text, and a restarted trigger must rebuild from them.
"""

from __future__ import annotations

import asyncio
import json
import os
import traceback
from collections.abc import AsyncIterator, Mapping
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.kinds.registry import driver_for
from airflow_broadcast.cluster.reconcile_loop import run_reconcile_loop
from airflow_broadcast.cluster.ttl_sweeper import sweep_in_background
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
from airflow_broadcast.triggers.loop_lag import LoopLag
from airflow_broadcast.triggers.progress import ProgressLog

LOOP_LAG_ENV = "AIRFLOW_BROADCAST_MEASURE_LOOP_LAG"


class JobReconcileTrigger(BaseTrigger):
    """Drive a BroadcastJob or TFJob record until it finishes, then fire one event.

    Event `status`: finished | settled | timeout | gone | invalid | error.
    """

    def __init__(self, kind: str, namespace: str, record_name: str, uid: str,
                 kubernetes_conn_id: str = "kubernetes_default", cluster_context: str | None = None,
                 deadline: float | None = None, options: Mapping[str, Any] | None = None,
                 resync_seconds: float = 30.0, on_kill_action: str = "delete_active_pods",
                 task_key: Mapping[str, Any] | None = None) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.kind = kind
        self.namespace = namespace
        self.record_name = record_name
        self.uid = uid
        self.kubernetes_conn_id = kubernetes_conn_id
        self.cluster_context = cluster_context
        self.deadline = deadline
        self.options = dict(options or {})
        self.resync_seconds = resync_seconds
        self.on_kill_action = on_kill_action
        self.task_key = dict(task_key or {})

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", {
            "kind": self.kind, "namespace": self.namespace, "record_name": self.record_name, "uid": self.uid,
            "kubernetes_conn_id": self.kubernetes_conn_id, "cluster_context": self.cluster_context,
            "deadline": self.deadline, "options": self.options, "resync_seconds": self.resync_seconds,
            "on_kill_action": self.on_kill_action, "task_key": self.task_key,
        })

    def _hook(self) -> BroadcastKubernetesHook:
        return BroadcastKubernetesHook(self.kubernetes_conn_id, cluster_context=self.cluster_context)

    def _event(self, status: str, message: str = "", **extra: Any) -> TriggerEvent:
        return TriggerEvent({"status": status, "message": message, "kind": self.kind, "namespace": self.namespace,
                             "record_name": self.record_name, "uid": self.uid, **extra})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            client = await self._hook().kube_client()
            driver = driver_for(self.kind, self.options)
            sweep = asyncio.get_running_loop().create_task(sweep_in_background(client, self.namespace))
            progress = ProgressLog(self.log, driver)
            lag = LoopLag() if os.environ.get(LOOP_LAG_ENV) else None
            monitor = asyncio.get_running_loop().create_task(lag.run()) if lag else None
            try:
                outcome = await run_reconcile_loop(
                    client, driver, self.namespace, self.record_name, self.uid,
                    deadline=self.deadline, resync=self.resync_seconds, progress=progress.update,
                )
            finally:
                if monitor is not None and lag is not None:
                    monitor.cancel()
                    self.log.info("event loop lag while reconciling: %s (%d API requests)", json.dumps(lag.report()),
                                  client.requests_sent)
            await asyncio.wait([sweep], timeout=5)
            yield self._event(outcome.reason, outcome.message, phase=str(outcome.status.get("phase", "")))
        except ClusterApiError as exc:
            yield self._event("error", exc.describe())
        except Exception as exc:
            yield self._event("error", f"{type(exc).__name__}: {exc}", stack_trace=traceback.format_exc())

    async def on_kill(self) -> None:
        """A user marked the task failed or cleared it (Airflow 3.3+): stop the job's active pods.

        Airflow 3.3 may also call this on a triggerer that lost the trigger to another
        one (reassignment); then the task is still deferred and nothing is deleted.
        """
        if self.on_kill_action == "keep":
            return
        if await self._still_deferred():
            self.log.info("on_kill ignored: the task is still deferred (trigger reassigned to another triggerer)")
            return
        from airflow_broadcast.cluster.job_control import stop_active_children

        try:
            client = await self._hook().kube_client()
            deleted = await asyncio.wait_for(
                stop_active_children(client, self.namespace, self.record_name, self.uid), 25)
            self.log.info("on_kill: deleted %d active pod(s) of %s %s/%s", deleted, self.kind, self.namespace,
                          self.record_name)
        except Exception as exc:
            self.log.warning("on_kill could not stop %s %s: %s", self.kind, self.record_name, exc)

    async def _still_deferred(self) -> bool:
        if not self.task_key:
            return False
        try:
            from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

            states = await asyncio.to_thread(
                RuntimeTaskInstance.get_task_states, dag_id=self.task_key["dag_id"],
                task_ids=[self.task_key["task_id"]], run_ids=[self.task_key["run_id"]],
            )
        except Exception as exc:
            self.log.info("cannot read the task state (%s); treating the kill as a user action", exc)
            return False
        found = states.get(self.task_key["run_id"], {})
        state = found.get(self.task_key["task_id"]) if isinstance(found, dict) else None
        return str(state) in ("deferred", "TaskInstanceState.DEFERRED")

