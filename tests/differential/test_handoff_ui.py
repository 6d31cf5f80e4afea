"""The Broadcast jobs page shows jobs handed to the real controllers: OpenKruise's BroadcastJob and
training-operator's TFJob, run as tasks with controller="cluster", are listed with their phase and counts, and
their pages list the controllers' pods per node and per replica. The plugin app's JSON API is called as the
page calls it, its reads going through the hook's client for the test cluster."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from airflow.api_fastapi.core_api.security import get_user
from fastapi.testclient import TestClient
from handoff_support import Runner, broadcast_task, task_runner, tf_job
from kubernetes import client
from support.waits import wait_until

from airflow_broadcast.cluster.informers import stop_informers
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.ui import access, reads
from airflow_broadcast.ui import app as app_module

pytestmark = [pytest.mark.cluster, pytest.mark.differential]

CONN = "kubernetes_default"


@pytest.fixture
def as_task(kubeconfig: str, upstream: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runner]:
    yield from task_runner(kubeconfig, monkeypatch)  # also points the hook at the test cluster


class Admin:
    """The user of this test."""

    def get_name(self) -> str:
        return "admin"

    def get_id(self) -> str:
        return "admin"


class EveryDag:
    """The auth manager of this test: the user may read and edit every DAG."""

    def is_authorized_dag(self, **_: Any) -> bool:
        return True


@pytest.fixture
def page(as_task: Runner, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    """The plugin app in one event loop for the whole test (its watch caches live there), reading the cluster
    through one client of the hook, as in the api-server."""
    opened: list[KubeClient] = []

    async def client_for(conn: str) -> KubeClient:
        if not opened:
            opened.append(await BroadcastKubernetesHook(conn).kube_client())
        return opened[0]

    async def close() -> None:
        await stop_informers()
        for kube in opened:
            await kube.close()

    monkeypatch.setattr(reads, "client_for", client_for)
    monkeypatch.setattr(app_module, "ui_connections", lambda: [CONN])
    monkeypatch.setattr(access, "get_auth_manager", EveryDag)
    app_module.app.dependency_overrides[get_user] = Admin
    try:
        with TestClient(app_module.app) as http:
            yield http
            assert http.portal is not None
            http.portal.call(close)
    finally:
        app_module.app.dependency_overrides.clear()


def listed(http: TestClient, namespace: str) -> dict[str, dict[str, Any]]:
    answer = http.get("/api/jobs", params={"namespace": namespace})
    assert answer.status_code == 200, answer.text
    assert answer.json()["errors"] == {}
    return {job["kind"]: job for job in answer.json()["jobs"]}


def both(jobs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]] | None:
    return jobs if jobs.keys() == {"BroadcastJob", "TFJob"} else None


def rows(http: TestClient, job: dict[str, Any]) -> list[dict[str, Any]]:
    answer = http.get(f"/api/jobs/{job['conn']}/{job['namespace']}/{job['record']}")
    assert answer.status_code == 200, answer.text
    detail = answer.json()
    assert (detail["controller"], detail["canStop"], detail["uid"]) == ("cluster", False, job["uid"])
    return list(detail["table"]["rows"])


def test_the_page_lists_jobs_run_by_kruise_and_training_operator_with_their_pods(
        as_task: Runner, page: TestClient, api_client: client.ApiClient, node_factory: Any,
        upstream_namespace: str) -> None:
    ns = upstream_namespace
    bcj_task = broadcast_task(node_factory, ns, "bcj-ui", "Succeeded", controller="cluster")
    nodes = sorted(n.metadata.name for n in client.CoreV1Api(api_client).list_node(
        label_selector=f"pool={ns}").items)
    bcj_result, _, _ = as_task(bcj_task)
    tf_result, _, _ = as_task(TFJobOperator(task_id="tf", manifest=tf_job("tf-ui", "Succeeded"), namespace=ns,
                                            controller="cluster", deferrable=False))

    jobs = wait_until(lambda: both(listed(page, ns)), timeout=30, what="both hand-off jobs listed")

    bcj, tf = jobs["BroadcastJob"], jobs["TFJob"]
    assert (bcj["controller"], bcj["name"], bcj["record"], bcj["uid"]) == (
        "cluster", "bcj-ui", "~broadcastjobs.bcj-ui", bcj_result["uid"])
    assert (bcj["phase"], bcj["counts"]) == ("completed", {"desired": 2, "active": 0, "succeeded": 2, "failed": 0})
    assert (tf["controller"], tf["name"], tf["record"], tf["uid"]) == (
        "cluster", "tf-ui", "~tfjobs.tf-ui", tf_result["uid"])
    assert (tf["phase"], tf["counts"]) == ("Succeeded", {"Worker": {"active": 0, "succeeded": 2, "failed": 0}})
    assert {(j["dagId"], j["taskId"]) for j in jobs.values()} == {("handoff", "bcj"), ("handoff", "tf")}
    assert page.get("/api/jobs", params={"namespace": ns, "controller": "airflow"}).json()["jobs"] == []

    per_node = [(r["node"], r["phase"]) for r in rows(page, bcj)]
    assert per_node == [(node, "Succeeded") for node in nodes]
    per_replica = [(r["type"].lower(), r["index"], r["phase"]) for r in rows(page, tf)]
    assert per_replica == [("worker", 0, "Succeeded"), ("worker", 1, "Succeeded")]
    stop = page.post(f"/api/jobs/{CONN}/{ns}/{bcj['record']}/stop")
    assert stop.status_code == 409 and "run by the cluster's controller" in stop.json()["detail"]
