"""The real engine (submission, reconcile loop, executor, informers) on a FakeCluster, for unit tests.

`fake_engine()` gives a fresh fake and client per test and afterwards cancels what the test
left running and stops the loop's shared informers, so no cache leaks from one test into the next.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from airflow_broadcast.cluster import pass_pacing
from airflow_broadcast.cluster.informers import stop_informers
from airflow_broadcast.cluster.job_records import read_status, record_name, record_path
from airflow_broadcast.cluster.job_submission import submit_job
from airflow_broadcast.cluster.kinds.registry import driver_for
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.cluster.reconcile_loop import LoopOutcome, run_reconcile_loop
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.specs.broadcast_job import parse_broadcast_job, to_manifest
from airflow_broadcast.specs.tf_job import parse_tf_job
from support import bcj_builders
from support.fake_cluster import FakeCluster

NAMESPACE = "ns"
NODE_ANNOTATION = "airflow-broadcast.io/node"
RESYNC = 0.05


@dataclass
class FakeEngine:
    """One namespace of a FakeCluster and the clients (triggerers) talking to it."""

    fake: FakeCluster
    client: KubeClient
    namespace: str = NAMESPACE
    clients: list[KubeClient] = field(default_factory=list)
    tasks: list[asyncio.Task[LoopOutcome]] = field(default_factory=list)

    def new_client(self) -> KubeClient:
        """Another client of the same cluster: its own informers, as a second triggerer would have."""
        client = KubeClient(self.fake, qps=0)
        self.clients.append(client)
        return client

    async def submit(self, manifest: Mapping[str, Any]) -> JobRecord:
        """Validate and store the manifest as the operator does, and create its job record."""
        kind = str(manifest["kind"])
        if kind == "TFJob":
            stored, name = dict(manifest), parse_tf_job(dict(manifest), namespace=self.namespace).name
        else:
            stored = to_manifest(parse_broadcast_job(dict(manifest), namespace=self.namespace))
            name = str(stored["metadata"]["name"])
        record, _ = await submit_job(self.client, driver_for(kind).kind, name, self.namespace, stored,
                                     submitter="tests/fake", reattach=True)
        return record

    def start(self, submission: JobRecord, kind: str, *, client: KubeClient | None = None,
              options: Mapping[str, Any] | None = None, **loop_args: Any) -> asyncio.Task[LoopOutcome]:
        """Run the reconcile loop in the background (resync RESYNC unless given)."""
        loop_args.setdefault("resync", RESYNC)
        task = asyncio.get_running_loop().create_task(run_reconcile_loop(
            client or self.client, driver_for(kind, dict(options or {})), self.namespace, submission.name,
            submission.uid, **loop_args))
        self.tasks.append(task)
        return task

    async def running_broadcast_job(self, nodes: int, name: str = "hello", **spec: Any) -> tuple[
            JobRecord, asyncio.Task[LoopOutcome]]:
        """Nodes node-0..node-<n-1>, and a BroadcastJob whose loop has created its pods (still Pending)."""
        for i in range(nodes):
            self.fake.add_node(f"node-{i}")
        submission = await self.submit(bcj_builders.manifest(name=name, namespace=self.namespace, **spec))
        task = self.start(submission, "BroadcastJob")
        await self.wait_pods(nodes)
        return submission, task

    async def drive(self, submission: JobRecord, kind: str, **loop_args: Any) -> LoopOutcome:
        """Run the loop to its outcome, bounded so a stuck loop fails the test instead of hanging it."""
        return await asyncio.wait_for(self.start(submission, kind, **loop_args), 5.0)

    # ---- reading the cluster --------------------------------------------------------------
    def record(self, kind: str, job: str) -> JsonDict | None:
        return self.fake.object(record_path(self.namespace, record_name(kind, job)))

    def status(self, kind: str, job: str) -> JsonDict:
        raw = self.record(kind, job)
        return read_status(raw) if raw is not None else {}

    def set_manifest(self, kind: str, job: str, manifest: Mapping[str, Any]) -> None:
        """Edit the stored manifest as a user would with kubectl."""
        self.fake.patch(record_path(self.namespace, record_name(kind, job)),
                        {"data": {"manifest": json.dumps(manifest)}})

    def pods(self, selector: str = "") -> list[JsonDict]:
        return self.fake.objects(f"/api/v1/namespaces/{self.namespace}/pods", selector)

    def pods_by_node(self) -> dict[str, list[str]]:
        """node → names of the pods pinned to it (by the node annotation BroadcastJob pods carry)."""
        found: dict[str, list[str]] = {}
        for pod in self.pods():
            node = (pod["metadata"].get("annotations") or {}).get(NODE_ANNOTATION, "")
            found.setdefault(node, []).append(pod["metadata"]["name"])
        return found

    async def wait_pods(self, count: int, phase: str = "Pending") -> list[JsonDict]:
        """Wait until `count` pods exist and all are in `phase`; return them."""
        def check() -> list[JsonDict] | None:
            pods = self.pods()
            return pods if len(pods) == count and all(p["status"]["phase"] == phase for p in pods) else None

        found: list[JsonDict] = await self.fake.wait_for(check, what=f"{count} {phase} pods")
        return found

    def set_all_pods(self, phase: str, **kwargs: Any) -> None:
        for pod in self.pods():
            self.fake.set_pod_phase(self.namespace, pod["metadata"]["name"], phase, **kwargs)


@asynccontextmanager
async def fake_engine(monkeypatch: pytest.MonkeyPatch, **fake_args: Any) -> AsyncIterator[FakeEngine]:
    """A fresh FakeCluster and client; passes are not coalesced (pass_pacing) so tests take milliseconds."""
    monkeypatch.setattr(pass_pacing, "MIN_PASS_INTERVAL", 0.0)
    fake = FakeCluster(**fake_args)
    engine = FakeEngine(fake, KubeClient(fake, qps=0))
    try:
        yield engine
    finally:
        for task in engine.tasks:
            task.cancel()
        await asyncio.gather(*engine.tasks, return_exceptions=True)
        await stop_informers()
        for client in [engine.client, *engine.clients]:
            await client.close()
