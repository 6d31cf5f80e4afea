"""Real Airflow processes for end-to-end, crash and UI tests: api-server, scheduler, dag-processor, triggerer.

Each component is its own process on one `AirflowEnv` (SQLite, LocalExecutor), writes to its own log file,
and is stopped through its PID: it leads a process group of its own, so the scheduler's workers and the
triggerer's runner go with it. The processes import this checkout before anything installed (PYTHONPATH),
so a test exercises the code it sits next to. Short triggerer heartbeats make a dead triggerer's triggers
move to a live one within seconds instead of half a minute.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from devcluster.airflow_env import AirflowEnv
from devcluster.control_plane import free_ports

REPO_ROOT = Path(__file__).resolve().parent.parent
COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
JOB_TYPES = {"scheduler": "SchedulerJob", "dag-processor": "DagProcessorJob", "triggerer": "TriggererJob"}


class StackError(RuntimeError):
    """A component exited or did not become ready; the message carries its log tail."""


@dataclass(frozen=True)
class StackSettings:
    """What a test may tune. Keep the health-check threshold above twice the heartbeat plus a margin,
    or a healthy triggerer is declared dead and its triggers bounce between triggerers."""

    triggerer_heartbeat_seconds: int = 1
    triggerer_health_check_threshold: int = 4
    dag_folder_refresh_seconds: int = 2
    min_file_process_seconds: int = 5
    parallelism: int = 2
    extra_env: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Component:
    """One started process; `job_id` is its row in Airflow's `job` table (not for the api-server)."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    started_at: float
    job_id: int | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None


@dataclass(frozen=True)
class JobRow:
    """A row of Airflow's `job` table: how a component shows it is alive."""

    id: int
    job_type: str
    state: str
    latest_heartbeat: float


class AirflowStack:
    """Start, inspect, crash and stop the Airflow components of one `AirflowEnv`. Use it as a context manager."""

    def __init__(self, env: AirflowEnv, components: Iterable[str] = COMPONENTS,
                 settings: StackSettings | None = None) -> None:
        self.airflow_env = env
        self.components = tuple(components)
        unknown = set(self.components) - set(COMPONENTS)
        if unknown:
            raise ValueError(f"unknown Airflow components {sorted(unknown)}; choose from {COMPONENTS}")
        self.settings = settings or StackSettings()
        self.port = free_ports(("api-server",))["api-server"]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.logs_dir = env.home / "stack-logs"
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self.processes: list[Component] = []
        self.env = self._environment()

    def _environment(self) -> dict[str, str]:
        env = dict(self.airflow_env.env)
        paths = [str(REPO_ROOT), *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
        s = self.settings
        env.update({
            "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.base_url}/execution/",
            "AIRFLOW__CORE__PARALLELISM": str(s.parallelism),
            "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": str(s.triggerer_heartbeat_seconds),
            "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": str(s.triggerer_health_check_threshold),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": str(s.dag_folder_refresh_seconds),
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": str(s.min_file_process_seconds),
            **s.extra_env,
        })
        return env

    # ---- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> AirflowStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 180.0) -> AirflowStack:
        """Start the chosen components (the api-server first: the others talk to it) and wait for each."""
        try:
            for name in self.components:
                self.start_component(name, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def start_component(self, name: str, timeout: float = 120.0) -> Component:
        args = {"api-server": ["api-server", "--host", "127.0.0.1", "--port", str(self.port)],
                "scheduler": ["scheduler", "--skip-serve-logs"], "dag-processor": ["dag-processor"],
                "triggerer": ["triggerer", "--skip-serve-logs"]}[name]
        known = max((j.id for j in self.jobs(JOB_TYPES[name])), default=0) if name in JOB_TYPES else 0
        log = self.logs_dir / f"{name}-{sum(c.name == name for c in self.processes)}.log"
        with log.open("wb") as out:
            process = subprocess.Popen([str(Path(sys.executable).parent / "airflow"), *args], env=self.env,
                                       cwd=self.airflow_env.home, stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        component = Component(name, process, log, time.time())
        self.processes.append(component)
        self._wait_ready(component, known, timeout)
        return component

    def _wait_ready(self, component: Component, known_job: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if not component.running():
                raise StackError(f"{component.name} exited with {component.process.returncode}:\n"
                                 f"{self.log_tail(component)}")
            if component.name == "api-server":
                if self.health() is not None:
                    return
            else:
                fresh = [j for j in self.jobs(JOB_TYPES[component.name]) if j.id > known_job and j.state == "running"]
                if fresh:
                    component.job_id = fresh[0].id
                    return
            if time.monotonic() > deadline:
                raise StackError(f"{component.name} not ready after {timeout} s:\n{self.log_tail(component)}")
            time.sleep(0.2)

    def start_triggerer(self, timeout: float = 60.0) -> Component:
        """Start one more triggerer and wait until its job row is running."""
        return self.start_component("triggerer", timeout)

    def kill_triggerer(self) -> Component:
        """SIGKILL the newest running triggerer and what it started, as a crashed host would die."""
        component = next((c for c in reversed(self.processes) if c.name == "triggerer" and c.running()), None)
        if component is None:
            raise StackError("no triggerer is running")
        self.kill(component)
        return component

    def terminate(self, component: Component, timeout: float = 20.0) -> None:
        """Stop one component as an operator would (SIGTERM), SIGKILL if it lingers past `timeout`."""
        _signal_group(component, signal.SIGTERM)
        try:
            component.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(component)

    def kill(self, component: Component) -> None:
        """SIGKILL one component and what it started (when a test must choose which of two triggerers dies)."""
        _signal_group(component, signal.SIGKILL)
        component.process.wait(timeout=10)

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM every component's process group, then SIGKILL what is left after `timeout`."""
        for component in reversed(self.processes):
            if component.running():
                _signal_group(component, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for component in self.processes:
            try:
                component.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            _signal_group(component, signal.SIGKILL)  # also reaps children that outlived their parent
            component.process.wait(timeout=10)

    # ---- inspection -----------------------------------------------------------------------------
    def jobs(self, job_type: str) -> list[JobRow]:
        """Airflow's job rows of one type (`TriggererJob`, ...), oldest first; [] before the first migration."""
        try:
            with sqlite3.connect(self.airflow_env.home / "airflow.db", timeout=30) as db:
                rows = db.execute("SELECT id, job_type, state, latest_heartbeat FROM job WHERE job_type = ? "
                                  "ORDER BY id", (job_type,)).fetchall()
        except sqlite3.OperationalError:
            return []
        return [JobRow(int(r[0]), str(r[1]), str(r[2]), _epoch(r[3])) for r in rows]

    def health(self) -> dict[str, Any] | None:
        """The api-server's /api/v2/monitor/health answer, or None while it does not answer."""
        try:
            result: dict[str, Any] = self.api("GET", "/api/v2/monitor/health", timeout=2)
        except OSError:
            return None
        return result

    def api(self, method: str, path: str, body: Any = None, timeout: float = 30.0) -> Any:
        """One REST call to the api-server (every caller is an admin: no login) and its JSON answer."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.base_url}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json", "Accept": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read() or b"null")

    def wait_for_dag(self, dag_id: str, timeout: float = 120.0) -> None:
        """Wait until the dag-processor has parsed `dag_id` into the database."""
        deadline = time.monotonic() + timeout
        while not self._dag_known(dag_id):
            if time.monotonic() > deadline:
                raise StackError(f"DAG {dag_id} not parsed after {timeout} s:\n{self.log_tails()}")
            time.sleep(0.5)

    def _dag_known(self, dag_id: str) -> bool:
        try:
            with sqlite3.connect(self.airflow_env.home / "airflow.db", timeout=30) as db:
                row = db.execute("SELECT is_stale FROM dag WHERE dag_id = ?", (dag_id,)).fetchone()
        except sqlite3.OperationalError:
            return False
        return row is not None and not row[0]

    def log_tail(self, component: Component, lines: int = 60) -> str:
        text = component.log.read_text(errors="replace") if component.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def log_tails(self, lines: int = 60) -> str:
        """The end of every component's log, for a failing test to print."""
        return "\n".join(f"==== {c.log.name} (pid {c.pid}, {'running' if c.running() else 'exited'}) ====\n"
                         f"{self.log_tail(c, lines)}" for c in self.processes)


def _signal_group(component: Component, sig: signal.Signals) -> None:
    """Signal the process group this stack started (its id is the component's PID)."""
    try:
        os.killpg(component.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _epoch(value: Any) -> float:
    """A `job.latest_heartbeat` value (SQLite keeps it as UTC text) as epoch seconds."""
    if not value:
        return 0.0
    stamp = datetime.fromisoformat(str(value))
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()
