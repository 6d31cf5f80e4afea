"""Firing a finished job's event before the pass's writes, where the runner lets the trigger finish them.

A finishing pass writes the record's parts, the record, and the job's Events: two or three
round trips, 50-300 ms on a busy API server. Airflow's triggerer keeps iterating a trigger after
its event, so the trigger can fire first and write after. `airflow dags test` takes the first
event and closes the event loop at once, so there the writes go first. If the triggerer dies in
between, the task's resume finds the record behind the event and repeats the pass
(`operators/job_runtime.conclude`), which is level-triggered, so nothing is lost.
"""

from __future__ import annotations

import asyncio
import sys

from airflow_broadcast.cluster.reconcile_loop import LoopOutcome

_TRIGGER_RUNNER_COMMS = "TriggerCommsDecoder"  # the comms of Airflow's trigger runner process (3.0+)


def runner_resumes_after_event() -> bool:
    """True inside Airflow's triggerer, which keeps iterating a trigger after its event."""
    task_runner = sys.modules.get("airflow.sdk.execution_time.task_runner")
    comms = getattr(task_runner, "SUPERVISOR_COMMS", None)
    return type(comms).__name__ == _TRIGGER_RUNNER_COMMS


class EarlyOutcome:
    """Holds the outcome a finishing pass announces (the first one only)."""

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self.future: asyncio.Future[LoopOutcome] = loop.create_future()
        self._either: asyncio.Future[None] = loop.create_future()  # an announcement, or the loop's end

    def announce(self, outcome: LoopOutcome) -> None:
        if not self.future.done():
            self.future.set_result(outcome)
        self._settle()

    def _settle(self, _: object = None) -> None:
        if not self._either.done():
            self._either.set_result(None)

    async def first(self, driving: asyncio.Task[LoopOutcome]) -> tuple[LoopOutcome, bool]:
        """The announced outcome as soon as there is one (True), else the loop's own when it ends (False).

        One future and a done-callback rather than `asyncio.wait`: every idle job waits here, and
        the shallower wait keeps less of each trigger's suspended stack.
        """
        driving.add_done_callback(self._settle)
        try:
            await self._either
        finally:
            driving.remove_done_callback(self._settle)
        if self.future.done():
            return self.future.result(), True
        return driving.result(), False
