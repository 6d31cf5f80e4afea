"""One DAG run of `ui_jobs` on a real Airflow stack with login on, shared by the UI browser tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bcj_support import bcj_manifest
from kubernetes import client
from support.waits import wait_nodes_schedulable, wait_until
from tf_support import replica, succeed, tf_manifest
from ui_browser import Api, ui_settings

from devcluster.airflow_env import AirflowEnv
from devcluster.airflow_stack import AirflowStack
from devcluster.fake_nodes import FakeNode, create_nodes, delete_nodes

DAG_ID = "ui_jobs"


@dataclass
class UiRun:
    """The stack, the run, and a REST client per user."""

    stack: AirflowStack
    namespace: str
    run_id: str
    names: dict[str, str]
    nodes: dict[str, list[str]] = field(default_factory=dict)
    api: dict[str, Api] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"{self.stack.base_url}/broadcast-jobs/"

    def job_url(self, task: str) -> str:
        kind = "tfjob" if task == "tf" else "bcj"
        return f"{self.base}#/job/kubernetes_default/{self.namespace}/{kind}-{self.names[task]}"


def _conf(namespace: str, names: dict[str, str], selectors: dict[str, dict[str, str]]) -> dict[str, Any]:
    """`bcj` pods run until the test ends them; `stoppable` pods run until stopped; the TFJob ends by itself."""
    return {
        "bcj": {"namespace": namespace, "manifest": bcj_manifest(names["bcj"], selectors["bcj"])},
        "stoppable": {"namespace": namespace, "manifest": bcj_manifest(names["stoppable"], selectors["stoppable"])},
        "tf": {"namespace": namespace, "manifest": tf_manifest(names["tf"], {
            "Chief": replica(1, annotations=succeed("4s")), "Worker": replica(2, annotations=succeed("4s"))})},
    }


@contextmanager
def ui_run(home: Path, dags: Path, kubeconfig: str, core: client.CoreV1Api) -> Iterator[UiRun]:
    namespace, tag = f"t-{uuid.uuid4().hex[:10]}", uuid.uuid4().hex[:6]
    core.create_namespace({"metadata": {"name": namespace, "labels": {"airflow-broadcast.io/test": "true"}}})
    selectors = {task: {"ui-pool": f"{task}-{tag}"} for task in ("bcj", "stoppable")}
    nodes = {task: create_nodes(kubeconfig, [FakeNode(name=f"ui{tag}-{task[:4]}-{i}", labels=selectors[task])
                                             for i in range(count)])
             for task, count in (("bcj", 3), ("stoppable", 2))}
    try:
        wait_nodes_schedulable(core, [n for names in nodes.values() for n in names])
        env = AirflowEnv.create(home, dags, kubeconfig)
        with AirflowStack(env, settings=ui_settings(env.home)) as stack:
            stack.wait_for_dag(DAG_ID)
            api = {user: Api(stack.base_url, user) for user in ("admin", "viewer", "outsider")}
            names = {task: f"ui-{task}-{tag}" for task in ("bcj", "stoppable", "tf")}
            run_id = api["admin"].call("POST", f"/api/v2/dags/{DAG_ID}/dagRuns", {
                "logical_date": None, "conf": _conf(namespace, names, selectors)})["dag_run_id"]
            wait_until(lambda: len(core.list_namespaced_config_map(
                namespace, label_selector="app.kubernetes.io/managed-by=airflow-broadcast").items) == 3, 300, 1.0,
                what="the three tasks to submit their jobs")
            yield UiRun(stack, namespace, run_id, names, nodes, api)
    finally:
        delete_nodes(kubeconfig, [n for names in nodes.values() for n in names])
        core.delete_namespace(namespace, propagation_policy="Background")
