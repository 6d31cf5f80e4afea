"""Nightly distributed MNIST training: prepare the training pool, train with a TFJob, evaluate the outcome.

No training-operator runs in the cluster: the TFJob is driven by Airflow. `evaluate` decides from the train
task's XCom (phase, replicaStatuses, failure) whether the model may be published; when training failed it
reads the same fields from the job record, and fails the run with the replica that broke and why.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import DAG, Param, TriggerRule, task
from airflow.sdk.exceptions import AirflowFailException

from airflow_broadcast.hooks.job_client import JobClient
from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.tf_job import TFJobOperator

HINTS = {
    "OOMKilled": "raise the replica's memory limit",
    "Evicted": "the node ran out of resources; re-run",
    "DeadlineExceeded": "raise runPolicy.activeDeadlineSeconds",
    "BackoffLimitExceeded": "the replica kept failing; read its log in the train task",
}


def training_result(ti: Any) -> dict[str, Any]:
    """The train task's XCom; if that task failed, the same fields read from the job record."""
    result = ti.xcom_pull(task_ids="train")
    if result is not None:
        return dict(result)
    job = ti.xcom_pull(task_ids="train", key="job")  # pushed right after submission
    if job is None:
        raise AirflowFailException("the training job was never submitted: see the train task's log")
    status = JobClient("TFJob", namespace=job["namespace"]).get_job(job["name"])["status"]
    return {"name": job["name"], "phase": "Failed" if status.get("failure") else "Unfinished",
            "replicaStatuses": status.get("replicaStatuses") or {}, "failure": status.get("failure")}


with DAG(
    dag_id="tfjob_distributed_mnist",
    schedule="0 1 * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    params={
        "namespace": Param("demo", type="string", description="Namespace of the jobs and their pods."),
        "node_selector": Param({"kubernetes.io/os": "linux"}, type="object",
                               description="Labels of the training pool's nodes."),
    },
    tags=["tfjob", "example"],
) as dag:
    prepare = BroadcastJobOperator(
        task_id="prepare",
        manifest="manifests/mnist-prepull.yaml",
        namespace="{{ params.namespace }}",
        execution_timeout=timedelta(minutes=20),
    )
    # [START howto_operator_tf_job]
    train = TFJobOperator(
        task_id="train",
        manifest="manifests/mnist-dist.yaml",
        namespace="{{ params.namespace }}",
        kubernetes_conn_id="kubernetes_default",
        execution_timeout=timedelta(hours=2),
        retries=1,
    )
    # [END howto_operator_tf_job]

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def evaluate(ti: Any = None) -> dict[str, Any]:
        """Publish only a model whose training succeeded with no worker lost; otherwise say why not."""
        result = training_result(ti)
        failure = result.get("failure")
        if failure:
            reason = failure.get("reason") or "failed"
            raise AirflowFailException(
                f"training {result.get('name')} failed in {failure.get('replicaType')} {failure.get('index')} "
                f"(pod {failure.get('pod')}, exit code {failure.get('exitCode')}, {reason}): "
                f"{HINTS.get(reason, 'read the replica log in the train task')}")
        if result["phase"] != "Succeeded":
            raise AirflowFailException(f"training {result.get('name')} did not finish (phase {result['phase']})")
        workers = result["replicaStatuses"].get("Worker", {})
        lost = int(workers.get("failed", 0))
        return {"job": result.get("name"), "publish": lost == 0, "workers": workers,
                "reason": f"{lost} worker(s) failed: the model saw less data" if lost else "every worker finished"}

    prepare >> train >> evaluate()
