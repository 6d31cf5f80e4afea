"""One TFJob from dag_run.conf (`manifest`, `namespace`) through `airflow dags test`, as `bcj_run` runs one BCJ."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_broadcast.operators.tf_job import TFJobOperator

with DAG(dag_id="tf_run", start_date=datetime(2026, 1, 1), schedule=None, catchup=False,
         render_template_as_native_obj=True):
    TFJobOperator(task_id="tfjob", manifest="{{ dag_run.conf['manifest'] }}",
                  namespace="{{ dag_run.conf['namespace'] }}")
