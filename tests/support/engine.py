"""Drive the real engine (submission, reconcile loop, executor) against the real cluster, without Airflow.

Integration tests use this to exercise checklist behaviour on a real API server,
scheduler and kwok; the Airflow adapters are covered by the end-to-end tests.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kubernetes import client
from kubernetes_asyncio import client as async_client
from kubernetes_asyncio import config as async_config

from airflow_broadcast.cluster.http_session import api_client_for
from airflow_broadcast.cluster.informers import stop_informers
from airflow_broadcast.cluster.job_records import record_name
from airflow_broadcast.cluster.job_submission import submit_job
from airflow_broadcast.cluster.kinds.registry import driver_for, kind_for
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.reconcile_loop import LoopOutcome, run_reconcile_loop
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.specs.broadcast_job import parse_broadcast_job, to_manifest
from airflow_broadcast.specs.tf_job import parse_tf_job

T = TypeVar("T")


async def kube_client(kubeconfig: str) -> KubeClient:
    cfg = async_client.Configuration()
    await async_config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    return KubeClient(api_client_for(cfg), qps=200, burst=400)


@dataclass
class Engine:
    """One namespace's view of the engine: submit a manifest, drive it, read its record."""

    kubeconfig: str
    namespace: str
    core: client.CoreV1Api

    def run_async(self, body: Callable[[KubeClient], Awaitable[T]]) -> T:
        async def main() -> T:
            kube = await kube_client(self.kubeconfig)
            try:
                return await body(kube)
            finally:
                await stop_informers()
                await kube.close()

        return asyncio.run(main())

    def submit(self, manifest: Mapping[str, Any], submitter: str = "tests/engine") -> JobRecord:
        kind = manifest["kind"]
        if kind == "BroadcastJob":
            stored = to_manifest(parse_broadcast_job(dict(manifest), namespace=self.namespace))
            name = stored["metadata"]["name"]
        else:
            spec = parse_tf_job(dict(manifest), namespace=self.namespace)
            stored, name = dict(manifest), spec.name
        job_kind = kind_for(kind)
        record, _ = self.run_async(lambda kube: submit_job(kube, job_kind, name, self.namespace, stored,
                                                           submitter=submitter, reattach=True))
        return record

    def drive(self, submission: JobRecord, kind: str, *, options: Mapping[str, Any] | None = None,
              deadline: float | None = None, single_pass: bool = False, timeout: float = 120.0) -> LoopOutcome:
        """Run the reconcile loop until the job finishes (or one pass), bounded by `timeout` seconds."""
        driver = driver_for(kind, dict(options or {}))

        async def body(kube: KubeClient) -> LoopOutcome:
            return await asyncio.wait_for(run_reconcile_loop(
                kube, driver, self.namespace, submission.name, submission.uid, deadline=deadline,
                resync=5.0, single_pass=single_pass), timeout)

        return self.run_async(body)

    def record(self, kind: str, job_name: str) -> Any | None:
        try:
            return self.core.read_namespaced_config_map(record_name(kind, job_name), self.namespace)
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def status(self, kind: str, job_name: str) -> dict[str, Any]:
        rec = self.record(kind, job_name)
        return {} if rec is None else dict(json.loads(rec.data["status"]))

    def edit_manifest(self, kind: str, job_name: str, change: Callable[[dict[str, Any]], None]) -> None:
        """Edit the stored manifest as a user would with kubectl (spec.paused, parallelism, ...)."""
        rec = self.record(kind, job_name)
        assert rec is not None
        manifest = json.loads(rec.data["manifest"])
        change(manifest)
        self.core.patch_namespaced_config_map(rec.metadata.name, self.namespace,
                                              {"data": {"manifest": json.dumps(manifest)}})

    def pods(self, selector: str) -> list[Any]:
        return list(self.core.list_namespaced_pod(self.namespace, label_selector=selector).items)

    def events(self, kind: str, job_name: str) -> list[Any]:
        name = record_name(kind, job_name)
        return list(self.core.list_namespaced_event(self.namespace,
                                                    field_selector=f"involvedObject.name={name}").items)
