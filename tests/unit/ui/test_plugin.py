"""The plugin the provider ships, and the "Job status" link of every operator and sensor task."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest

from airflow_broadcast.get_provider_info import get_provider_info
from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.sensors.broadcast_job import BroadcastJobSensor
from airflow_broadcast.sensors.tf_job import TFJobSensor
from airflow_broadcast.ui.links import JobStatusLink
from airflow_broadcast.ui.plugin import BroadcastJobsPlugin

REPO = Path(__file__).resolve().parents[3]
TI = SimpleNamespace(dag_id="etl", run_id="manual__2026-01-01T00:00:00+00:00", task_id="load", map_index=2)


def query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query, keep_blank_values=True).items()}


def test_the_package_registers_the_plugin_once_through_its_entry_point() -> None:
    (entry,) = [e for e in entry_points(group="airflow.plugins") if e.name == "broadcast_jobs"]
    assert entry.value == "airflow_broadcast.ui.plugin:BroadcastJobsPlugin"
    assert "plugins" not in get_provider_info(), "a second registration is reported as a plugin import error"


def test_the_plugin_mounts_its_app_and_adds_a_nav_entry_and_a_task_instance_tab() -> None:
    (app,) = BroadcastJobsPlugin.fastapi_apps
    assert app["url_prefix"] == "/broadcast-jobs"
    nav, tab = BroadcastJobsPlugin.external_views
    assert (nav["name"], nav["destination"], nav["href"]) == ("Broadcast jobs", "nav", "/broadcast-jobs/")
    assert tab["destination"] == "task_instance"
    assert query(tab["href"]) == {"dag_id": "{DAG_ID}", "run_id": "{RUN_ID}", "task_id": "{TASK_ID}",
                                  "map_index": "{MAP_INDEX}"}


@pytest.mark.parametrize("operator", [BroadcastJobOperator, TFJobOperator])
def test_an_operator_links_to_the_job_its_task_instance_submitted(operator: type) -> None:
    task = operator(task_id="load", manifest={})
    (link,) = [link for link in task.operator_extra_links if isinstance(link, JobStatusLink)]
    url = link.get_link(task, ti_key=TI)
    assert url.startswith("/broadcast-jobs/?")
    assert query(url) == {"dag_id": "etl", "run_id": TI.run_id, "task_id": "load", "map_index": "2"}


@pytest.mark.parametrize("sensor", [BroadcastJobSensor, TFJobSensor])
def test_a_sensor_links_to_the_job_it_waits_for(sensor: type) -> None:
    task = sensor(task_id="wait", job_name="nightly", namespace="batch")
    (link,) = task.operator_extra_links
    assert query(link.get_link(task, ti_key=TI)) == {"kind": sensor.kind, "name": "nightly", "namespace": "batch"}


def test_the_link_keeps_the_path_of_the_api_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://airflow.example.com/team-a/")
    task = BroadcastJobSensor(task_id="wait", job_name="nightly")
    assert task.operator_extra_links[0].get_link(task, ti_key=TI).startswith("/team-a/broadcast-jobs/?")


def test_airflow_loads_the_plugin_with_its_default_settings(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update({"AIRFLOW_HOME": str(tmp_path), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])})
    code = ("import json; from airflow import plugins_manager as pm; "
            "print(json.dumps([a['url_prefix'] for a in pm.get_fastapi_plugins()[0]]))")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == ["/broadcast-jobs"]
