"""An isolated Airflow installation for tests and the demo: home, SQLite DB, connection, `dags test`."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class AirflowCommandError(RuntimeError):
    """An `airflow` CLI call failed; the message carries its output tail."""


@dataclass
class DagRunResult:
    """What `airflow dags test` left behind for one DAG run."""

    dag_id: str
    run_id: str
    state: str
    task_states: dict[str, str]
    xcoms: dict[str, Any]
    output: str
    returncode: int
    try_numbers: dict[str, int] = field(default_factory=dict)


@dataclass
class AirflowEnv:
    """An AIRFLOW_HOME with a migrated SQLite database and a `kubernetes_default` connection."""

    home: Path
    dags_folder: Path
    kubeconfig: str
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, home: Path, dags_folder: Path, kubeconfig: str, fresh: bool = True) -> AirflowEnv:
        if fresh and home.exists():
            shutil.rmtree(home)
        home.mkdir(parents=True, exist_ok=True)
        self = cls(home=home.resolve(), dags_folder=dags_folder.resolve(), kubeconfig=kubeconfig)
        self.env = self._environment()
        if not (self.home / "airflow.db").exists():
            self.airflow("db", "migrate")
            self.set_kubernetes_connection("kubernetes_default", kubeconfig)
        return self

    def _environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
        secret_file = self.home / "secret"
        if not secret_file.exists():
            secret_file.write_text(secrets.token_hex(16))
        secret = secret_file.read_text()
        env.update({
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.home / 'airflow.db'}",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__API_AUTH__JWT_SECRET": secret,
            "AIRFLOW__API__SECRET_KEY": secret,
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "120",
            "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True",  # as docs/index.md recommends: jobs run in the triggerer
            "KUBECONFIG": self.kubeconfig,
        })
        return env

    def airflow(self, *args: str, check: bool = True, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
        cmd = [str(Path(sys.executable).parent / "airflow"), *args]
        result = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout,
                                cwd=self.home, stdin=subprocess.DEVNULL)
        if check and result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-40:])
            raise AirflowCommandError(f"`airflow {' '.join(args)}` exited {result.returncode}:\n{tail}")
        return result

    def set_kubernetes_connection(self, conn_id: str, kubeconfig: str, namespace: str | None = None) -> None:
        extra: dict[str, Any] = {"kube_config_path": kubeconfig}
        if namespace:
            extra["namespace"] = namespace
        self.airflow("connections", "delete", conn_id, check=False)
        self.airflow("connections", "add", conn_id, "--conn-type", "kubernetes",
                     "--conn-extra", json.dumps(extra))

    def dags_test(self, dag_id: str, conf: dict[str, Any] | None = None,
                  timeout: float = 1800) -> DagRunResult:
        """Run one DAG through `airflow dags test` (deferred triggers run inline)."""
        args = ["dags", "test", dag_id]
        if conf is not None:
            args += ["--conf", json.dumps(conf)]
        result = self.airflow(*args, check=False, timeout=timeout)
        output = result.stdout + result.stderr
        run = self._latest_run(dag_id)
        if run is None:
            tail = "\n".join(output.splitlines()[-60:])
            raise AirflowCommandError(f"`airflow dags test {dag_id}` made no DAG run:\n{tail}")
        run_id, state = run
        states, tries = self._task_states(dag_id, run_id)
        return DagRunResult(dag_id=dag_id, run_id=run_id, state=state, task_states=states,
                            xcoms=self._return_values(dag_id, run_id), output=output,
                            returncode=result.returncode, try_numbers=tries)

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.home / "airflow.db")

    def _latest_run(self, dag_id: str) -> tuple[str, str] | None:
        with self._db() as db:
            row = db.execute(
                "SELECT run_id, state FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1", (dag_id,)
            ).fetchone()
        return (str(row[0]), str(row[1])) if row else None

    def _task_states(self, dag_id: str, run_id: str) -> tuple[dict[str, str], dict[str, int]]:
        with self._db() as db:
            rows = db.execute(
                "SELECT task_id, state, try_number FROM task_instance WHERE dag_id = ? AND run_id = ?",
                (dag_id, run_id),
            ).fetchall()
        return {r[0]: str(r[1]) for r in rows}, {r[0]: int(r[2] or 0) for r in rows}

    def _return_values(self, dag_id: str, run_id: str) -> dict[str, Any]:
        with self._db() as db:
            rows = db.execute(
                "SELECT task_id, value FROM xcom WHERE dag_id = ? AND run_id = ? AND key = 'return_value'",
                (dag_id, run_id),
            ).fetchall()
        values: dict[str, Any] = {}
        for task_id, raw in rows:
            value = json.loads(raw) if isinstance(raw, str | bytes) else raw
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except ValueError:
                    pass
            values[task_id] = value
        return values
