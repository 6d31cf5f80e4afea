"""The executor keeps the pods cache ahead of the watch (X2): the pass right after a delete reads the cache.

The cache here is an informer that never watches: it holds what the executor wrote into it and what the
test delivers as the watch would, so each pass runs in the window before the watch reports a deletion.
A finalizer on the pods stands in for graceful termination: the fake cluster then answers a DELETE with
the pod marked for deletion and keeps it, as the API server does for a running pod.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from support import bcj_builders
from support.bcj_builders import created_nodes, make_node
from support.fake_engine import NAMESPACE, FakeEngine, fake_engine

from airflow_broadcast.cluster.informers import Informer
from airflow_broadcast.cluster.job_events import EventRecorder, flush_events
from airflow_broadcast.cluster.job_records import record_view
from airflow_broadcast.cluster.observation import pod_info
from airflow_broadcast.cluster.plan_executor import PlanExecutor
from airflow_broadcast.reconcilers.broadcast_job.kind import BroadcastJobKind, BroadcastObserved
from airflow_broadcast.reconcilers.observed import RECORD_UID_LABEL, JobRecord, NodeInfo, PodInfo
from airflow_broadcast.reconcilers.plan import Plan

PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
HOLD = "example.com/hold"


def nodes(*unfit: str) -> list[NodeInfo]:
    """node-00 and node-01; the ones named lost the label the template selects."""
    return [make_node(name, labels={} if name in unfit else {"role": "w"}) for name in ("node-00", "node-01")]


class Job:
    """One BroadcastJob: each `step` runs the pure pass on the cache and applies its plan, as the loop does."""

    def __init__(self, env: FakeEngine, record: JobRecord) -> None:
        self.env, self.record = env, record
        self.pods: Informer[PodInfo] = Informer(env.client, PODS, pod_info, index_label=RECORD_UID_LABEL)
        self.executor = PlanExecutor(env.client, NAMESPACE, record.uid, pods=self.pods, kind="BroadcastJob")

    async def step(self, cluster_nodes: Sequence[NodeInfo]) -> Plan:
        observed = BroadcastObserved(cluster_nodes, self.pods.items(self.record.uid))
        plan = BroadcastJobKind().reconcile(self.record, observed, time.time())
        raw = dict(self.record.raw)
        result = await self.executor.apply(plan, raw, EventRecorder(self.env.client, raw))
        if result.record is not None:
            self.record = record_view(result.record)
        return plan

    def cached(self, node: str) -> list[PodInfo]:
        return [p for p in self.pods.items(self.record.uid) if p.node == node]

    def in_cluster(self, node: str) -> list[dict[str, Any]]:
        return [p for p in self.env.pods() if p["metadata"]["annotations"]["airflow-broadcast.io/node"] == node]

    def creates(self) -> int:
        return len(self.env.fake.served_requests("POST", PODS))


@pytest.fixture
async def job(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> AsyncIterator[Job]:
    """Pods on node-00 and node-01, both in the cache (the executor remembered its creates)."""
    finalizers = [HOLD] if getattr(request, "param", True) else None
    async with fake_engine(monkeypatch) as env:
        record = await env.submit(bcj_builders.manifest(name="hello", namespace=NAMESPACE, completion="Never",
                                                        pod_spec={"nodeSelector": {"role": "w"}},
                                                        finalizers=finalizers))
        job = Job(env, record)
        assert created_nodes(await job.step(nodes())) == ["node-00", "node-01"]
        assert [len(job.cached(n)) for n in ("node-00", "node-01")] == [1, 1]
        yield job
        await flush_events(record.uid)


async def test_X2_a_pass_right_after_a_graceful_delete_creates_nothing_on_that_node(job: Job) -> None:
    name = job.cached("node-00")[0].name
    deleting = await job.step(nodes("node-00"))  # node-00's pod no longer fits: the pass deletes it
    assert [(d.name, d.reason) for d in deleting.deletes] == [(name, "NodeNoLongerEligible")]
    assert job.in_cluster("node-00")[0]["metadata"].get("deletionTimestamp"), "terminating, not gone"

    creates = job.creates()
    back = await job.step(nodes())  # node-00 fits again while its pod terminates, and no watch event came
    assert created_nodes(back) == [] and back.deletes == ()
    assert job.creates() == creates and len(job.in_cluster("node-00")) == 1

    again = await job.step(nodes("node-00"))  # unfit again, still before the watch
    assert again.deletes == (), "a pod being deleted is not deleted again"
    assert [p.deleting for p in job.cached("node-00")] == [True], "the cache shows the delete before the watch"

    job.env.fake.patch(f"{PODS}/{name}", {"metadata": {"finalizers": None}})  # the pod is gone ...
    job.pods.remove(name)  # ... and the watch reports it
    assert created_nodes(await job.step(nodes())) == ["node-00"]


@pytest.mark.parametrize("job", [False], indirect=True)
async def test_X2_after_an_immediate_delete_the_cache_keeps_the_pod_until_the_watch_removes_it(job: Job) -> None:
    """Without a grace period the pod is gone at once and the answer is no marked pod: the cache keeps the pod
    as it was, which still blocks its node, until the watch's DELETED event."""
    name = job.cached("node-00")[0].name
    assert [d.name for d in (await job.step(nodes("node-00"))).deletes] == [name]
    assert job.in_cluster("node-00") == []

    creates = job.creates()
    assert created_nodes(await job.step(nodes())) == []
    assert job.creates() == creates
    assert [p.name for p in job.cached("node-00")] == [name]

    job.pods.remove(name)
    assert created_nodes(await job.step(nodes())) == ["node-00"]


async def test_X2_a_delete_answer_does_not_bring_back_a_pod_the_watch_already_removed(
        job: Job, monkeypatch: pytest.MonkeyPatch) -> None:
    """The watch can report the whole deletion while the DELETE's answer waits to be read: the answer is then
    older than the cache, and putting it back would block the node with a pod that no longer exists."""
    client, delete = job.env.client, job.env.client.delete

    async def delete_then_watch(path: str, **kwargs: Any) -> Any:
        answer = await delete(path, **kwargs)
        name = path.rsplit("/", 1)[-1]
        job.env.fake.patch(f"{PODS}/{name}", {"metadata": {"finalizers": None}})
        job.pods.remove(name)
        return answer

    monkeypatch.setattr(client, "delete", delete_then_watch)
    deleting = await job.step(nodes("node-00"))
    assert deleting.deletes[0].name not in job.pods.values
    assert created_nodes(await job.step(nodes())) == ["node-00"]
