"""DAGs the crash-safety tests run through the real scheduler and triggerer; everything comes from dag_run.conf."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airflow.sdk import DAG

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.tf_job import TFJobOperator

COMMON: dict[str, Any] = {"start_date": datetime(2026, 1, 1), "schedule": None, "catchup": False,
                          "render_template_as_native_obj": True, "max_active_runs": 4}
MANIFEST = "{{ dag_run.conf['manifest'] }}"
NAMESPACE = "{{ dag_run.conf['namespace'] }}"

with DAG(dag_id="crash_bcj", **COMMON):
    BroadcastJobOperator(task_id="job", manifest=MANIFEST, namespace=NAMESPACE, retries=0)

with DAG(dag_id="crash_tf", **COMMON):
    TFJobOperator(task_id="job", manifest=MANIFEST, namespace=NAMESPACE, retries=0)
