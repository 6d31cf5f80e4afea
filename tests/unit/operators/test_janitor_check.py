"""At submission a job with a TTL warns, never fails, when no TTL janitor keeps its namespace's lease fresh."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from support.fake_cluster import FakeCluster

from airflow_broadcast.cluster.janitor_lease import lease_path, micro_time, renew_lease
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.janitor_check import ttl_janitor_warnings, ttl_seconds
from airflow_broadcast.reconcilers.kind import ParsedJob

LEASES = "coordination.k8s.io/v1"
HINT = ('To clean up on time, run the janitor: a DAG file with `from airflow_broadcast.janitor import '
        'ttl_janitor_dag` and `dag = ttl_janitor_dag(namespaces=["ops"])` (see docs/ttl.md)')


def bcj(ttl: int | None) -> dict[str, Any]:
    policy = {"type": "Always"} if ttl is None else {"type": "Always", "ttlSecondsAfterFinished": ttl}
    return {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": "nightly"},
            "spec": {"completionPolicy": policy, "template": {"spec": {
                "containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}}}


def job(ttl: int | None) -> ParsedJob:
    return ParsedJob(name="nightly", namespace="ops", manifest=bcj(ttl))


@pytest.fixture
async def kube() -> AsyncIterator[tuple[FakeCluster, KubeClient]]:
    fake = FakeCluster(apis=[LEASES])
    client = KubeClient(fake, qps=0, max_retries=0)
    yield fake, client
    await client.close()


def test_the_ttl_is_read_from_either_kind() -> None:
    assert ttl_seconds(bcj(30)) == 30
    assert ttl_seconds({"spec": {"runPolicy": {"ttlSecondsAfterFinished": 0}}}) == 0
    assert ttl_seconds(bcj(None)) is None and ttl_seconds({}) is None


@pytest.mark.parametrize("ttl", [None, 0])
async def test_no_ttl_or_ttl_0_needs_no_janitor_and_asks_nothing(kube: Any, ttl: int | None) -> None:
    fake, client = kube
    assert await ttl_janitor_warnings(client, job(ttl)) == []
    assert fake.requests == [], "TTL 0 is deleted by the task that reads the result"


async def test_no_lease_warns_what_stays_and_how_to_run_the_janitor(kube: Any) -> None:
    _, client = kube
    assert await ttl_janitor_warnings(client, job(30)) == [
        "No TTL janitor runs in namespace ops (no Lease airflow-broadcast-ttl-janitor): after its "
        "ttlSecondsAfterFinished (30 s) this job's record and pods stay until a task of this provider starts in ops "
        f"or JobCleanupOperator sweeps it. {HINT}"]


async def test_a_fresh_lease_means_a_janitor_runs(kube: Any) -> None:
    _, client = kube
    await renew_lease(client, "ops", "triggerer job 3 on host (pid 9)", time.time() - 5)
    assert await ttl_janitor_warnings(client, job(30)) == []


async def test_a_stale_lease_warns_who_held_it_and_when(kube: Any) -> None:
    fake, client = kube
    await renew_lease(client, "ops", "triggerer job 3 on host (pid 9)", time.time())
    renewed = time.time() - 100
    fake.patch(lease_path("ops"), {"spec": {"renewTime": micro_time(renewed)}})
    (warning,) = await ttl_janitor_warnings(client, job(30), now=renewed + 100)
    assert warning.startswith("The TTL janitor of namespace ops is not running: its Lease "
                              "airflow-broadcast-ttl-janitor was last renewed 100 s ago by triggerer job 3 on host "
                              "(pid 9). Is its DAG paused, or the triggerer down? Until it runs, after its "
                              "ttlSecondsAfterFinished (30 s)")
    assert warning.endswith(HINT)


async def test_a_lease_nobody_may_read_is_a_warning_not_a_failure(kube: Any) -> None:
    fake, client = kube
    fake.fail("GET", lease_path("ops"), 403, message='leases.coordination.k8s.io "airflow-broadcast-ttl-janitor" is '
              'forbidden: User "restricted" cannot get resource "leases"')
    (warning,) = await ttl_janitor_warnings(client, job(30))
    assert warning.startswith("Cannot tell whether a TTL janitor runs in namespace ops: reading its Lease "
                              "airflow-broadcast-ttl-janitor failed (Kubernetes API 403 Forbidden on GET")
    assert 'cannot get resource "leases"' in warning and warning.endswith(HINT)


async def test_the_operator_logs_the_warning_when_it_submits(kube: Any, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    _, client = kube

    async def kube_client(self: BroadcastKubernetesHook) -> KubeClient:
        return client

    monkeypatch.setattr(BroadcastKubernetesHook, "kube_client", kube_client)
    operator = BroadcastJobOperator(task_id="nightly", manifest=bcj(30), namespace="ops")
    record, reattached = await operator._submit(operator.parse(bcj(30), "ops", "ops"), "d/nightly/r/-1")
    assert (record.name, reattached) == ("bcj-nightly", False), "the warning does not stop the submission"
    assert "[warning  ] No TTL janitor runs in namespace ops" in capsys.readouterr().out  # the task log's format
