"""DAGs the BroadcastJob end-to-end tests run through `airflow dags test`; everything comes from dag_run.conf."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import DAG
from crash_once import CrashOnceAfterSubmit

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.job_cleanup import JobCleanupOperator
from airflow_broadcast.sensors.broadcast_job import BroadcastJobSensor

COMMON: dict[str, Any] = {"start_date": datetime(2026, 1, 1), "schedule": None, "catchup": False,
                          "render_template_as_native_obj": True}
MANIFEST = "{{ dag_run.conf['manifest'] }}"
NAMESPACE = "{{ dag_run.conf['namespace'] }}"


class CrashOnceBroadcastJobOperator(CrashOnceAfterSubmit, BroadcastJobOperator):
    """Simulates a worker dying right after the first try submitted the job."""

    template_fields = (*BroadcastJobOperator.template_fields, "crash_marker")

    def __init__(self, *, crash_marker: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.crash_marker = crash_marker


with DAG(dag_id="bcj_run", **COMMON):
    BroadcastJobOperator(task_id="bcj", manifest=MANIFEST, namespace=NAMESPACE)

with DAG(dag_id="bcj_run_in_worker", **COMMON):
    BroadcastJobOperator(task_id="bcj", manifest=MANIFEST, namespace=NAMESPACE, deferrable=False)

with DAG(dag_id="bcj_submit_and_sense", **COMMON):
    submit = BroadcastJobOperator(task_id="submit", manifest=MANIFEST, namespace=NAMESPACE,
                                  wait_for_completion=False)
    sense = BroadcastJobSensor(task_id="sense", job_name="{{ dag_run.conf['manifest']['metadata']['name'] }}",
                               namespace=NAMESPACE, timeout=300)
    submit >> sense

with DAG(dag_id="bcj_retry_reattach", **COMMON):
    CrashOnceBroadcastJobOperator(task_id="bcj", manifest=MANIFEST, namespace=NAMESPACE, retries=1,
                                  retry_delay=timedelta(seconds=0), crash_marker="{{ dag_run.conf['marker'] }}")

with DAG(dag_id="bcj_cleanup", **COMMON):
    JobCleanupOperator(task_id="cleanup", namespaces=["{{ dag_run.conf['namespace'] }}"])
