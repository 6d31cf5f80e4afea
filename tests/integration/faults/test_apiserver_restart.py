"""kube-apiserver is killed mid-job and started again: the job completes with the same result.

This runs on a private cluster of its own (the shared one serves other tests), started for
this test only and stopped right after.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from devcluster.control_plane import ClusterInfo, ControlPlane
from devcluster.fake_nodes import FakeNode, create_nodes
from tests.integration.faults.fault_harness import BCJ, EXPECTED, bcj_manifest, run_disrupted
from tests.support.waits import wait_nodes_schedulable

pytestmark = pytest.mark.cluster
DOWN_SECONDS = 5.0


@pytest.fixture
def private_cluster(tmp_path: Path) -> Iterator[tuple[ControlPlane, ClusterInfo]]:
    plane = ControlPlane(tmp_path / "cluster")
    try:
        yield plane, plane.start()
    finally:
        plane.stop()


def test_a_job_completes_when_kube_apiserver_is_killed_and_restarted_mid_job(
        private_cluster: tuple[ControlPlane, ClusterInfo]) -> None:
    plane, info = private_cluster
    core = client.CoreV1Api(config.new_client_from_config(config_file=info.kubeconfig))
    namespace = f"t-{uuid.uuid4().hex[:10]}"
    core.create_namespace({"metadata": {"name": namespace}})
    nodes = create_nodes(info.kubeconfig, [FakeNode(f"restart-{i}", labels={"pool": namespace}) for i in range(3)])
    wait_nodes_schedulable(core, nodes)
    pid_before = info.pids["kube-apiserver"]
    gone: list[float] = []

    run = run_disrupted(core, namespace, info.kubeconfig, bcj_manifest("restart", namespace, after="4s"),
                        lambda: gone.append(plane.restart_apiserver(DOWN_SECONDS)))

    restarted = plane.running()
    assert restarted is not None and restarted.pids["kube-apiserver"] != pid_before, "a new apiserver process"
    assert restarted.server == info.server, "on the same port"
    assert gone and gone[0] >= DOWN_SECONDS
    assert run.finished - run.begin >= DOWN_SECONDS, "the job was still running when the apiserver died"
    assert run.outcome == "finished"
    assert run.result == EXPECTED[BCJ]
