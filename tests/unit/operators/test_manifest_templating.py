"""How the operators render `manifest`: a dict's strings are values, a top-level path names a file to render."""

from __future__ import annotations

import copy
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jinja2
import pytest
import yaml
from airflow.sdk import DAG

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.manifest_source import is_manifest_path
from airflow_broadcast.operators.tf_job import TFJobOperator

FILE_ARGS = ["--config", "/etc/app/settings.json", "--hparams", "conf/hparams.yaml", "extra.yml"]
TEMPLATE = """\
apiVersion: apps.kruise.io/v1alpha1
kind: BroadcastJob
metadata:
  name: "{{ params.name }}-{{ task.task_id }}"
spec:
  template:
    spec:
      containers:
        - name: main
          image: busybox
          args: ["--config", "/etc/app/settings.json"]
      restartPolicy: Never
"""


def dag(folder: Path, **kwargs: Any) -> DAG:
    """A DAG whose file lives in `folder`, as the DAG processor would load it."""
    made = DAG(dag_id="authoring", start_date=datetime(2026, 1, 1), schedule=None, params={"name": "job"}, **kwargs)
    made.fileloc = str(folder / "authoring.py")
    return made


def rendered(task: Any, **params: Any) -> Any:
    """The manifest after the task renders its fields, as the task runner does before execute."""
    context = {"params": {"name": "job", **params}, "task": task, "run_id": "manual__1"}
    task.render_template_fields(context)
    return task.manifest


def bcj_dict(args: list[str]) -> dict[str, Any]:
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "BroadcastJob", "metadata": {"name": "{{ params.name }}"},
            "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox", "args": args}],
                                           "restartPolicy": "Never"}}}}


def test_strings_in_a_dict_are_rendered_but_never_read_as_files(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "hparams.yaml").write_text("not: this")  # exists, and must still not be read
    with dag(tmp_path):
        task = BroadcastJobOperator(task_id="t", manifest=bcj_dict([*FILE_ARGS, "{{ params.name }}.json"]))
    manifest = rendered(task)
    assert manifest["metadata"]["name"] == "job"
    assert manifest["spec"]["template"]["spec"]["containers"][0]["args"] == [*FILE_ARGS, "job.json"]


def test_an_absolute_path_is_read_and_rendered_with_the_task_context(tmp_path: Path) -> None:
    path = tmp_path / "elsewhere" / "job.yaml"
    path.parent.mkdir()
    path.write_text(TEMPLATE)
    with dag(tmp_path / "dags"):
        task = BroadcastJobOperator(task_id="abs", manifest=str(path))
    manifest = yaml.safe_load(rendered(task, name="nightly"))
    assert manifest["metadata"]["name"] == "nightly-abs"
    assert manifest["spec"]["template"]["spec"]["containers"][0]["args"] == ["--config", "/etc/app/settings.json"]


def test_a_templated_path_is_rendered_first_then_read(tmp_path: Path) -> None:
    (tmp_path / "job.json").write_text('{"kind": "BroadcastJob", "metadata": {"name": "{{ params.name }}"}}')
    with dag(tmp_path / "dags"):
        task = BroadcastJobOperator(task_id="t", manifest="{{ params.path }}")
    assert yaml.safe_load(rendered(task, path=f"  {tmp_path / 'job.json'} "))["metadata"] == {"name": "job"}


@pytest.mark.parametrize(("where", "manifest"), [("dag_folder", "manifests/job.yaml"),
                                                  ("searchpath", "job.yml")])
def test_a_relative_path_is_found_in_the_dag_folder_or_template_searchpath(tmp_path: Path, where: str,
                                                                           manifest: str) -> None:
    (tmp_path / "dags" / "manifests").mkdir(parents=True)
    (tmp_path / "shared").mkdir()
    (tmp_path / "dags" / "manifests" / "job.yaml").write_text(TEMPLATE)
    (tmp_path / "shared" / "job.yml").write_text(TEMPLATE)
    with dag(tmp_path / "dags", template_searchpath=[str(tmp_path / "shared")]):
        task = BroadcastJobOperator(task_id=where, manifest=manifest)
    assert yaml.safe_load(rendered(task))["metadata"]["name"] == f"job-{where}"


def test_a_file_renders_to_text_the_operator_parses_even_with_native_rendering(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(TEMPLATE)
    with dag(tmp_path, render_template_as_native_obj=True):
        task = BroadcastJobOperator(task_id="native", manifest="job.yaml", namespace="ns")
    job = task.parse(rendered(task), "ns", "default")
    assert (job.name, job.namespace) == ("job-native", "ns")


def test_a_missing_relative_file_names_the_path_and_the_folders_searched(tmp_path: Path) -> None:
    with dag(tmp_path / "dags", template_searchpath=[str(tmp_path / "shared")]):
        task = BroadcastJobOperator(task_id="t", manifest="manifests/missing.yaml")
    with pytest.raises(FileNotFoundError) as caught:
        rendered(task)
    message = str(caught.value)
    assert "manifest file manifests/missing.yaml was not found" in message
    assert f"{tmp_path / 'dags'}, {tmp_path / 'shared'}" in message


def test_a_missing_absolute_file_names_it(tmp_path: Path) -> None:
    with dag(tmp_path):
        task = TFJobOperator(task_id="t", manifest=str(tmp_path / "nope.json"))
    with pytest.raises(FileNotFoundError, match=f"manifest file {tmp_path / 'nope.json'} does not exist"):
        rendered(task)


def test_a_relative_path_without_a_dag_says_to_give_an_absolute_one() -> None:
    task = BroadcastJobOperator(task_id="t", manifest="job.yaml")
    with pytest.raises(FileNotFoundError, match="relative path, but the task has no DAG folder"):
        rendered(task)


def test_a_jinja_error_in_the_file_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("metadata: {name: {{ params.name }\n")
    with dag(tmp_path):
        task = BroadcastJobOperator(task_id="t", manifest="broken.yaml")
    with pytest.raises(jinja2.TemplateSyntaxError) as caught:
        rendered(task)
    assert caught.value.__notes__ == [f"while rendering manifest file {tmp_path / 'broken.yaml'}"]


def test_mapped_tasks_read_their_manifest_files_too(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(TEMPLATE)
    with dag(tmp_path) as mapping_dag:
        mapped = BroadcastJobOperator.partial(task_id="m").expand(manifest=["job.yaml", bcj_dict(FILE_ARGS)])
    manifests = []
    for index in range(2):
        context: dict[str, Any] = {"dag": mapping_dag, "dag_run": SimpleNamespace(conf={}), "run_id": "r",
                                   "ti": SimpleNamespace(map_index=index, run_id="r")}
        mapped.render_template_fields(context)
        manifests.append(context["task"].manifest)
    assert yaml.safe_load(manifests[0])["metadata"]["name"] == "job-m"
    assert manifests[1]["spec"]["template"]["spec"]["containers"][0]["args"] == FILE_ARGS


@pytest.mark.parametrize(("value", "is_path"), [
    ("job.yaml", True), ("/opt/manifests/job.yml", True), (" job.json\t", True),
    ("kind: BroadcastJob\nconfig: settings.json", False), ('{"kind": "TFJob"}', False), ("job.yaml.j2", False),
    ({"args": ["a.json"]}, False), (None, False),
])
def test_only_a_one_line_string_ending_in_a_manifest_suffix_is_a_path(value: Any, is_path: bool) -> None:
    assert is_manifest_path(value) is is_path


def test_a_tfjob_whose_service_names_would_be_too_long_is_accepted_with_a_warning(
        capsys: pytest.CaptureFixture[str]) -> None:
    name = "t" * 63
    manifest = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
                "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": {"containers": [
                    {"name": "tensorflow", "image": "tf"}]}}}}}}
    task = TFJobOperator(task_id="tf", manifest=copy.deepcopy(manifest))
    job = task.parse(task.manifest, "ns", "default")
    assert job.name == name
    assert f'the Service name "{name}-worker-1" is longer than 63 characters' in capsys.readouterr().out
