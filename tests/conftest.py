"""Fixtures: one real local cluster per test run, a namespace per test, fake nodes, real Airflow."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from support.waits import wait_nodes_schedulable

from devcluster.airflow_env import AirflowEnv
from devcluster.conformance_sources import LEVEL_PROPERTY, level_of
from devcluster.control_plane import ClusterInfo, ClusterStartError, ControlPlane
from devcluster.crds import install_crds
from devcluster.fake_nodes import FakeNode, create_nodes, delete_nodes

REPO = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Write each test's real level (unit, cluster or airflow, from its fixtures) into the junit report."""
    for item in items:
        item.user_properties.append((LEVEL_PROPERTY, level_of(getattr(item, "fixturenames", ()))))


GENERAL_NODES = 6
GENERAL_LABEL = "sim.airflow-broadcast.io/general-pool"


def _prepare_cluster(info: ClusterInfo) -> None:
    """The test CRDs, and a few schedulable nodes for pods that are not pinned (TFJob replicas); jobs that
    select nodes (BroadcastJob tests use their own labelled pools) never select these."""
    api = client.CoreV1Api(config.new_client_from_config(config_file=info.kubeconfig))
    existing = {n.metadata.name for n in api.list_node(label_selector=f"{GENERAL_LABEL}=true").items}
    install_crds(info.kubeconfig)
    wanted = [FakeNode(name=f"general-{i:02d}", labels={GENERAL_LABEL: "true"}) for i in range(GENERAL_NODES)]
    missing = [n for n in wanted if n.name not in existing]
    if missing:
        create_nodes(info.kubeconfig, missing)
    wait_nodes_schedulable(api, [n.name for n in wanted])


@pytest.fixture(scope="session")
def cluster() -> Iterator[ClusterInfo]:
    """The local control plane: reuse ours if KUBECONFIG points at it and it runs, else start one.

    A cluster this fixture started is stopped at the end of the run. If it cannot
    start, every test that needs it fails with the reason: nothing is skipped.
    """
    kubeconfig = os.environ.get("KUBECONFIG", "")
    plane = ControlPlane.owns_kubeconfig(kubeconfig) if kubeconfig else None
    info = plane.running() if plane is not None else None
    if info is None:
        plane = ControlPlane(Path(os.environ.get("AIRFLOW_BROADCAST_TEST_CLUSTER_DIR", REPO / ".devcluster")))
        info = plane.running()
    if info is not None:
        _prepare_cluster(info)
        yield info
        return
    assert plane is not None
    try:
        info = plane.start()
    except ClusterStartError as exc:
        pytest.fail(f"the local Kubernetes control plane did not start: {exc}", pytrace=False)
    print(f"\nlocal control plane ready in {info.ready_seconds} s at {info.server}")
    try:
        _prepare_cluster(info)
        yield info
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def kubeconfig(cluster: ClusterInfo) -> str:
    return cluster.kubeconfig


@pytest.fixture(scope="session")
def core_api(kubeconfig: str) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))


@pytest.fixture
def namespace(core_api: client.CoreV1Api) -> Iterator[str]:
    """A fresh namespace, deleted after the test."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    core_api.create_namespace({"metadata": {"name": name, "labels": {"airflow-broadcast.io/test": "true"}}})
    yield name
    core_api.delete_namespace(name, propagation_policy="Background")


NodeFactory = Callable[..., list[str]]


@pytest.fixture
def node_factory(kubeconfig: str, core_api: client.CoreV1Api) -> Iterator[NodeFactory]:
    """Create fake nodes: `node_factory(3, labels=..., taints=..., allocatable=..., unschedulable=...)`.

    Names are unique to the test; the nodes are schedulable when the call returns
    (unless cordoned or tainted), and deleted after the test.
    """
    created: list[str] = []
    prefix = f"n{uuid.uuid4().hex[:6]}"

    def make(count: int = 1, *, wait: bool = True, **kwargs: object) -> list[str]:
        start = len(created)
        nodes = [FakeNode(name=f"{prefix}-{start + i:04d}", **kwargs) for i in range(count)]  # type: ignore[arg-type]
        names = create_nodes(kubeconfig, nodes)
        created.extend(names)
        if wait:
            wait_nodes_schedulable(core_api, names)
        return names

    yield make
    delete_nodes(kubeconfig, created)


@pytest.fixture(scope="session")
def airflow_env(cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> AirflowEnv:
    """An isolated AIRFLOW_HOME with a migrated SQLite DB and `kubernetes_default` → the cluster."""
    home = tmp_path_factory.mktemp("airflow-home")
    return AirflowEnv.create(home, REPO / "tests" / "dags", cluster.kubeconfig)


@pytest.fixture
def engine(kubeconfig: str, namespace: str, core_api: client.CoreV1Api) -> Any:
    """The real engine bound to this test's namespace (see tests/support/engine.py)."""
    from support.engine import Engine

    return Engine(kubeconfig, namespace, core_api)
