"""Provider metadata read by Airflow's ProvidersManager through the entry point."""

from __future__ import annotations

from typing import Any

from airflow_broadcast import __version__
from airflow_broadcast.config import provider_config


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": "airflow-provider-broadcast",
        "name": "Broadcast and TF jobs",
        "description": "Run OpenKruise BroadcastJobs and Kubeflow TFJobs with Airflow as the controller.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "Kubernetes Broadcast Jobs",
                "external-doc-url": "https://openkruise.io/docs/user-manuals/broadcastjob",
                "tags": ["software"],
            },
        ],
        "hooks": [
            {
                "integration-name": "Kubernetes Broadcast Jobs",
                "python-modules": ["airflow_broadcast.hooks.kubernetes", "airflow_broadcast.hooks.job_client"],
            }
        ],
        "triggers": [
            {
                "integration-name": "Kubernetes Broadcast Jobs",
                "python-modules": [
                    "airflow_broadcast.triggers.pod_completion",
                    "airflow_broadcast.triggers.job_reconcile",
                    "airflow_broadcast.triggers.ttl_janitor",
                    "airflow_broadcast.triggers.handoff",
                ],
            }
        ],
        "operators": [
            {
                "integration-name": "Kubernetes Broadcast Jobs",
                "python-modules": [
                    "airflow_broadcast.operators.broadcast_job",
                    "airflow_broadcast.operators.tf_job",
                    "airflow_broadcast.operators.job_cleanup",
                ],
            }
        ],
        "sensors": [
            {
                "integration-name": "Kubernetes Broadcast Jobs",
                "python-modules": ["airflow_broadcast.sensors.broadcast_job", "airflow_broadcast.sensors.tf_job"],
            }
        ],
        "config": provider_config(),
    }
