"""Defer task instances of a DAG run onto triggers, as Airflow's execution API does when a task defers.

`python -m benchmarks.defer_rows SPEC.json`, run with the Airflow environment of the stack under test.
SPEC: {"runs": {dag_id: run_id}, "namespace", "jobs": [{"dag_id", "task_id", "record_name", "uid"}],
"probe": {"dag_id", "task_id", "path", "stop_path"} | null, "floor": bool, "chunk": int, "pause": seconds}: the
jobs arrive `chunk` at a time, `pause` seconds apart. For each job it builds the provider's
JobReconcileTrigger for that record (what BroadcastJobOperator.execute would defer on), stores the
trigger row with its kwargs serialized as the Task SDK sends them, and moves the task instance to
`deferred`; the real triggerer then picks the triggers up and runs them. With "floor", every job defers on Airflow's
own DateTimeTrigger instead: the comparator for what any trigger costs the triggerer. Running a thousand tasks
through an executor first would only add a thousand worker start-ups to get to the same rows.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def _trigger(job: dict[str, Any], spec: dict[str, Any]) -> Any:
    from airflow_broadcast.cluster.kinds.registry import options_for
    from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger, JobTriggerArgs

    key = {"dag_id": job["dag_id"], "task_id": job["task_id"], "run_id": spec["runs"][job["dag_id"]]}
    return JobReconcileTrigger(JobTriggerArgs(kind="BroadcastJob", namespace=spec["namespace"],
                                              record_name=job["record_name"], uid=job["uid"],
                                              options=options_for("BroadcastJob"), task_key=key))  # type: ignore


def _floor_trigger() -> Any:
    """The comparator: Airflow's own DateTimeTrigger, sleeping until a far moment (what a trigger costs Airflow)."""
    from datetime import UTC, datetime

    from airflow.providers.standard.triggers.temporal import DateTimeTrigger

    return DateTimeTrigger(moment=datetime(2100, 1, 1, tzinfo=UTC))


def defer(spec: dict[str, Any]) -> int:
    from airflow.utils.session import create_session

    from benchmarks.lag_probe import LagProbeTrigger

    items = [(job["dag_id"], job["task_id"], _floor_trigger() if spec.get("floor") else _trigger(job, spec))
             for job in spec["jobs"]]
    if spec.get("probe"):
        probe = spec["probe"]
        items.append((probe["dag_id"], probe["task_id"], LagProbeTrigger(probe["path"], probe["stop_path"])))
    chunk, pause = int(spec.get("chunk") or len(items) or 1), float(spec.get("pause", 0.0))
    for first in range(0, len(items), chunk):
        if first:
            time.sleep(pause)
        with create_session() as session:  # one commit per chunk: the triggerer sees the chunk arrive at once
            _store(session, items[first:first + chunk], spec["runs"])
    return len(items)


def _store(session: Any, items: list[tuple[str, str, Any]], runs: dict[str, str]) -> None:
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.trigger import Trigger
    from airflow.sdk.serde import serialize
    from airflow.utils.state import TaskInstanceState
    from sqlalchemy import update

    for dag_id, task_id, trigger in items:
        classpath, kwargs = trigger.serialize()
        row = Trigger(classpath=classpath, kwargs={})
        row.encrypted_kwargs = json.dumps(serialize(kwargs))
        session.add(row)
        session.flush()
        session.execute(update(TaskInstance).where(
            TaskInstance.dag_id == dag_id, TaskInstance.run_id == runs[dag_id],
            TaskInstance.task_id == task_id, TaskInstance.map_index == -1,
        ).values(state=TaskInstanceState.DEFERRED, trigger_id=row.id, next_method="execute_complete",
                 next_kwargs={}, trigger_timeout=None))


if __name__ == "__main__":
    print(defer(json.loads(Path(sys.argv[1]).read_text())))
