"""The DAG the UI browser test runs: a BroadcastJob, a TFJob and a BroadcastJob to stop, all from dag_run.conf."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.tf_job import TFJobOperator


def conf(task: str, key: str) -> str:
    return "{{ dag_run.conf['" + task + "']['" + key + "'] }}"


with DAG(dag_id="ui_jobs", start_date=datetime(2026, 1, 1), schedule=None, catchup=False,
         render_template_as_native_obj=True):
    for task in ("bcj", "stoppable"):
        BroadcastJobOperator(task_id=task, manifest=conf(task, "manifest"), namespace=conf(task, "namespace"))
    TFJobOperator(task_id="tf", manifest=conf("tf", "manifest"), namespace=conf("tf", "namespace"))
