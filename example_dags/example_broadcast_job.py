"""Nightly image pre-pull on every node of a pool with a BroadcastJob, driven by Airflow (`make demo` runs it)."""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG, Param

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator

with DAG(
    dag_id="example_broadcast_job_prepull",
    schedule="0 2 * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    params={
        "namespace": Param("demo", type="string", description="Namespace of the job record and its pods."),
        "node_selector": Param({"kubernetes.io/os": "linux"}, type="object",
                               description="Labels of the nodes that pull the image."),
    },
    tags=["broadcastjob", "example"],
) as dag:
    # [START howto_operator_broadcast_job]
    prepull = BroadcastJobOperator(
        task_id="prepull_images",
        manifest="manifests/prepull-images.yaml",
        namespace="{{ params.namespace }}",
        kubernetes_conn_id="kubernetes_default",
        execution_timeout=timedelta(minutes=30),
    )
    # [END howto_operator_broadcast_job]
