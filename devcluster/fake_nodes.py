"""Create and delete kwok-simulated nodes with chosen labels, taints, allocatable and cordon."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"
FAKE_NODE_LABEL = "sim.airflow-broadcast.io/fake-node"
DEFAULT_ALLOCATABLE = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"}


@dataclass(frozen=True)
class FakeNode:
    """What a test wants a node to look like."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, str]] = ()
    allocatable: Mapping[str, str] | None = None
    unschedulable: bool = False

    def manifest(self) -> dict[str, Any]:
        allocatable = dict(DEFAULT_ALLOCATABLE if self.allocatable is None else self.allocatable)
        labels = {
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "type": "kwok",
            FAKE_NODE_LABEL: "true",
            **self.labels,
        }
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": labels,
                "annotations": {FAKE_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            },
            "spec": {"taints": [dict(t) for t in self.taints], "unschedulable": self.unschedulable},
            "status": {"allocatable": allocatable, "capacity": allocatable, "phase": "Running"},
        }


def _core_api(kubeconfig: str) -> Any:
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=kubeconfig)
    return client.CoreV1Api(api_client)


def create_nodes(kubeconfig: str, nodes: Iterable[FakeNode], workers: int = 8) -> list[str]:
    """Create the nodes (in parallel) and return their names."""
    api = _core_api(kubeconfig)
    items = list(nodes)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda n: api.create_node(n.manifest()), items))
    return [n.name for n in items]


def many(prefix: str, count: int, **kwargs: Any) -> list[FakeNode]:
    """`count` identical nodes named `<prefix>-0000` and up."""
    return [FakeNode(name=f"{prefix}-{i:04d}", **kwargs) for i in range(count)]


def delete_nodes(kubeconfig: str, names: Iterable[str], workers: int = 8) -> None:
    from kubernetes.client.rest import ApiException

    api = _core_api(kubeconfig)

    def _delete(name: str) -> None:
        try:
            api.delete_node(name)
        except ApiException as exc:
            if exc.status != 404:
                raise

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(_delete, list(names)))


def delete_all_fake_nodes(kubeconfig: str) -> int:
    api = _core_api(kubeconfig)
    names = [n.metadata.name for n in api.list_node(label_selector=f"{FAKE_NODE_LABEL}=true").items]
    delete_nodes(kubeconfig, names)
    return len(names)
