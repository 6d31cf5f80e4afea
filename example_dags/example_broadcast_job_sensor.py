"""Submit a node check without waiting, then let a sensor drive it to the end and wait for it."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG, Param

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.sensors.broadcast_job import BroadcastJobSensor

with DAG(
    dag_id="example_broadcast_job_sensor",
    schedule="30 3 * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    params={
        "namespace": Param("demo", type="string", description="Namespace of the job record and its pods."),
        "node_selector": Param({"kubernetes.io/os": "linux"}, type="object",
                               description="Labels of the nodes to check."),
    },
    tags=["broadcastjob", "example"],
) as dag:
    # [START howto_sensor_broadcast_job]
    submit = BroadcastJobOperator(
        task_id="submit_node_check",
        manifest="manifests/node-check.yaml",
        namespace="{{ params.namespace }}",
        wait_for_completion=False,
    )
    wait = BroadcastJobSensor(
        task_id="wait_node_check",
        job_name="{{ ti.xcom_pull(task_ids='submit_node_check')['name'] }}",
        namespace="{{ params.namespace }}",
        timeout=3600,
    )
    submit >> wait
    # [END howto_sensor_broadcast_job]
