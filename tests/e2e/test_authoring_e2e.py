"""Day-one authoring end to end: manifests and job names as DAG authors write them, through real Airflow.

Every case is a task of one DAG (tests/dags/authoring_e2e.py) run by a single `airflow dags test`
in one namespace with its own two-node pool; each test checks its task and what it left on the cluster.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bcj_support import job_pods
from kubernetes import client
from tf_support import job_pods as tf_job_pods
from tf_support import job_services

from devcluster.airflow_env import AirflowEnv, DagRunResult
from devcluster.fake_nodes import FakeNode, create_nodes, delete_nodes

pytestmark = [pytest.mark.airflow, pytest.mark.cluster]

DAGS = Path(__file__).resolve().parents[1] / "dags"
FILE_ARGS = ["--config", "/etc/app/settings.json", "--hparams", "conf/hparams.yaml", "--extra", "extra.yml"]
LONG_BCJ = ("prepull-images-on-every-node-of-the-fleet-" * 2)[:62] + "x"
LONG_TFJOB = ("resnet50-imagenet-distributed-training-" * 2)[:62] + "x"


@dataclass
class Run:
    result: DagRunResult
    namespace: str
    nodes: list[str]


@pytest.fixture(scope="module")
def run(airflow_env: AirflowEnv, core_api: client.CoreV1Api, kubeconfig: str,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    namespace = f"t-{uuid.uuid4().hex[:10]}"
    core_api.create_namespace({"metadata": {"name": namespace, "labels": {"airflow-broadcast.io/test": "true"}}})
    nodes = create_nodes(kubeconfig, [FakeNode(name=f"{namespace}-{i}", labels={"e2e-pool": namespace})
                                      for i in range(2)])
    try:
        absolute = tmp_path_factory.mktemp("authoring") / "job.yaml"  # outside the DAG folder and searchpath
        absolute.write_text((DAGS / "manifests" / "authoring-bcj.yaml").read_text())
        conf = {"namespace": namespace, "name": "authoring", "manifest_path": str(absolute),
                "long_bcj": LONG_BCJ, "long_tfjob": LONG_TFJOB}
        yield Run(airflow_env.dags_test("authoring_e2e", conf=conf), namespace, nodes)
    finally:
        delete_nodes(kubeconfig, nodes)
        core_api.delete_namespace(namespace, propagation_policy="Background")


def succeeded(run: Run, task: str) -> dict[str, Any]:
    assert run.result.task_states[task] == "success", run.result.output[-6000:]
    summary: dict[str, Any] = run.result.xcoms[task]
    return summary


def containers(core: client.CoreV1Api, run: Run, job: str) -> list[Any]:
    pods = job_pods(core, run.namespace, job)
    assert sorted(p.spec.node_name for p in pods) == sorted(run.nodes)
    return [p.spec.containers[0] for p in pods]


def test_dict_manifest_args_naming_json_and_yaml_files_stay_strings(run: Run, core_api: client.CoreV1Api) -> None:
    """Nested strings are rendered (the pool) but never looked up as template files."""
    summary = succeeded(run, "nested_args")
    assert (summary["name"], summary["phase"], summary["succeeded"]) == ("nested-args", "completed", 2)
    assert [c.args for c in containers(core_api, run, "nested-args")] == [FILE_ARGS, FILE_ARGS]
    pods = job_pods(core_api, run.namespace, "nested-args")
    assert {p.spec.node_selector["e2e-pool"] for p in pods} == {run.namespace}


def test_absolute_manifest_path_is_read_and_its_jinja_rendered(run: Run, core_api: client.CoreV1Api) -> None:
    summary = succeeded(run, "absolute_file")
    assert (summary["name"], summary["succeeded"]) == ("authoring-absolute-file", 2)
    args = [c.args for c in containers(core_api, run, "authoring-absolute-file")]
    assert args == [["--config", "/etc/app/settings.json", "--run", run.result.run_id]] * 2


@pytest.mark.parametrize("task", ["dag_folder_file", "searchpath_file"])
def test_manifest_file_relative_to_the_dag_folder_or_searchpath_is_rendered(run: Run, core_api: client.CoreV1Api,
                                                                            task: str) -> None:
    name = f"authoring-{task.replace('_', '-')}"
    summary = succeeded(run, task)
    assert (summary["name"], summary["succeeded"]) == (name, 2)
    args = [c.args for c in containers(core_api, run, name)]
    assert args == [["--config", "/etc/app/settings.json", "--run", run.result.run_id]] * 2


def test_V2_V19_a_63_character_broadcast_job_name_runs(run: Run, core_api: client.CoreV1Api) -> None:
    """OpenKruise accepts 63 characters; pod names cut the job name, never the hash, to stay within 63."""
    assert len(LONG_BCJ) == 63
    summary = succeeded(run, "long_bcj")
    assert (summary["name"], summary["phase"], summary["succeeded"]) == (LONG_BCJ, "completed", 2)
    pods = job_pods(core_api, run.namespace, LONG_BCJ)
    assert len(pods) == 2 and {p.metadata.labels["broadcastjob-name"] for p in pods} == {LONG_BCJ}
    for pod in pods:
        prefix, _, digest = pod.metadata.name.rpartition("-")
        assert len(pod.metadata.name) == 63 and prefix == LONG_BCJ[:52] and len(digest) == 10
        assert summary["nodes"][pod.spec.node_name]["pod"] == pod.metadata.name


def test_a_63_character_tfjob_name_runs_and_its_children_are_named_as_upstream_names_them(
        run: Run, core_api: client.CoreV1Api) -> None:
    """Upstream accepts any DNS-1035 name up to 63 characters; the too-long Service fails as it does there."""
    assert len(LONG_TFJOB) == 63
    summary = succeeded(run, "long_tfjob")
    assert (summary["name"], summary["phase"]) == (LONG_TFJOB, "Succeeded")
    assert summary["replicaStatuses"]["Worker"]["succeeded"] == 1
    worker = f"{LONG_TFJOB}-worker-0"
    assert list(tf_job_pods(core_api, run.namespace, LONG_TFJOB)) == [worker]
    assert f'the Service name "{worker}" is longer than 63 characters' in run.result.output
    assert job_services(core_api, run.namespace, LONG_TFJOB) == {}
    events = core_api.list_namespaced_event(run.namespace,
                                            field_selector=f"involvedObject.name=tfjob-{LONG_TFJOB}").items
    assert any(e.reason == "FailedCreateService" and worker in e.message for e in events)
