"""AirflowStack's settings without starting Airflow: what every component's environment holds, and job rows read."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from devcluster.airflow_env import AirflowEnv
from devcluster.airflow_stack import REPO_ROOT, AirflowStack, StackSettings


def env(home: Path, **extra: str) -> AirflowEnv:
    return AirflowEnv(home=home, dags_folder=home / "dags", kubeconfig="kubeconfig",
                      env={"AIRFLOW_HOME": str(home), "PATH": "/usr/bin", **extra})


def test_components_import_this_checkout_first_and_share_one_api_server(tmp_path: Path) -> None:
    stack = AirflowStack(env(tmp_path, PYTHONPATH=f"/elsewhere{os.pathsep}{REPO_ROOT}"),
                         settings=StackSettings(triggerer_health_check_threshold=6, extra_env={"X": "1"}))
    assert stack.env["PYTHONPATH"].split(os.pathsep) == [str(REPO_ROOT), "/elsewhere"]
    assert stack.env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == f"http://127.0.0.1:{stack.port}/execution/"
    assert stack.env["AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC"] == "1"
    assert stack.env["AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD"] == "6"
    assert (stack.env["AIRFLOW_HOME"], stack.env["X"]) == (str(tmp_path), "1")
    assert stack.logs_dir.is_dir() and stack.processes == []


def test_unknown_components_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown Airflow components \\['webserver'\\]"):
        AirflowStack(env(tmp_path), components=["triggerer", "webserver"])


def test_job_rows_are_read_from_the_database_and_absent_before_it_exists(tmp_path: Path) -> None:
    stack = AirflowStack(env(tmp_path), components=["triggerer"])
    assert stack.jobs("TriggererJob") == []
    with sqlite3.connect(tmp_path / "airflow.db") as db:
        db.execute("CREATE TABLE job (id INTEGER, job_type TEXT, state TEXT, latest_heartbeat TEXT)")
        db.executemany("INSERT INTO job VALUES (?, ?, ?, ?)", [
            (2, "TriggererJob", "running", "2026-12-01 09:00:01.500000"),
            (1, "TriggererJob", "failed", "2026-12-01 08:00:00"), (3, "SchedulerJob", "running", None)])
    rows = stack.jobs("TriggererJob")
    assert [(r.id, r.state) for r in rows] == [(1, "failed"), (2, "running")]
    assert rows[1].latest_heartbeat == 1796115601.5  # UTC, as Airflow stores it
    assert stack.jobs("SchedulerJob")[0].latest_heartbeat == 0.0
