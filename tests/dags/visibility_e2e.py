"""The DAG the task-log visibility end-to-end tests run through `airflow dags test`; all from dag_run.conf.

One task per scenario, each with its own manifest and namespace: a chief that cannot be
scheduled and a bad image (both end at `startup_timeout_seconds`), and TFJob `get_logs` from
the triggerer and from the worker. conf: {<task_id>: {"manifest": ..., "namespace": ...}}.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airflow.sdk import DAG

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.tf_job import TFJobOperator

COMMON: dict[str, Any] = {"start_date": datetime(2026, 1, 1), "schedule": None, "catchup": False,
                          "render_template_as_native_obj": True}


def conf(task: str, key: str) -> str:
    return "{{ dag_run.conf['" + task + "']['" + key + "'] }}"


with DAG(dag_id="visibility_e2e", **COMMON):
    TFJobOperator(task_id="unschedulable", manifest=conf("unschedulable", "manifest"),
                  namespace=conf("unschedulable", "namespace"), startup_timeout_seconds=5)
    BroadcastJobOperator(task_id="bad_image", manifest=conf("bad_image", "manifest"),
                         namespace=conf("bad_image", "namespace"), startup_timeout_seconds=8)
    TFJobOperator(task_id="chief_logs", manifest=conf("chief_logs", "manifest"),
                  namespace=conf("chief_logs", "namespace"), get_logs=True)
    TFJobOperator(task_id="chief_logs_in_worker", manifest=conf("chief_logs_in_worker", "manifest"),
                  namespace=conf("chief_logs_in_worker", "namespace"), get_logs=True, deferrable=False)
