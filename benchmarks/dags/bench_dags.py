"""DAGs the benchmarks run through `airflow dags test`; the manifest and namespace come from dag_run.conf."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.tf_job import TFJobOperator

COMMON = {"start_date": datetime(2026, 1, 1), "schedule": None, "catchup": False, "render_template_as_native_obj": True}

with DAG(dag_id="bench_broadcast_job", **COMMON):
    BroadcastJobOperator(task_id="bcj", manifest="{{ dag_run.conf['manifest'] }}",
                         namespace="{{ dag_run.conf['namespace'] }}")

with DAG(dag_id="bench_tf_job", **COMMON):
    TFJobOperator(task_id="tfjob", manifest="{{ dag_run.conf['manifest'] }}",
                  namespace="{{ dag_run.conf['namespace'] }}")

with DAG(dag_id="bench_broadcast_job_ends_in_triggerer", **COMMON):
    BroadcastJobOperator(task_id="bcj", manifest="{{ dag_run.conf['manifest'] }}",
                         namespace="{{ dag_run.conf['namespace'] }}", finish_in_triggerer=True)
