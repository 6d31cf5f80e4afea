"""The loop under API failures: permissions, a missing API, throttling, server errors, lost answers, 410s.

Faults are injected under the real KubeClient, so its retries, Retry-After handling and error
mapping run as in production; the cluster state afterwards shows nothing was lost or duplicated.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from support import bcj_builders, tf_builders
from support.fake_engine import NAMESPACE, FakeEngine, fake_engine

from airflow_broadcast.cluster.api_errors import Forbidden
from airflow_broadcast.cluster.job_records import record_path

BCJ = "BroadcastJob"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
VOLCANO = "scheduling.volcano.sh/v1beta1"


@pytest.fixture
async def env(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeEngine]:
    async with fake_engine(monkeypatch) as engine:
        yield engine


def one_pod_per_node(env: FakeEngine, nodes: int) -> bool:
    return {node: len(pods) for node, pods in env.pods_by_node().items()} == {f"node-{i}": 1 for i in range(nodes)}


async def test_403_on_the_first_list_fails_the_loop_with_the_permission_it_lacks(env: FakeEngine) -> None:
    env.fake.add_node("node-0")
    submission = await env.submit(bcj_builders.manifest(name="hello", namespace=NAMESPACE))
    env.fake.fail("GET", PODS, 403, times=None,
                  message=f'pods is forbidden: User "airflow" cannot list resource "pods" in "{NAMESPACE}"')

    with pytest.raises(Forbidden) as raised:
        await env.drive(submission, BCJ)

    assert 'cannot list resource "pods"' in raised.value.describe()
    assert "docs/rbac.md" in raised.value.describe()
    assert env.fake.served_requests("POST", PODS) == [], "nothing is created from a cache that never synced"


async def test_a_watch_that_loses_its_permission_stops_the_loop_with_an_error(env: FakeEngine) -> None:
    _, loop = await env.running_broadcast_job(2)
    env.fake.fail("GET", PODS, 403, times=None, message='pods is forbidden: cannot list resource "pods"')
    env.fake.fail("WATCH", PODS, 403, times=None, message='pods is forbidden: cannot watch resource "pods"')

    env.fake.end_watches(PODS)  # the stream breaks; re-opening it is refused
    outcome = await asyncio.wait_for(loop, 5)

    assert outcome.reason == "error"
    assert 'cannot watch resource "pods"' in outcome.message
    assert one_pod_per_node(env, 2), "a stale cache acted on nothing: no pod was created or deleted"
    assert env.fake.served_requests("DELETE") == []


async def test_gang_scheduling_without_the_pod_group_api_is_an_error_before_anything_is_created(
        env: FakeEngine) -> None:
    submission = await env.submit(tf_builders.manifest("mnist", NAMESPACE, {"Worker": 2}))

    outcome = await env.drive(submission, "TFJob", options={"gang_scheduler": "volcano"})

    assert outcome.reason == "error"
    assert f"PodGroup API (/apis/{VOLCANO}/namespaces/{NAMESPACE}/podgroups) does not exist" in outcome.message
    posted = {r.path for r in env.fake.served_requests("POST")}
    assert posted == {f"/api/v1/namespaces/{NAMESPACE}/configmaps"}, "only the job record (by the submission)"


async def test_with_the_pod_group_api_served_the_pod_group_comes_first_and_pods_wait_for_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async with fake_engine(monkeypatch, apis=[VOLCANO]) as env:
        submission = await env.submit(tf_builders.manifest("mnist", NAMESPACE, {"Worker": 2}))

        outcome = await env.drive(submission, "TFJob", options={"gang_scheduler": "volcano"}, single_pass=True)

        assert outcome.reason == "pending"
        groups = env.fake.objects(f"/apis/{VOLCANO}/namespaces/{NAMESPACE}/podgroups")
        assert [(g["metadata"]["name"], g["spec"]["minMember"]) for g in groups] == [("mnist", 2)]
        assert groups[0]["metadata"]["ownerReferences"][0]["uid"] == submission.uid
        assert env.pods() == [], "Volcano has not admitted the gang yet"


async def test_a_429_is_retried_after_the_retry_after_the_server_asked_for(env: FakeEngine) -> None:
    for i in range(3):
        env.fake.add_node(f"node-{i}")
    env.fake.fail("POST", PODS, 429, retry_after=0.05, message="too many requests, please try again later")
    submission = await env.submit(bcj_builders.manifest(name="hello", namespace=NAMESPACE))

    outcome = await env.drive(submission, BCJ, single_pass=True)

    assert outcome.reason == "pending"
    throttled, retried = env.fake.served_requests("POST", PODS)[:2]
    assert (throttled.status, retried.status) == (429, 201)
    assert throttled.body["metadata"]["name"] == retried.body["metadata"]["name"], "the same create, retried"
    assert retried.at - throttled.at >= 0.05
    assert one_pod_per_node(env, 3)
    assert env.status(BCJ, "hello")["active"] == 3


async def test_server_errors_on_the_status_write_are_retried_until_it_lands(env: FakeEngine) -> None:
    env.fake.add_node("node-0")
    submission = await env.submit(bcj_builders.manifest(name="hello", namespace=NAMESPACE))
    record = record_path(NAMESPACE, submission.name)
    env.fake.fail("PUT", record, 500, message="etcdserver: request timed out")  # exponential backoff, 0.4 s
    env.fake.fail("PUT", record, 503, retry_after=0.01, message="the server is currently unable to handle it")

    outcome = await env.drive(submission, BCJ, single_pass=True)

    assert outcome.reason == "pending"
    assert [r.status for r in env.fake.served_requests("PUT", record)] == [500, 503, 200]
    assert (env.status(BCJ, "hello")["desired"], env.status(BCJ, "hello")["active"]) == (1, 1)


async def test_a_create_whose_answer_was_lost_is_adopted_not_duplicated(env: FakeEngine) -> None:
    env.fake.add_node("node-0")
    env.fake.reset("POST", PODS, after=True)  # the pod is created, the connection drops before the answer
    submission = await env.submit(bcj_builders.manifest(name="hello", namespace=NAMESPACE))

    outcome = await env.drive(submission, BCJ, single_pass=True)

    assert outcome.reason == "pending"
    assert [r.status for r in env.fake.served_requests("POST", PODS)] == [0, 409]
    assert one_pod_per_node(env, 1)
    assert env.status(BCJ, "hello")["active"] == 1


async def test_a_watch_too_far_behind_gets_410_and_the_relist_delivers_what_it_missed(env: FakeEngine) -> None:
    _, loop = await env.running_broadcast_job(2)
    env.fake.hold_watches(PODS)  # the stream stalls ...
    env.set_all_pods("Succeeded")  # ... while the pods finish ...
    compacted = env.fake.compact()  # ... and etcd compacts the history it would resume from
    assert env.fake.end_watches(PODS) == 1

    outcome = await asyncio.wait_for(loop, 5)

    assert outcome.reason == "finished"
    _, resumed, *_ = env.fake.served_requests("WATCH", PODS)
    assert int(resumed.query["resourceVersion"]) < compacted, "it resumed from a compacted version: 410"
    assert len(env.fake.served_requests("GET", PODS)) == 2, "one initial list, one relist after the 410"
    assert env.status(BCJ, "hello")["succeeded"] == 2


async def test_a_bookmark_lets_a_watch_resume_after_compaction_without_a_relist(env: FakeEngine) -> None:
    _, loop = await env.running_broadcast_job(1)
    for i in range(5):  # writes the pod watch does not select still move the resourceVersion on
        env.fake.create(f"/api/v1/namespaces/{NAMESPACE}/configmaps", {"metadata": {"name": f"other-{i}"}})
    env.fake.bookmark()
    env.fake.compact()
    env.fake.end_watches(PODS)
    await env.fake.wait_for(lambda: len(env.fake.served_requests("WATCH", PODS)) == 2, what="the watch reopened")

    env.set_all_pods("Succeeded")
    outcome = await asyncio.wait_for(loop, 5)

    assert outcome.reason == "finished"
    resumed = env.fake.served_requests("WATCH", PODS)[1]
    assert int(resumed.query["resourceVersion"]) == env.fake.store.compacted, "resumed from the bookmark"
    assert len(env.fake.served_requests("GET", PODS)) == 1, "no relist was needed"
