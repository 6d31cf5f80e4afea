"""`finish_in_triggerer=True` in a real deployment: the task ends in the triggerer, with the same XCom.

A real stack (api-server, scheduler, dag-processor, triggerer; LocalExecutor) runs the benchmark's
BroadcastJob DAG in both modes, one run each. Both tasks succeed with the job's summary as their
XCom; only the opted-in task says in its log that it ended in the triggerer. The job's progress lines,
written by the provider's writer thread with one logger for every trigger, reach their own task's log.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from benchmarks.common import REPO_ROOT, core_api, new_namespace, node_pool
from benchmarks.detection import DAG, DAG_ENDS_IN_TRIGGERER, _one
from devcluster.airflow_env import AirflowEnv
from devcluster.airflow_stack import AirflowStack, StackSettings

pytestmark = [pytest.mark.cluster, pytest.mark.airflow]
NODES = 2
ENDED_HERE = "succeeded; the task ends in the triggerer"


def _task_log(home: Path, dag: str, run_id: str) -> str:
    files = [p for p in home.rglob("*.log") if f"dag_id={dag}" in str(p) and f"run_id={run_id}" in str(p)]
    return "".join(p.read_text(errors="replace") for p in files)


def test_a_succeeded_job_ends_its_task_in_the_triggerer_with_the_same_xcom(kubeconfig: str, tmp_path: Path) -> None:
    core = core_api(kubeconfig)
    label = uuid.uuid4().hex[:6]
    env = AirflowEnv.create(tmp_path / "airflow", REPO_ROOT / "benchmarks" / "dags", kubeconfig)
    results = {}
    with node_pool(kubeconfig, NODES, label) as (names, _), \
            AirflowStack(env, settings=StackSettings(parallelism=4)) as stack:
        for dag in (DAG, DAG_ENDS_IN_TRIGGERER):
            stack.wait_for_dag(dag)
            stack.api("PATCH", f"/api/v2/dags/{dag}", {"is_paused": False})
            namespace = new_namespace(core, "e2e-finish")
            row = asyncio.run(_one(stack, kubeconfig, names, label, namespace, 300.0, dag))
            xcom = stack.api("GET", f"/api/v2/dags/{dag}/dagRuns/{row['run_id']}/taskInstances/bcj/"
                                    "xcomEntries/return_value?deserialize=true")
            results[dag] = (row, xcom, _task_log(env.home, dag, row["run_id"]), namespace)
            core.delete_namespace(namespace)
    for dag, (row, xcom, log, namespace) in results.items():
        assert row["state"] == "success" and row["pods_succeeded"] == NODES, (dag, row)
        summary = xcom["value"]
        assert summary["phase"] == "completed" and summary["succeeded"] == NODES and summary["failed"] == 0, summary
        assert (ENDED_HERE in log) == (dag == DAG_ENDS_IN_TRIGGERER), (dag, log[-3000:])
        others = [other for _, _, _, other in results.values() if other != namespace]
        assert f"BroadcastJob {namespace}/" in log, ("the trigger's progress line is in its task's log", log[-3000:])
        assert not any(f"BroadcastJob {other}/" in log for other in others), "and in no other task's log"
