"""A BroadcastJob over a fleet of Node objects that no kubelet (and no kwok) manages, on the real API server.

The engine, its watches, the record and the node table's parts run for real; what a kubelet would
do is scripted: each pod is bound by `nodeName` and finished by patching its status. So the size is
bounded by the API server, not by the simulator: FLEET_NODES (default 2,000, as in CI) sets it, and
`make test-fleet` runs it at 15,000. It asserts what must not grow with the fleet: the record's size,
the bytes the engine writes to ConfigMaps, and the XCom; and that every node is accounted for.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping
from typing import Any

import pytest

from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.cluster.job_records import record_name, record_view
from airflow_broadcast.cluster.kinds.broadcast_job import read_node_table
from airflow_broadcast.cluster.kinds.registry import driver_for
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.reconcile_loop import LoopOutcome, run_reconcile_loop
from airflow_broadcast.reconcilers.broadcast_job.kind import BroadcastJobKind
from airflow_broadcast.reconcilers.broadcast_job.node_table import parts_for

pytestmark = [pytest.mark.cluster, pytest.mark.fleet]
FLEET_NODES = int(os.environ.get("FLEET_NODES", "2000"))
CONCURRENCY = 64
RECORD_MAX_BYTES = 160 * 1024  # the capped views: 100 nodes, 500 failed names, 1,000 ineligible nodes
CONFIGMAP_MAX_BYTES = 1024 * 1024


def unmanaged_node(name: str, pool: str) -> dict[str, Any]:
    """A Ready node without kwok's annotation: nothing runs its pods, the test finishes them."""
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady",
             "lastHeartbeatTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    allocatable = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"fleet-pool": pool, "kubernetes.io/hostname": name}},
            "status": {"allocatable": allocatable, "capacity": allocatable, "conditions": [ready]}}


def manifest(pool: str) -> dict[str, Any]:
    # Tolerate everything: the node lifecycle controller taints nodes whose heartbeat stops.
    return {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": "fleet"},
            "spec": {"template": {"spec": {"nodeSelector": {"fleet-pool": pool}, "restartPolicy": "Never",
                                           "tolerations": [{"operator": "Exists"}],
                                           "containers": [{"name": "c", "image": "busybox"}]}}}}


def succeeded(pod: Mapping[str, Any]) -> dict[str, Any]:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    state = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}
    return {"status": {"phase": "Succeeded", "containerStatuses": [
        {"name": c["name"], "image": c["image"], "imageID": "", "ready": False, "restartCount": 0, "state": state}
        for c in pod["spec"]["containers"]]}}


async def gathered(jobs: list[Any]) -> None:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(job: Any) -> None:
        async with gate:
            await job

    await asyncio.gather(*(one(j) for j in jobs))


class WriteMeter:
    """Bytes the engine sends in ConfigMap creates and replaces (the record and its parts)."""

    def __init__(self, kube: KubeClient) -> None:
        self.bytes = 0
        self.writes = 0
        inner = kube.request

        async def request(method: str, path: str, **kwargs: Any) -> Any:
            if method in ("POST", "PUT") and "/configmaps" in path:
                self.bytes += len(json.dumps(kwargs.get("body")))
                self.writes += 1
            return await inner(method, path, **kwargs)

        kube.request = request  # type: ignore[method-assign]


def test_fleet_a_broadcast_over_unmanaged_nodes_keeps_the_record_and_the_xcom_bounded(
        engine: Any, namespace: str) -> None:
    pool = namespace
    names = [f"{namespace}-n{i:05d}" for i in range(FLEET_NODES)]
    submission = engine.submit(manifest(pool))
    pods_path = api_path("v1", "pods", namespace=namespace)

    async def body(kube: KubeClient) -> tuple[LoopOutcome, WriteMeter, dict[str, Any], list[Any]]:
        began = time.monotonic()
        await gathered([kube.create(api_path("v1", "nodes"), unmanaged_node(n, pool)) for n in names])
        print(f"\n{FLEET_NODES} nodes created in {time.monotonic() - began:.0f} s", flush=True)
        seen: list[Mapping[str, Any]] = [{}]
        try:
            meter = WriteMeter(kube)
            loop = asyncio.get_running_loop().create_task(run_reconcile_loop(
                kube, driver_for("BroadcastJob", {"assign_by_scheduler": False}), namespace, submission.name,
                submission.uid, resync=5.0, progress=lambda record: seen.__setitem__(0, record.status)))
            finished: set[str] = set()
            deadline = time.monotonic() + max(1200.0, FLEET_NODES / 5)
            # Play the kubelet until the engine is done. Past 12,500 terminated pods the controller-manager's pod GC
            # deletes the oldest ones; a node whose pod went before the engine recorded its result gets a new pod.
            while not loop.done() and time.monotonic() < deadline:
                pods, _ = await kube.list_all(pods_path, labelSelector="broadcastjob-name=fleet",
                                              fieldSelector="status.phase=Pending")
                todo = [p for p in pods if p["metadata"]["uid"] not in finished]  # a pod made again keeps its name
                await gathered([kube.merge_patch(f"{pods_path}/{p['metadata']['name']}/status", succeeded(p))
                                for p in todo])
                if len(finished) < FLEET_NODES <= len(finished) + len(todo):
                    print(f"{FLEET_NODES} pods finished after {time.monotonic() - began:.0f} s", flush=True)
                finished.update(p["metadata"]["uid"] for p in todo)
                await asyncio.sleep(1.0 if todo else 3.0)
            if not loop.done():
                status = {k: v for k, v in seen[0].items() if not isinstance(v, dict | list)}
                raise AssertionError(f"the engine did not finish; its last status: {status}")
            outcome = loop.result()
            print(f"{len(finished) - FLEET_NODES} pods were made again (their first went before it was recorded)")
            print(f"the engine finished after {time.monotonic() - began:.0f} s", flush=True)
            table = await read_node_table(kube, namespace, record_name("BroadcastJob", "fleet"))
            parts, _ = await kube.list_all(api_path("v1", "configmaps", namespace=namespace),
                                           labelSelector="airflow-broadcast.io/part-of")
            return outcome, meter, table, parts
        finally:
            await gathered([kube.delete(f"{api_path('v1', 'nodes')}/{n}") for n in names])

    outcome, meter, table, parts = engine.run_async(body)

    assert outcome.reason == "finished"
    record = engine.record("BroadcastJob", "fleet")
    record_bytes = len(record.data["status"]) + len(record.data["manifest"])
    status = json.loads(record.data["status"])
    assert status["phase"] == "completed" and status["succeeded"] == FLEET_NODES
    assert status["nodesTotal"] == FLEET_NODES and status["nodesDone"] == FLEET_NODES
    assert sorted(table) == names and {e["phase"] for e in table.values()} == {"Succeeded"}
    assert len(parts) == parts_for(FLEET_NODES)
    assert max(len(json.dumps(p["data"])) for p in parts) < CONFIGMAP_MAX_BYTES
    assert record_bytes < RECORD_MAX_BYTES
    raw = {"metadata": {"name": record.metadata.name, "namespace": namespace, "uid": record.metadata.uid,
                        "labels": record.metadata.labels, "annotations": record.metadata.annotations or {}},
           "data": record.data}
    summary = BroadcastJobKind().summary(record_view(raw))
    assert summary["nodesTotal"] == FLEET_NODES and summary["nodesTruncated"] is True
    assert len(json.dumps(summary)) < RECORD_MAX_BYTES
    table_bytes = sum(len(json.dumps(p["data"])) for p in parts)
    # The parts are written a handful of times each, however many passes ran; the record stays small.
    assert meter.bytes < 12 * table_bytes + meter.writes * RECORD_MAX_BYTES
    print(f"\nfleet {FLEET_NODES} nodes: record {record_bytes} B, node table {table_bytes} B in {len(parts)} parts, "
          f"{meter.writes} ConfigMap writes, {meter.bytes} B written")
