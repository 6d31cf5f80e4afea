"""`deferrable` follows `[operators] default_deferrable` and `resync_seconds` the provider's section.

Both are read when the DAG file is parsed (the task is built), so each case builds the tasks in a fresh
interpreter with the setting in its environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PROBE = """
import json
from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.sensors.broadcast_job import BroadcastJobSensor
from airflow_broadcast.sensors.tf_job import TFJobSensor

tasks = [BroadcastJobOperator(task_id="b", manifest={}), TFJobOperator(task_id="t", manifest={}),
         BroadcastJobSensor(task_id="bs", job_name="j"), TFJobSensor(task_id="ts", job_name="j")]
print(json.dumps([[task.deferrable, task.resync_seconds] for task in tasks]))
"""


def probe_with(**settings: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__")}
    env.update(settings, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def defaults_with(**settings: str) -> list[list[object]]:
    result = probe_with(**settings)
    assert result.returncode == 0, result.stderr[-3000:]
    parsed: list[list[object]] = json.loads(result.stdout.strip().splitlines()[-1])
    return parsed


@pytest.mark.parametrize("deferrable", [True, False])
def test_operators_and_sensors_follow_airflows_default_deferrable(deferrable: bool) -> None:
    found = defaults_with(AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE=str(deferrable))
    assert found == [[deferrable, 30.0]] * 4


def test_the_default_resync_interval_comes_from_the_provider_section() -> None:
    found = defaults_with(AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE="True",
                          AIRFLOW__AIRFLOW_BROADCAST__RESYNC_SECONDS="12")
    assert found == [[True, 12.0]] * 4


def test_another_options_bad_value_does_not_break_a_dag_file() -> None:
    """A negative client option is refused when a task's client is built, not while DAG files are parsed."""
    found = defaults_with(AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE="True", AIRFLOW__AIRFLOW_BROADCAST__CLIENT_QPS="-1")
    assert found == [[True, 30.0]] * 4


def test_a_negative_default_resync_interval_is_refused_by_name() -> None:
    result = probe_with(AIRFLOW__AIRFLOW_BROADCAST__RESYNC_SECONDS="-1")
    assert result.returncode != 0
    assert "[airflow_broadcast] resync_seconds must not be negative, got -1.0" in result.stderr
