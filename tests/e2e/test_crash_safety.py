"""Crash and duplicate safety with real Airflow processes: the triggerer is SIGKILLed at seeded points.

The seeded subset CI runs (a 50-node BroadcastJob, a 1+1+4 TFJob, two copies of one trigger);
`python -m benchmarks.crash` runs the full 200-node and 1+2+20 set and writes its figures.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from crash_jobs import CrashJob, broadcast_job, tf_job
from crash_run import CrashRunner, KillPoint, RunResult, crash_stack, seeded_points, xcom_signature
from crash_watch import JobWatch, count_pods
from kubernetes import client

from devcluster.airflow_env import AirflowEnv
from devcluster.control_plane import ClusterInfo

pytestmark = [pytest.mark.airflow, pytest.mark.cluster]
REPO = Path(__file__).resolve().parents[2]
SEED = 20260114
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def runner(cluster: ClusterInfo, core_api: client.CoreV1Api, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[CrashRunner]:
    env = AirflowEnv.create(tmp_path_factory.mktemp("crash-home"), REPO / "tests" / "dags", cluster.kubeconfig)
    with crash_stack(env) as stack:
        stack.wait_for_dag("crash_bcj")
        stack.wait_for_dag("crash_tf")
        yield CrashRunner(stack, core_api)


@pytest.fixture
def namespaces(core_api: client.CoreV1Api) -> Iterator[Callable[[], str]]:
    made: list[str] = []

    def make() -> str:
        made.append(f"t-{uuid.uuid4().hex[:10]}")
        core_api.create_namespace({"metadata": {"name": made[-1], "labels": {"airflow-broadcast.io/test": "true"}}})
        return made[-1]

    yield make
    for name in made:
        core_api.delete_namespace(name, propagation_policy="Background")


def baseline_and_crashed(runner: CrashRunner, job: CrashJob, points: list[KillPoint],
                         namespaces: Callable[[], str]) -> tuple[RunResult, str, RunResult, str]:
    first, second = namespaces(), namespaces()
    return runner.run(job, first, []), first, runner.run(job, second, points), second


def assert_crash_safe(job: CrashJob, baseline: RunResult, first: str, crashed: RunResult, second: str,
                      points: list[KillPoint]) -> None:
    assert baseline.state == "success", baseline.logs
    assert crashed.state == "success", crashed.logs
    assert [k.point for k in crashed.kills] == points, crashed.describe()
    for result in (baseline, crashed):
        assert (result.pods.duplicate_slots, result.pods.duplicate_names) == (0, 0), result.describe()
        assert result.pods.missed == (), result.describe()
        assert (result.pods.created, result.pods.slots) == (job.size, job.size), result.describe()
    expected, got = xcom_signature(baseline, first), xcom_signature(crashed, second)
    differing = {key: {"baseline": expected.get(key), "crashed": got.get(key)}
                 for key in expected.keys() | got.keys() if expected.get(key) != got.get(key)}
    assert not differing, f"{json.dumps(differing, indent=1)}\n{crashed.describe()}"
    # A kill after the job finished (a fast engine may finish before a later point is reached) leaves nothing
    # to take over; every kill while work was left must see the trigger move to a live triggerer.
    assert any(k.pending for k in crashed.kills), crashed.describe()
    assert all(k.assigned_after is not None for k in crashed.kills if k.pending), crashed.describe()


def test_broadcast_job_survives_triggerer_kills(runner: CrashRunner, node_factory: Any,
                                                namespaces: Callable[[], str]) -> None:
    selector = {"crash-pool": uuid.uuid4().hex[:8]}
    job = broadcast_job("crash", node_factory(50, labels=selector), selector)
    points = seeded_points(random.Random(SEED), job.size, 2, ("unwritten", "ttl"), "standby")
    baseline, first, crashed, second = baseline_and_crashed(runner, job, points, namespaces)

    assert_crash_safe(job, baseline, first, crashed, second, points)
    assert crashed.xcom["desired"] == crashed.xcom["succeeded"] == 50
    assert sorted(crashed.xcom["nodes"]) == sorted(job.slots)


def test_tf_job_survives_triggerer_kills(runner: CrashRunner, namespaces: Callable[[], str]) -> None:
    job = tf_job("crash", chief=1, ps=1, workers=4)
    points = seeded_points(random.Random(SEED + 1), job.size, 1, ("unwritten", "finished"), "restart")
    baseline, first, crashed, second = baseline_and_crashed(runner, job, points, namespaces)

    assert_crash_safe(job, baseline, first, crashed, second, points)
    assert crashed.xcom["phase"] == "Succeeded"


def test_two_copies_of_one_trigger_create_each_pod_once(kubeconfig: str, core_api: client.CoreV1Api,
                                                        node_factory: Any, namespace: str, tmp_path: Path) -> None:
    selector = {"crash-pool": uuid.uuid4().hex[:8]}
    job = broadcast_job("twin", node_factory(30, labels=selector), selector)
    env = twin_environment(kubeconfig, tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps(job.manifest))
    with JobWatch(core_api, namespace) as watched:
        submitted = twin(env, "submit", job.kind, namespace, str(tmp_path / "manifest.json"))
        (tmp_path / "kwargs.json").write_text(submitted)
        copies = [subprocess.Popen([sys.executable, str(HERE / "crash_twin.py"), "run", str(tmp_path / "kwargs.json")],
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                  for _ in range(2)]
        outputs = [c.communicate(timeout=300) for c in copies]
        events = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    pods = count_pods(watched.pods.snapshot(), set(job.slots))
    writes = [json.loads(e.obj["data"]["status"]) for e in watched.records.snapshot()
              if e.type == "MODIFIED" and (e.obj.get("data") or {}).get("status")]

    assert [e["status"] for e in events] == ["finished", "finished"], outputs
    assert {e["phase"] for e in events} == {"completed"}
    assert (pods.created, pods.duplicate_slots, pods.duplicate_names, pods.missed) == (30, 0, 0, ())
    done = [w.get("succeeded", 0) for w in writes]
    assert done == sorted(done), "a status write never takes back a success the other copy wrote"
    assert all(w.get("desired", 30) == 30 and w.get("active", 0) + w.get("succeeded", 0) <= 30 for w in writes)
    assert writes[-1]["succeeded"] == 30 and writes[-1]["phase"] == "completed"


def twin_environment(kubeconfig: str, home: Path) -> dict[str, str]:
    """A process environment with the `kubernetes_default` connection in a variable and this checkout first."""
    import os

    connection = {"conn_type": "kubernetes", "extra": {"kube_config_path": kubeconfig}}
    return {**{k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")},
            "AIRFLOW_HOME": str(home), "AIRFLOW_CONN_KUBERNETES_DEFAULT": json.dumps(connection),
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def twin(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, str(HERE / "crash_twin.py"), *args], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]
