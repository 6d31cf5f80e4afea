"""Weekly node maintenance: prune unused container images on every node of a pool, a slice of nodes at a time.

What makes it safe to run unattended:
- one run at a time (`max_active_runs=1`) and no catch-up of missed weeks;
- one job per run: the job name carries the run's date (see the manifest), so a retry of the run
  re-attaches to the job its first try submitted instead of starting over or failing;
- `execution_timeout` is an absolute deadline: when it passes, the task deletes the pods still running
  and fails; `activeDeadlineSeconds` in the manifest bounds the job itself;
- expired job records of earlier runs are swept first, so the namespace does not fill up with them.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG, Param

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.job_cleanup import JobCleanupOperator

with DAG(
    dag_id="example_node_maintenance",
    schedule="0 3 * * 0",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=5)},
    params={
        "namespace": Param("demo", type="string", description="Namespace of the job records and their pods."),
        "node_selector": Param({"kubernetes.io/os": "linux"}, type="object",
                               description="Labels of the nodes to maintain."),
    },
    tags=["broadcastjob", "maintenance", "example"],
) as dag:
    # [START howto_node_maintenance]
    sweep = JobCleanupOperator(
        task_id="delete_expired_records",
        namespaces=["{{ params.namespace }}"],
    )
    prune = BroadcastJobOperator(
        task_id="prune_images",
        manifest="manifests/prune-images.yaml",
        namespace="{{ params.namespace }}",
        reattach=True,
        execution_timeout=timedelta(hours=2),
    )
    sweep >> prune
    # [END howto_node_maintenance]
