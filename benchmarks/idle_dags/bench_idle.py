"""The DAGs whose BroadcastJobOperator tasks the triggerer benchmark defers: BENCH_IDLE_TASKS in all.

They are spread over DAGs of BENCH_IDLE_PER_DAG tasks (`bench_idle_000`, ...), as a fleet's jobs are
spread over many DAGs. For every new trigger Airflow's triggerer supervisor deserializes the trigger's
whole DAG (to read `start_from_trigger`), so one 1,000-task DAG would make its own start-up quadratic.
`bench_idle_probe` carries the benchmark's loop-lag probe trigger.
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator

TASKS = int(os.environ.get("BENCH_IDLE_TASKS", "1000"))
PER_DAG = int(os.environ.get("BENCH_IDLE_PER_DAG", "50"))
START = datetime(2026, 1, 1)

with DAG(dag_id="bench_idle_probe", start_date=START, schedule=None, catchup=False):
    EmptyOperator(task_id="lag_probe")

for first in range(0, TASKS, PER_DAG):
    with DAG(dag_id=f"bench_idle_{first // PER_DAG:03d}", start_date=START, schedule=None, catchup=False):
        for i in range(first, min(first + PER_DAG, TASKS)):
            BroadcastJobOperator(task_id=f"job_{i:05d}", manifest="{{ dag_run.conf['manifest'] }}",
                                 namespace="{{ dag_run.conf['namespace'] }}")
