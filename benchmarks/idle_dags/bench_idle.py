"""One DAG run whose many BroadcastJobOperator tasks the triggerer benchmark defers at once.

The task count comes from BENCH_IDLE_TASKS when the file is parsed; `lag_probe` carries the
benchmark's loop-lag probe trigger.
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator

with DAG(dag_id="bench_idle", start_date=datetime(2026, 1, 1), schedule=None, catchup=False):
    EmptyOperator(task_id="lag_probe")
    for i in range(int(os.environ.get("BENCH_IDLE_TASKS", "1000"))):
        BroadcastJobOperator(task_id=f"job_{i:05d}", manifest="{{ dag_run.conf['manifest'] }}",
                             namespace="{{ dag_run.conf['namespace'] }}")
