"""`make demo-ui`: Airflow with the example DAGs and the Broadcast jobs page against the local cluster.

Starts (or reuses) the cluster, the api-server, scheduler, dag-processor and triggerer with login on,
triggers the pre-pull example, prints the URL and the logins, and runs until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import secrets
import signal
import sys
import time
import urllib.request
from typing import Any

from devcluster.airflow_env import AirflowEnv
from devcluster.airflow_stack import AirflowStack, StackSettings
from devcluster.control_plane import REPO_ROOT, ClusterStartError, ControlPlane
from devcluster.demo import DEMO_DAG, DEMO_DAGS_FOLDER, _ensure_nodes

USERS = {"admin": "admin", "viewer": "viewer"}


def _settings(home: Any) -> tuple[StackSettings, dict[str, str]]:
    """Login on: an admin who may stop jobs and a viewer who may only look."""
    passwords = {user: secrets.token_urlsafe(9) for user in USERS}
    (home / "demo-passwords.json").write_text(json.dumps(passwords))
    return StackSettings(parallelism=4, extra_env={
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{u}:{r}" for u, r in USERS.items()),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "demo-passwords.json"),
    }), passwords


def _post(url: str, body: Any, token: str | None = None) -> Any:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _cluster(nodes: int) -> str:
    """The running local cluster (started if it is not) with at least `nodes` fake nodes: its kubeconfig."""
    try:
        kubeconfig = ControlPlane().start().kubeconfig
    except ClusterStartError as exc:
        raise SystemExit(f"cluster failed to start: {exc}") from exc
    _ensure_nodes(kubeconfig, nodes)
    return kubeconfig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster.demo_ui")
    parser.add_argument("--nodes", type=int, default=20)
    kubeconfig = _cluster(parser.parse_args(argv).nodes)
    env = AirflowEnv.create(REPO_ROOT / ".airflow-demo-ui", DEMO_DAGS_FOLDER, kubeconfig)
    settings, passwords = _settings(env.home)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with AirflowStack(env, settings=settings) as stack:
        stack.wait_for_dag(DEMO_DAG)
        token = _post(f"{stack.base_url}/auth/token", {"username": "admin", "password": passwords["admin"]})
        run = _post(f"{stack.base_url}/api/v2/dags/{DEMO_DAG}/dagRuns", {"logical_date": None},
                    token["access_token"])
        print(f"\nAirflow: {stack.base_url}/   (DAG run {DEMO_DAG} / {run['dag_run_id']} triggered)")
        print(f"Broadcast jobs page: {stack.base_url}/broadcast-jobs/   (also under Browse in the Airflow UI)")
        for user, password in passwords.items():
            print(f"login: {user} / {password}" + ("   (may stop jobs)" if user == "admin" else "   (read-only)"))
        print("Ctrl-C stops Airflow; the cluster stays up (`make cluster-down` stops it).")
        try:
            while all(c.running() for c in stack.processes):
                time.sleep(1)
        except KeyboardInterrupt:
            pass
        stopped = [c.name for c in stack.processes if not c.running()]
        if stopped:
            print(f"{', '.join(stopped)} exited:\n{stack.log_tails()}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
