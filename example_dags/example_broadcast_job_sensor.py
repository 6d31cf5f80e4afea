"""Submit a node check without waiting, do other work, then wait for it with the sensor."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.sensors.broadcast_job import BroadcastJobSensor

with DAG(
    dag_id="example_broadcast_job_sensor",
    schedule="30 3 * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    params={"namespace": "demo"},
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
        job_name="node-check",
        namespace="{{ params.namespace }}",
        poke_interval=30,
        timeout=3600,
    )
    submit >> wait
    # [END howto_sensor_broadcast_job]
