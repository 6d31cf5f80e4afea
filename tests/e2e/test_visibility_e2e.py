"""The task log end to end: Warnings, the start-up timeout and TFJob get_logs through `airflow dags test`.

One DAG run (tests/dags/visibility_e2e.py) holds every scenario; each has its own namespace.
The bad image needs the kwok stages of `sim.airflow-broadcast.io/image-pull` (a dev cluster
started before they existed must be restarted). kwok serves no pod logs, so get_logs shows that
the chief is followed and its log is unavailable; the stream itself is tested in
tests/unit/cluster/test_log_follow.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from bcj_support import SIM, bcj_manifest, job_pods
from kubernetes import client
from tf_support import job_pods as tf_pods
from tf_support import replica, succeed, tf_manifest

from devcluster.airflow_env import AirflowEnv, DagRunResult
from devcluster.fake_nodes import FakeNode, create_nodes, delete_nodes

pytestmark = [pytest.mark.airflow, pytest.mark.cluster]
SCENARIOS = ("unschedulable", "bad_image", "chief_logs", "chief_logs_in_worker")


@dataclass
class Run:
    result: DagRunResult
    namespaces: dict[str, str]
    nodes: list[str]


def chief_and_worker(name: str, chief: dict[str, Any]) -> dict[str, Any]:
    return tf_manifest(name, {"Chief": chief, "Worker": replica(1)})


@pytest.fixture(scope="module")
def run(airflow_env: AirflowEnv, core_api: client.CoreV1Api, kubeconfig: str) -> Iterator[Run]:
    namespaces = {task: f"t-{uuid.uuid4().hex[:10]}" for task in SCENARIOS}
    pool = {"e2e-pool": namespaces["bad_image"]}
    nodes = create_nodes(kubeconfig, [FakeNode(name=f"vis-{uuid.uuid4().hex[:6]}", labels=pool)])
    for ns in namespaces.values():
        core_api.create_namespace({"metadata": {"name": ns, "labels": {"airflow-broadcast.io/test": "true"}}})
    stuck = replica(1)
    stuck["template"]["spec"]["nodeSelector"] = {"e2e-pool": "no-such-node"}
    manifests = {
        "unschedulable": chief_and_worker("stuck", stuck),
        "bad_image": bcj_manifest("badimage", pool, annotations={f"{SIM}/image-pull": "fail"}),
        "chief_logs": chief_and_worker("logged", replica(1, annotations=succeed("3s"))),
        "chief_logs_in_worker": chief_and_worker("logged", replica(1, annotations=succeed("3s"))),
    }
    try:
        conf = {task: {"namespace": namespaces[task], "manifest": manifests[task]} for task in SCENARIOS}
        yield Run(airflow_env.dags_test("visibility_e2e", conf=conf), namespaces, nodes)
    finally:
        for ns in namespaces.values():
            core_api.delete_namespace(ns, propagation_policy="Background")
        delete_nodes(kubeconfig, nodes)


def test_an_unschedulable_chief_fails_the_task_at_the_start_up_timeout_with_the_schedulers_words(
        run: Run, core_api: client.CoreV1Api) -> None:
    ns, output = run.namespaces["unschedulable"], run.result.output
    assert run.result.task_states["unschedulable"] == "failed", output[-4000:]
    assert "Warning FailedScheduling pod stuck-chief-0: 0/" in output
    assert "JobStartupTimeoutError" in output
    assert (f"TFJob {ns}/stuck: pod stuck-chief-0 (not scheduled to a node) has been starting for ") in output
    assert "longer than startup_timeout_seconds=5: Unschedulable: 0/" in output
    assert "Start-up timeout: deleted" in output
    assert all(p.status.phase != "Pending" or p.metadata.deletion_timestamp
               for p in tf_pods(core_api, ns, "stuck").values())  # the active pods were deleted


def test_a_bad_image_shows_the_pull_errors_and_fails_the_task_at_the_start_up_timeout(
        run: Run, core_api: client.CoreV1Api) -> None:
    ns, output, (node,) = run.namespaces["bad_image"], run.result.output, run.nodes
    assert run.result.task_states["bad_image"] == "failed", output[-4000:]
    assert f"on node {node}: Failed to pull image" in output, (
        "no image pull failure: the dev cluster predates the image-pull kwok stages; restart it")
    assert f"on node {node}: Back-off pulling image" in output
    assert f"BroadcastJob {ns}/badimage: pod badimage-" in output
    assert "longer than startup_timeout_seconds=8: ErrImagePull" in output or (
        "longer than startup_timeout_seconds=8: ImagePullBackOff" in output)
    assert job_pods(core_api, ns, "badimage") == [] or all(
        p.metadata.deletion_timestamp for p in job_pods(core_api, ns, "badimage"))


@pytest.mark.parametrize("task", ["chief_logs", "chief_logs_in_worker"])
def test_get_logs_follows_the_chief_from_the_triggerer_and_from_the_worker(run: Run, task: str) -> None:
    ns, output = run.namespaces[task], run.result.output
    assert run.result.task_states[task] == "success", output[-4000:]
    assert (f"[logged-chief-0] log not available (Kubernetes API 404 NotFound on GET "
            f"/api/v1/namespaces/{ns}/pods/logged-chief-0/log") in output
