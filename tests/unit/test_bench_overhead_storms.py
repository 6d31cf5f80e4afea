"""The overhead storms create what they claim: the raw pods, or the engine's own pods owned as the engine's are."""

from __future__ import annotations

import asyncio
from typing import Any

from airflow_broadcast.reconcilers.broadcast_job.pods import NODE_ANNOTATION
from airflow_broadcast.specs.broadcast_job.spec import JOB_NAME_LABEL, JOB_UID_LABEL
from benchmarks.methods import PINNING, Task
from benchmarks.overhead_storms import SHAPED, WATCHED, _shaped_pods


class Kube:
    def __init__(self) -> None:
        self.created: list[tuple[str, dict[str, Any]]] = []

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.created.append((path, body))
        return {**body, "metadata": {**body["metadata"], "uid": "cm-uid"}}


def task(method: str) -> Task:
    return Task(method, "kubeconfig", "bench-raw-1", "pool", ("n1", "n2"))


def test_shaped_pods_are_the_engines_pods_owned_by_a_config_map() -> None:
    kube = Kube()
    pods = asyncio.run(_shaped_pods(task(SHAPED), kube))

    assert [path for path, _ in kube.created] == ["/api/v1/namespaces/bench-raw-1/configmaps"]
    assert [p["spec"]["nodeName"] for p in pods] == ["n1", "n2"]
    owner = pods[0]["metadata"]["ownerReferences"][0]
    assert owner == {"apiVersion": "v1", "kind": "ConfigMap", "name": "bcj-bench", "uid": "cm-uid",
                     "controller": True, "blockOwnerDeletion": True}
    assert pods[0]["metadata"]["labels"]["bench"] == SHAPED
    assert pods[0]["metadata"]["labels"][JOB_NAME_LABEL] == "bench"
    assert pods[0]["metadata"]["labels"][JOB_UID_LABEL] == "cm-uid"
    assert pods[0]["metadata"]["annotations"][NODE_ANNOTATION] == "n1"


def test_both_storms_pin_by_node_name_and_compare_with_the_raw_node_name_storm() -> None:
    from benchmarks.compare import RAW_OF
    from benchmarks.methods import raw_pod

    for method in (WATCHED, SHAPED):
        assert RAW_OF[PINNING[method]] == "raw-nodename"
    assert raw_pod(task(WATCHED), 0, "n1")["spec"]["nodeName"] == "n1"
