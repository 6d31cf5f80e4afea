"""Nightly image pre-pull on every Linux node with a BroadcastJob, driven by Airflow."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator

with DAG(
    dag_id="example_broadcast_job_prepull",
    schedule="0 2 * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    params={"namespace": "demo"},
    tags=["broadcastjob", "example"],
) as dag:
    # [START howto_operator_broadcast_job]
    prepull = BroadcastJobOperator(
        task_id="prepull_images",
        manifest="manifests/prepull-images.yaml",
        namespace="{{ params.namespace }}",
        kubernetes_conn_id="kubernetes_default",
    )
    # [END howto_operator_broadcast_job]
