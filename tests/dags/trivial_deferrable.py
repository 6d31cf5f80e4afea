"""A trivial deferrable operator: start a pod, defer until it ends, return its phase.

It proves the whole path: worker → defer → trigger (shared client, watch) → resume.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airflow.providers.cncf.kubernetes.hooks.kubernetes import KubernetesHook
from airflow.sdk import DAG, BaseOperator, Context

from airflow_broadcast.triggers.pod_completion import PodCompletionTrigger


class PodRoundTripOperator(BaseOperator):
    template_fields = ("namespace", "outcome")

    def __init__(self, *, namespace: str, outcome: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.namespace = namespace
        self.outcome = outcome

    def execute(self, context: Context) -> None:
        api = KubernetesHook(conn_id="kubernetes_default").core_v1_client
        name = f"roundtrip-{context['ti'].try_number}"
        api.create_namespaced_pod(self.namespace, {
            "metadata": {"name": name, "annotations": {"sim.airflow-broadcast.io/result": self.outcome,
                                                       "sim.airflow-broadcast.io/after": "500ms"}},
            "spec": {"containers": [{"name": "main", "image": "busybox"}], "restartPolicy": "Never",
                     "tolerations": [{"operator": "Exists"}]},
        })
        self.defer(trigger=PodCompletionTrigger(pod_name=name, namespace=self.namespace),
                   method_name="execute_complete")

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        if event["status"] != "success":
            raise RuntimeError(event["message"])
        return {"pod": event["name"], "phase": event["phase"], "reason": event["reason"]}


with DAG(dag_id="trivial_deferrable", start_date=datetime(2026, 1, 1), schedule=None, catchup=False):
    PodRoundTripOperator(
        task_id="roundtrip",
        namespace="{{ dag_run.conf['namespace'] }}",
        outcome="{{ dag_run.conf.get('outcome', 'Succeeded') }}",
    )
