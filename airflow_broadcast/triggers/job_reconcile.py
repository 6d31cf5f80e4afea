"""The deferrable trigger that *is* the controller: it reconciles one job until it is done.

Kwargs carry identifiers, switches and absolute timestamps only (never credentials):
Airflow stores them in plain text, and a restarted trigger must rebuild from them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import traceback
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.kinds.registry import JobOptions, check_kind, driver_for, options_for
from airflow_broadcast.cluster.reconcile_loop import JobDriver, LoopReason, run_reconcile_loop
from airflow_broadcast.cluster.ttl_sweeper import sweep_in_background
from airflow_broadcast.config import current_settings
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
from airflow_broadcast.hooks.metrics import running_in_triggerer
from airflow_broadcast.reconcilers.kind import KindName
from airflow_broadcast.triggers.loop_lag import LoopLag
from airflow_broadcast.triggers.progress import ProgressLog

OnKillAction = Literal["delete_active_pods", "keep"]
ON_KILL_ACTIONS: tuple[OnKillAction, ...] = ("delete_active_pods", "keep")


class TaskKey(TypedDict):
    dag_id: str
    task_id: str
    run_id: str


class JobEventPayload(TypedDict):
    """The trigger's event: `status` is a LoopReason value (never `pending`); `phase` is the job's last phase."""

    status: str
    message: str
    kind: KindName
    namespace: str
    record_name: str
    uid: str
    phase: NotRequired[str]
    stack_trace: NotRequired[str]


@dataclass(frozen=True)
class JobTriggerArgs:
    """Which record a task drives, with which switches, how to reach the cluster, and until when.

    The trigger's kwargs are built from it (`kwargs()`) and rebuilt into it (`from_kwargs`).
    Airflow cannot store a dataclass in trigger kwargs (its serializers turn it into a string or
    refuse to load it back), so `options` is stored as its `asdict()` and rebuilt here.
    """

    kind: KindName
    namespace: str
    record_name: str
    uid: str
    options: JobOptions
    kubernetes_conn_id: str = "kubernetes_default"
    cluster_context: str | None = None
    deadline: float | None = None
    resync_seconds: float = 30.0
    on_kill_action: OnKillAction = "delete_active_pods"
    task_key: TaskKey | None = None

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> JobTriggerArgs:
        """From trigger kwargs: `options` may be the dataclass, its fields as a mapping, or missing (defaults)."""
        fields = dict(kwargs)
        kind = check_kind(str(fields.pop("kind")))
        action = fields.get("on_kill_action", "delete_active_pods")
        if action not in ON_KILL_ACTIONS:
            raise ValueError(f"on_kill_action must be 'delete_active_pods' or 'keep', not {action!r}")
        fields["task_key"] = fields.get("task_key") or None  # older triggers stored {} for "no task"
        return cls(kind=kind, options=options_for(kind, fields.pop("options", None)), **fields)

    def kwargs(self) -> dict[str, Any]:
        """Plain JSON values only, so that every Airflow version stores and reloads them unchanged."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        values["options"] = dataclasses.asdict(self.options)
        return values

    def driver(self) -> JobDriver[Any]:
        return driver_for(self.kind, self.options)

    def hook(self) -> BroadcastKubernetesHook:
        return BroadcastKubernetesHook(self.kubernetes_conn_id, cluster_context=self.cluster_context)


class JobReconcileTrigger(BaseTrigger):
    """Drive a BroadcastJob or TFJob record until it finishes, then fire one event (JobEventPayload).

    Built from JobTriggerArgs, or from its kwargs (as Airflow rebuilds a trigger).
    """

    def __init__(self, args: JobTriggerArgs | None = None, **kwargs: Any) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.args = args if args is not None else JobTriggerArgs.from_kwargs(kwargs)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{type(self).__module__}.{type(self).__qualname__}", self.args.kwargs()

    def _hook(self) -> BroadcastKubernetesHook:
        return self.args.hook()

    def _event(self, status: LoopReason, message: str = "", **extra: str) -> TriggerEvent:
        args = self.args
        payload: JobEventPayload = {"status": status.value, "message": message, "kind": args.kind,
                                    "namespace": args.namespace, "record_name": args.record_name, "uid": args.uid}
        return TriggerEvent({**payload, **extra})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        args = self.args
        running_in_triggerer()
        try:
            settings = current_settings()
            client = await self._hook().kube_client()
            driver = args.driver()
            sweep = asyncio.get_running_loop().create_task(sweep_in_background(
                client, args.namespace, every=settings.ttl_sweep_seconds,
                unread_grace=settings.unread_result_grace_seconds))
            progress = ProgressLog(self.log, driver.kind)
            lag = LoopLag() if settings.measure_loop_lag else None
            monitor = asyncio.get_running_loop().create_task(lag.run()) if lag else None
            try:
                outcome = await run_reconcile_loop(
                    client, driver, args.namespace, args.record_name, args.uid,
                    deadline=args.deadline, resync=args.resync_seconds, progress=progress.update,
                    thread_threshold=settings.thread_threshold,
                )
            finally:
                if monitor is not None and lag is not None:
                    monitor.cancel()
                    self.log.info("event loop lag while reconciling: %s (%d API requests)", json.dumps(lag.report()),
                                  client.requests_sent)
            await asyncio.wait([sweep], timeout=5)
            yield self._event(outcome.reason, outcome.message, phase=str(outcome.status.get("phase", "")))
        except ClusterApiError as exc:
            yield self._event(LoopReason.ERROR, exc.describe())
        except Exception as exc:
            yield self._event(LoopReason.ERROR, f"{type(exc).__name__}: {exc}", stack_trace=traceback.format_exc())

    async def on_kill(self) -> None:
        """A user marked the task failed or cleared it (Airflow 3.3+): stop the job's active pods.

        Airflow 3.3 may also call this on a triggerer that lost the trigger to another
        one (reassignment); then the task is still deferred and nothing is deleted.
        """
        args = self.args
        if args.on_kill_action == "keep":
            return
        if await self._still_deferred():
            self.log.info("on_kill ignored: the task is still deferred (trigger reassigned to another triggerer)")
            return
        from airflow_broadcast.cluster.job_control import stop_active_children

        try:
            client = await self._hook().kube_client()
            deleted = await asyncio.wait_for(
                stop_active_children(client, args.namespace, args.record_name, args.uid), 25)
            self.log.info("on_kill: deleted %d active pod(s) of %s %s/%s", deleted, args.kind, args.namespace,
                          args.record_name)
        except Exception as exc:
            self.log.warning("on_kill could not stop %s %s: %s", args.kind, args.record_name, exc)

    async def _still_deferred(self) -> bool:
        key = self.args.task_key
        if not key:
            return False
        try:
            from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

            states = await asyncio.to_thread(
                RuntimeTaskInstance.get_task_states, dag_id=key["dag_id"],
                task_ids=[key["task_id"]], run_ids=[key["run_id"]],
            )
        except Exception as exc:
            self.log.info("cannot read the task state (%s); treating the kill as a user action", exc)
            return False
        found = states.get(key["run_id"], {})
        state = found.get(key["task_id"]) if isinstance(found, dict) else None
        return str(state) in ("deferred", "TaskInstanceState.DEFERRED")
