"""Nightly distributed MNIST training with a Kubeflow TFJob, without the training-operator installed."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_broadcast.operators.tf_job import TFJobOperator

with DAG(
    dag_id="tfjob_distributed_mnist",
    schedule="0 1 * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    params={"namespace": "demo"},
    tags=["tfjob", "example"],
) as dag:
    # [START howto_operator_tf_job]
    train = TFJobOperator(
        task_id="train",
        manifest="manifests/mnist-dist.yaml",
        namespace="{{ params.namespace }}",
        kubernetes_conn_id="kubernetes_default",
    )
    # [END howto_operator_tf_job]
