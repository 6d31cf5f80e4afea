"""The DAG of the authoring end-to-end tests: manifests as DAG authors write them on day one.

A dict whose container args name `.json`/`.yaml`/`.yml` files, a manifest file given by an
absolute path (from dag_run.conf), by a path relative to the DAG folder and to
template_searchpath (its content uses Jinja), and job names of the maximum length.
Every task runs in the namespace and node pool given in dag_run.conf.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from airflow.sdk import DAG

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.tf_job import TFJobOperator

SIM = "sim.airflow-broadcast.io"
MANIFESTS = Path(__file__).parent / "manifests"
NAMESPACE = "{{ dag_run.conf['namespace'] }}"
FILE_ARGS = ["--config", "/etc/app/settings.json", "--hparams", "conf/hparams.yaml", "--extra", "extra.yml"]
PLAIN_ARGS = ["--epochs", "3"]  # the name cases use no file-like args, so that only the name is under test
DONE = {f"{SIM}/result": "Succeeded"}


def broadcast_job(name: str, args: list[str]) -> dict[str, Any]:
    """The file's job as a dict (its Jinja strings are rendered as values), with another name and args."""
    manifest: dict[str, Any] = yaml.safe_load((MANIFESTS / "authoring-bcj.yaml").read_text())
    manifest["metadata"]["name"] = name
    manifest["spec"]["template"]["spec"]["containers"][0]["args"] = args
    return manifest


def tf_job(name: str) -> dict[str, Any]:
    """One worker (no TF_CONFIG, so no Service is needed) that succeeds after a second."""
    container = {"name": "tensorflow", "image": "kubeflow/tf-mnist:latest", "args": list(PLAIN_ARGS)}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "Never", "template": {
            "metadata": {"annotations": {**DONE, f"{SIM}/after": "1s"}},
            "spec": {"containers": [container]}}}}},
    }


with DAG(dag_id="authoring_e2e", start_date=datetime(2026, 1, 1), schedule=None, catchup=False,
         template_searchpath=[str(MANIFESTS)]):
    BroadcastJobOperator(task_id="nested_args", manifest=broadcast_job("nested-args", FILE_ARGS), namespace=NAMESPACE)
    BroadcastJobOperator(task_id="absolute_file", manifest="{{ dag_run.conf['manifest_path'] }}",
                         namespace=NAMESPACE)
    BroadcastJobOperator(task_id="dag_folder_file", manifest="manifests/authoring-bcj.yaml", namespace=NAMESPACE)
    BroadcastJobOperator(task_id="searchpath_file", manifest="authoring-bcj.yaml", namespace=NAMESPACE)
    BroadcastJobOperator(task_id="long_bcj", manifest=broadcast_job("{{ dag_run.conf['long_bcj'] }}", PLAIN_ARGS),
                         namespace=NAMESPACE)
    TFJobOperator(task_id="long_tfjob", manifest=tf_job("{{ dag_run.conf['long_tfjob'] }}"), namespace=NAMESPACE)
