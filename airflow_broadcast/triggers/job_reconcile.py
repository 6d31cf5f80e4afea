"""The deferrable trigger that *is* the controller: it reconciles one job until it is done.

Kwargs carry identifiers, switches and absolute timestamps only (never credentials):
Airflow stores them in plain text, and a restarted trigger must rebuild from them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import traceback
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, NotRequired, TypedDict

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.kinds.registry import JobOptions, check_kind, driver_for, options_for
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.log_follow import LogFollower, PodChooser
from airflow_broadcast.cluster.reconcile_loop import JobDriver, LoopOutcome, LoopReason, run_reconcile_loop
from airflow_broadcast.cluster.ttl_sweeper import sweep_due, sweep_in_background
from airflow_broadcast.config import current_settings
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
from airflow_broadcast.hooks.metrics import running_in_triggerer
from airflow_broadcast.reconcilers.kind import KindName
from airflow_broadcast.reconcilers.tf_job.logs import primary_pod
from airflow_broadcast.triggers.early_event import EarlyOutcome, runner_resumes_after_event
from airflow_broadcast.triggers.loop_lag import LoopLag
from airflow_broadcast.triggers.off_loop_log import OffLoopLog
from airflow_broadcast.triggers.progress import ProgressLog, TaskLog, WarningLog, masked
from airflow_broadcast.triggers.task_end import success_event

OnKillAction = Literal["delete_active_pods", "keep"]
ON_KILL_ACTIONS: tuple[OnKillAction, ...] = ("delete_active_pods", "keep")
LOG_TARGETS: dict[KindName, PodChooser] = {"TFJob": primary_pod}  # kinds with `get_logs`: whose log to follow


class TaskKey(TypedDict):
    dag_id: str
    task_id: str
    run_id: str
    map_index: NotRequired[int]  # -1, or absent in kwargs of earlier versions: not a mapped task


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
    startup_timeout_seconds: float | None = None
    get_logs: bool = False
    finish_in_triggerer: bool = False

    def __post_init__(self) -> None:
        check_visibility(self.kind, self.startup_timeout_seconds, self.get_logs)

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
        for name, default in (("startup_timeout_seconds", None), ("get_logs", False), ("finish_in_triggerer", False)):
            if values[name] == default:
                del values[name]  # a triggerer still on an older version then rebuilds the trigger unchanged
        return values

    def driver(self) -> JobDriver[Any]:
        return driver_for(self.kind, self.options)

    def hook(self) -> BroadcastKubernetesHook:
        return BroadcastKubernetesHook(self.kubernetes_conn_id, cluster_context=self.cluster_context)


class JobReconcileTrigger(BaseTrigger):
    """Drive a BroadcastJob or TFJob record until it finishes, then fire one event (JobEventPayload).

    Built from JobTriggerArgs, or from its kwargs (as Airflow rebuilds a trigger).
    `resumed_after_event`: whether the runner keeps iterating after the event (None: True
    inside Airflow's triggerer), which lets a finished job's event go before its last writes.
    """

    resumed_after_event: ClassVar[bool | None] = None

    def __init__(self, args: JobTriggerArgs | None = None, **kwargs: Any) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.args = args if args is not None else JobTriggerArgs.from_kwargs(kwargs)
        self.fired = False

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
        task_log = OffLoopLog(type(self).logger())  # the class's logger: Airflow routes a line by its context
        try:
            settings = current_settings()
            client = await self._hook().kube_client()
            sweep = asyncio.get_running_loop().create_task(sweep_in_background(
                client, args.namespace, every=settings.ttl_sweep_seconds,
                unread_grace=settings.unread_result_grace_seconds,
            )) if sweep_due(args.namespace, settings.ttl_sweep_seconds) else None
            early = EarlyOutcome() if self._fires_early() else None
            driving = asyncio.get_running_loop().create_task(
                self._drive(client, task_log, settings.measure_loop_lag, early.announce if early else None))
            try:
                outcome, announced = await early.first(driving) if early else (await driving, False)
                if announced:
                    self.fired = True
                    await task_log.drained()
                    yield self._event(outcome.reason, outcome.message, phase=str(outcome.status.get("phase", "")))
                    await self._finish_writes(driving, sweep)
                    return
            finally:
                if not driving.done():
                    driving.cancel()
                    await asyncio.gather(driving, return_exceptions=True)
            await _settle(sweep)
            if args.finish_in_triggerer:
                ended = await success_event(client, args.driver().kind, args.namespace, args.record_name, args.uid,
                                            outcome, self.log)
                if ended is not None:
                    await task_log.drained()
                    yield ended
                    return
            await task_log.drained()
            yield self._event(outcome.reason, outcome.message, phase=str(outcome.status.get("phase", "")))
        except ClusterApiError as exc:
            await task_log.drained()
            yield self._event(LoopReason.ERROR, exc.describe())
        except Exception as exc:
            await task_log.drained()
            yield self._event(LoopReason.ERROR, f"{type(exc).__name__}: {exc}", stack_trace=traceback.format_exc())

    def _fires_early(self) -> bool:
        """Fire a finished job's event before the last writes (early_event.py); not when it ends the task here."""
        if self.args.finish_in_triggerer:
            return False
        resumed = type(self).resumed_after_event
        return runner_resumes_after_event() if resumed is None else resumed

    async def _drive(self, client: KubeClient, task_log: TaskLog, measure_lag: bool,
                     announce: Callable[[LoopOutcome], None] | None) -> LoopOutcome:
        lag = LoopLag() if measure_lag else None
        monitor = asyncio.get_running_loop().create_task(lag.run()) if lag else None
        try:
            return await drive_job(self.args, client, task_log, announce=announce)
        finally:
            if monitor is not None and lag is not None:
                monitor.cancel()
                task_log.info("event loop lag while reconciling: %s (%d API requests)", json.dumps(lag.report()),
                              client.requests_sent)

    async def _finish_writes(self, driving: asyncio.Task[LoopOutcome], sweep: asyncio.Task[None] | None) -> None:
        """After an early event: the finishing pass's writes; a failure is logged (the task's resume repeats it)."""
        try:
            await driving
        except Exception as exc:
            self.log.warning("the finished job's last writes failed (%s: %s); the task's resume repeats them",
                             type(exc).__name__, exc)
        await _settle(sweep)

    async def on_kill(self) -> None:
        """A user marked the task failed or cleared it (Airflow 3.3+): stop the job's active pods.

        Airflow 3.3 may also call this on a triggerer that lost the trigger to another
        one (reassignment); then the task is still deferred and nothing is deleted.
        """
        args = self.args
        if args.on_kill_action == "keep" or self.fired:  # fired: the job finished; the writes after it were cut
            return
        if await self._still_deferred():
            self.log.info("on_kill ignored: the task is still deferred (trigger reassigned to another triggerer)")
            return
        try:
            client = await self._hook().kube_client()
            self.log.info("on_kill: %s", await asyncio.wait_for(self._stop(client), 25))
        except Exception as exc:
            self.log.warning("on_kill could not stop %s %s: %s", args.kind, args.record_name, exc)

    async def _stop(self, client: KubeClient) -> str:
        """What on_kill does to the job, said in one line: here, delete its active pods."""
        from airflow_broadcast.cluster.job_control import stop_active_children

        args = self.args
        deleted = await stop_active_children(client, args.namespace, args.record_name, args.uid)
        return f"deleted {deleted} active pod(s) of {args.kind} {args.namespace}/{args.record_name}"

    async def _still_deferred(self) -> bool:
        key = self.args.task_key
        if not key:
            return False
        try:
            from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

            map_index = key.get("map_index", -1)
            states = await asyncio.to_thread(RuntimeTaskInstance.get_task_states, dag_id=key["dag_id"],
                                             task_ids=[key["task_id"]], run_ids=[key["run_id"]], map_index=map_index)
        except Exception as exc:
            self.log.info("cannot read the task state (%s); treating the kill as a user action", exc)
            return False
        found = states.get(key["run_id"], {})
        name = key["task_id"] if map_index < 0 else f"{key['task_id']}_{map_index}"  # Airflow's name of a mapped TI
        state = found.get(name) if isinstance(found, dict) else None
        return str(state) in ("deferred", "TaskInstanceState.DEFERRED")


async def _settle(sweep: asyncio.Task[None] | None) -> None:
    """Give this trigger's TTL sweep (if it started one) a few seconds to end with it."""
    if sweep is not None:
        await asyncio.wait([sweep], timeout=5)


def check_visibility(kind: str, startup_timeout_seconds: float | None, get_logs: bool) -> None:
    """ValueError for a negative start-up timeout, or `get_logs` on a kind without a log to follow."""
    if startup_timeout_seconds is not None and startup_timeout_seconds < 0:
        raise ValueError(f"startup_timeout_seconds must be >= 0 (0 or None: no start-up timeout), "
                         f"not {startup_timeout_seconds!r}")
    if get_logs and kind not in LOG_TARGETS:
        raise ValueError(f"get_logs is not supported for {kind}; it follows the primary pod's log of "
                         f"{', '.join(LOG_TARGETS)} jobs")


async def drive_job(args: JobTriggerArgs, client: KubeClient, log: TaskLog, *, single_pass: bool = False,
                    announce: Callable[[LoopOutcome], None] | None = None) -> LoopOutcome:
    """Run the reconcile loop with what the task log shows: progress, Warnings, and (`get_logs`) the primary log.

    The trigger and the worker (deferrable=False, sensor pokes) both drive a job through this.
    """
    driver = args.driver()
    warnings = WarningLog(log)
    follower = None
    choose = LOG_TARGETS.get(args.kind)
    if args.get_logs and choose is not None and not single_pass:
        follower = LogFollower(client, args.namespace, args.record_name, args.uid,
                               driver.watch(client, args.namespace).children, choose,
                               driver.kind.log_container({}), lambda line: log.info("%s", line), mask=masked)
        follower.start()
    try:
        return await run_reconcile_loop(
            client, driver, args.namespace, args.record_name, args.uid, deadline=args.deadline,
            resync=args.resync_seconds, progress=ProgressLog(log, driver.kind).update, single_pass=single_pass,
            startup_timeout=args.startup_timeout_seconds, warnings=warnings.add,
            thread_threshold=current_settings().thread_threshold, announce=announce,
        )
    finally:
        if follower is not None:
            await follower.finish()
        warnings.flush()
