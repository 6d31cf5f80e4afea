"""Hand-off mode, cluster layer, on the in-memory API server: creating and re-attaching to the custom resource,
waiting on it through the shared watch, and the bounded probe of `auto`."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from support.fake_cluster import FakeCluster
from support.fake_http import Fault

from airflow_broadcast.cluster.handoff.choice import hand_off
from airflow_broadcast.cluster.handoff.resources import crd_served, resource_path, submit_resource
from airflow_broadcast.cluster.handoff.watch import finished, wait_resource
from airflow_broadcast.cluster.informers import stop_informers
from airflow_broadcast.cluster.job_records import SUBMITTED_BY
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.reconcile_loop import LoopReason
from airflow_broadcast.exceptions import JobConflictError
from airflow_broadcast.reconcilers.tf_job.kind import TFJobKind

TF_API = "kubeflow.org/v1"
PATH = resource_path("TFJob", "ns", "job")
CREATED = {"conditions": [{"type": "Created", "status": "True"}]}
SUCCEEDED = {"conditions": [*CREATED["conditions"], {"type": "Succeeded", "status": "True"}]}


def manifest(**run_policy: Any) -> dict[str, Any]:
    return {"apiVersion": TF_API, "kind": "TFJob", "metadata": {"name": "job", "namespace": "ns"},
            "spec": {"runPolicy": run_policy, "tfReplicaSpecs": {}}}


@pytest.fixture
def fake() -> FakeCluster:
    return FakeCluster(apis=[TF_API])


async def test_the_resource_carries_its_submitter_and_a_retry_of_the_same_task_reattaches(fake: FakeCluster) -> None:
    client, kind = KubeClient(fake), TFJobKind()
    created, reattached = await submit_resource(client, kind, manifest(), submitter="d/t/r", reattach=True)
    again, reattached_again = await submit_resource(client, kind, manifest(), submitter="d/t/r", reattach=True)

    assert created["metadata"]["annotations"][SUBMITTED_BY] == "d/t/r" and not reattached
    assert reattached_again and again["metadata"]["uid"] == created["metadata"]["uid"]
    with pytest.raises(JobConflictError, match=r"already exists and runs \(submitted by d/t/r\)"):
        await submit_resource(client, kind, manifest(), submitter="other", reattach=True)


@pytest.mark.parametrize("reattach", [False, True])
async def test_a_lost_answer_to_our_own_create_is_our_new_resource(fake: FakeCluster, reattach: bool) -> None:
    """The server made the resource, the answer was lost, and the retried create met it: ours, not a conflict."""
    from airflow_broadcast.cluster.api_errors import AlreadyExists

    class _LostAnswer(KubeClient):
        async def create(self, path: str, body: Any) -> Any:
            await super().create(path, body)
            raise AlreadyExists(409, "AlreadyExists", "already exists")

    created, reattached = await submit_resource(_LostAnswer(fake), TFJobKind(), manifest(), submitter="d/t/r",
                                                reattach=reattach)
    assert created["metadata"]["annotations"][SUBMITTED_BY] == "d/t/r" and not reattached


async def test_a_finished_resource_of_that_name_is_replaced(fake: FakeCluster) -> None:
    client, kind = KubeClient(fake), TFJobKind()
    old, _ = await submit_resource(client, kind, manifest(), submitter="a", reattach=True)
    fake.patch(PATH, {"status": SUCCEEDED})

    new, reattached = await submit_resource(client, kind, manifest(), submitter="b", reattach=True)

    assert not reattached and new["metadata"]["uid"] != old["metadata"]["uid"]


async def test_the_crd_is_served_only_where_the_api_answers() -> None:
    assert await crd_served(KubeClient(FakeCluster(apis=[TF_API])), "TFJob", "ns") is True
    assert await crd_served(KubeClient(FakeCluster()), "TFJob", "ns") is False


async def test_auto_without_permission_to_list_the_kind_keeps_airflow_and_names_the_role() -> None:
    fake = FakeCluster(apis=[TF_API])
    fake.faults.append(Fault("GET", "/apis/kubeflow.org/v1/namespaces/ns/tfjobs", 403, times=None,
                             message='tfjobs.kubeflow.org is forbidden: User "u" cannot list resource "tfjobs"'))
    chosen = await hand_off(KubeClient(fake), TFJobKind(), manifest(), requested="auto", submitter="a",
                            reattach=True, probe_seconds=10)

    assert chosen.decision.controller == "airflow"
    assert "docs/rbac/handoff.yaml" in chosen.decision.reason
    assert 'cannot list resource "tfjobs"' in chosen.decision.reason
    assert [r for r in fake.requests if r.verb == "POST"] == []


async def test_the_wait_ends_when_the_controller_finishes_the_job(fake: FakeCluster) -> None:
    client, kind = KubeClient(fake), TFJobKind()
    created, _ = await submit_resource(client, kind, manifest(), submitter="a", reattach=True)
    seen: list[str] = []

    async def finish_later() -> None:
        await asyncio.sleep(0.2)
        fake.patch(PATH, {"status": SUCCEEDED})

    finisher = asyncio.create_task(finish_later())
    outcome = await wait_resource(client, kind, "ns", "job", created["metadata"]["uid"], deadline=time.time() + 10,
                                  done=finished(kind), progress=lambda view: seen.append(str(view.status)))
    await finisher
    await stop_informers()  # in the test's own loop: the watch of this fake ends with it

    assert outcome.reason is LoopReason.FINISHED and outcome.resource is not None
    assert len(seen) >= 2  # the created job, then the finished one


async def test_the_wait_ends_at_airflows_deadline_or_when_the_resource_is_deleted(fake: FakeCluster) -> None:
    client, kind = KubeClient(fake), TFJobKind()
    created, _ = await submit_resource(client, kind, manifest(), submitter="a", reattach=True)
    uid = created["metadata"]["uid"]

    timed_out = await wait_resource(client, kind, "ns", "job", uid, deadline=time.time() + 0.2, done=finished(kind))
    fake.delete(PATH)
    gone = await wait_resource(client, kind, "ns", "job", uid, deadline=None, done=finished(kind))
    await stop_informers()

    assert timed_out.reason is LoopReason.TIMEOUT and "execution_timeout" in timed_out.message
    assert gone.reason is LoopReason.GONE and gone.resource is None


async def test_auto_keeps_airflow_and_deletes_the_probe_when_no_controller_acts(fake: FakeCluster) -> None:
    chosen = await hand_off(KubeClient(fake), TFJobKind(), manifest(), requested="auto", submitter="a",
                            reattach=True, probe_seconds=0.3)
    await asyncio.sleep(0.2)  # the watch delivers the deletion first: Python 3.11 loses a cancel racing an event
    await stop_informers()

    assert chosen.decision.controller == "airflow" and chosen.resource is None
    assert fake.object(PATH) is None


async def test_auto_hands_off_once_the_controller_writes_the_status(fake: FakeCluster) -> None:
    async def controller() -> None:
        for _ in range(500):  # once the probe created the resource, write its status as a controller would
            if fake.object(PATH) is not None:
                fake.patch(PATH, {"status": CREATED})
                return
            await asyncio.sleep(0.02)

    acting = asyncio.create_task(controller())
    chosen = await hand_off(KubeClient(fake), TFJobKind(), manifest(), requested="auto", submitter="a",
                            reattach=True, probe_seconds=10)
    await acting
    await stop_informers()

    assert chosen.decision.controller == "cluster"
    assert chosen.resource is not None and chosen.resource["status"] == CREATED


async def test_auto_without_the_crd_creates_nothing() -> None:
    fake = FakeCluster()
    chosen = await hand_off(KubeClient(fake), TFJobKind(), manifest(), requested="auto", submitter="a",
                            reattach=True, probe_seconds=10)

    assert chosen.decision.controller == "airflow" and "not served" in chosen.decision.reason
    assert [r for r in fake.requests if r.verb == "POST"] == []


async def test_auto_leaves_a_job_managed_by_another_controller_to_it_without_a_probe(fake: FakeCluster) -> None:
    chosen = await hand_off(KubeClient(fake), TFJobKind(), manifest(managedBy="kueue.x-k8s.io/multikueue"),
                            requested="auto", submitter="a", reattach=True, probe_seconds=10)

    assert chosen.decision.controller == "cluster" and fake.object(PATH) is not None


BCJ_API = "apps.kruise.io/v1beta1"


def bcj_manifest(**spec: Any) -> dict[str, Any]:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
    return {"apiVersion": BCJ_API, "kind": "BroadcastJob", "metadata": {"name": "job", "namespace": "ns"},
            "spec": {"template": template, **spec}}


@pytest.mark.parametrize("phase", ["running", "completed"])
async def test_a_provider_only_field_is_refused_beside_a_running_resource_of_that_name(phase: str) -> None:
    """A retry that adds `waves` after its earlier try handed the job off must not run a second copy."""
    from airflow_broadcast.reconcilers.broadcast_job.kind import BroadcastJobKind

    fake = FakeCluster(apis=[BCJ_API])
    client, kind = KubeClient(fake), BroadcastJobKind()
    await submit_resource(client, kind, bcj_manifest(), submitter="d/t/1", reattach=True)
    path = resource_path("BroadcastJob", "ns", "job")
    status = {"phase": phase, "desired": 2, "active": 2 if phase == "running" else 0, "succeeded": 0, "failed": 0}
    if phase == "completed":
        status["conditions"] = [{"type": "Complete", "status": "True", "reason": "Complete"}]
    fake.patch(path, {"status": status})
    with_waves = bcj_manifest(waves={"size": 1})

    if phase == "running":
        with pytest.raises(JobConflictError, match=(
                r"BroadcastJob ns/job runs with the cluster's controller \(uid .+, submitted by d/t/1\), and this "
                r"manifest sets spec.waves, which only this provider runs")):
            await hand_off(client, kind, with_waves, requested="auto", submitter="d/t/1", reattach=True,
                           probe_seconds=10)
    else:
        chosen = await hand_off(client, kind, with_waves, requested="auto", submitter="d/t/1", reattach=True,
                                probe_seconds=10)
        assert chosen.decision.controller == "airflow" and "spec.waves" in chosen.decision.reason
    assert [r.verb for r in fake.requests if r.verb == "POST"] == ["POST"], "nothing more was created"


@pytest.mark.parametrize("submitter", ["d/t/1", "someone/else/1"])
async def test_a_resource_no_controller_acted_on_is_this_tasks_probe_to_delete_or_anothers_to_leave(
        submitter: str) -> None:
    """An earlier try's probe, cut short, is deleted as the probe would have; someone else's job is refused."""
    from airflow_broadcast.reconcilers.broadcast_job.kind import BroadcastJobKind

    fake = FakeCluster(apis=[BCJ_API])
    client, kind = KubeClient(fake), BroadcastJobKind()
    await submit_resource(client, kind, bcj_manifest(), submitter=submitter, reattach=True)
    path = resource_path("BroadcastJob", "ns", "job")
    call = hand_off(client, kind, bcj_manifest(waves={"size": 1}), requested="auto", submitter="d/t/1",
                    reattach=True, probe_seconds=10)
    if submitter == "d/t/1":
        chosen = await call
        assert chosen.decision.controller == "airflow" and fake.object(path) is None
    else:
        with pytest.raises(JobConflictError, match="submitted by someone/else/1"):
            await call
        assert fake.object(path) is not None
