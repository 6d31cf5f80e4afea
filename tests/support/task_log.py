"""A task log that keeps its lines, and the engine driven the way a task drives it (drive_job), for tests."""

from __future__ import annotations

import asyncio
from typing import Any

from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.reconcile_loop import LoopOutcome
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.triggers.job_reconcile import JobTriggerArgs, drive_job
from support.engine import Engine


class RecordingLog:
    """What a task log receives: `warning` lines as they are, `info` and `error` lines prefixed."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, msg: str, /, *args: Any) -> None:
        self.lines.append("INFO " + msg % args)

    def warning(self, msg: str, /, *args: Any) -> None:
        self.lines.append(msg % args)

    def error(self, msg: str, /, *args: Any) -> None:
        self.lines.append("ERROR " + msg % args)

    def having(self, text: str) -> list[str]:
        return [line for line in self.lines if text in line]


def drive_as_a_task(engine: Engine, submission: JobRecord, kind: str, log: RecordingLog, *, timeout: float = 120.0,
                    **args: Any) -> LoopOutcome:
    """Drive the job on the real cluster through drive_job, as the trigger does, with `args` (JobTriggerArgs)."""
    target = JobTriggerArgs.from_kwargs({"kind": kind, "namespace": engine.namespace, "record_name": submission.name,
                                         "uid": submission.uid, "resync_seconds": 5.0, **args})

    async def body(kube: KubeClient) -> LoopOutcome:
        return await asyncio.wait_for(drive_job(target, kube, log), timeout)

    return engine.run_async(body)
