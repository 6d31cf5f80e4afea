"""The page's JSON API: auth manager decides who sees and stops which job; secrets never reach the page."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from airflow.api_fastapi.core_api.security import get_user
from airflow.sdk.log import mask_secret
from fastapi.testclient import TestClient
from ui_records import NOW, pod, record

from airflow_broadcast.ui import access, reads
from airflow_broadcast.ui import app as app_module

SECRET = "ui-secret-5d1e77"


@dataclass
class User:
    name: str

    def get_name(self) -> str:
        return self.name

    def get_id(self) -> str:
        return self.name


class AuthManager:
    """outsider may not read DAG `secret`; viewer may read but not edit; admin may do everything."""

    def is_authorized_dag(self, *, method: str, user: User, details: Any = None, access_entity: Any = None) -> bool:
        dag = details.id if details is not None else None
        if user.name == "outsider" and dag in ("secret", None):
            return False
        return method == "GET" or user.name == "admin"


@dataclass
class Cluster:
    records: list[dict[str, Any]] = field(default_factory=list)
    pods: list[Any] = field(default_factory=list)
    stopped: list[tuple[str, ...]] = field(default_factory=list)


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Cluster:
    state = Cluster()
    state.records = [
        record("BroadcastJob", "open", {"phase": "running", "desired": 2, "active": 1, "succeeded": 1,
                                        "nodes": {"n1": {"pod": "p1", "phase": "Failed", "exitCode": 1,
                                                         "message": f"token={SECRET}"}}}, dag="etl"),
        record("TFJob", "hidden", {"conditions": [{"type": "Running", "status": "True"}]}, dag="secret"),
    ]
    state.pods = [pod("p1", "Failed", node="n1", uid="uid-open", exit_code=1)]

    async def client_for(conn: str) -> str:
        return conn

    async def records(client: Any) -> list[dict[str, Any]]:
        return state.records

    async def job_pods(client: Any, namespace: str, uid: str) -> list[Any]:
        return [p for p in state.pods if p.labels.get("airflow-broadcast.io/job-uid") == uid]

    async def warnings(*args: Any) -> list[dict[str, Any]]:
        return [{"object": "Pod/p1", "reason": "BackOff", "message": f"pull with {SECRET}", "count": 2}]

    async def pod_log(client: Any, namespace: str, name: str, container: str | None, lines: int) -> str:
        return f"line 1\npassword {SECRET}\n"

    async def stop_job(client: Any, kind: str, namespace: str, name: str, rec: str, uid: str, user: str) -> int:
        state.stopped.append((kind, namespace, name, rec, uid, user))
        return 1

    for name, fake in {"client_for": client_for, "records": records, "job_pods": job_pods, "warnings": warnings,
                       "pod_log": pod_log, "stop_job": stop_job}.items():
        monkeypatch.setattr(reads, name, fake)
    monkeypatch.setattr(access, "get_auth_manager", AuthManager)
    monkeypatch.setattr(app_module.time, "time", lambda: NOW)
    mask_secret(SECRET)
    return state


@pytest.fixture
def as_user() -> Iterator[Any]:
    client = TestClient(app_module.app)

    def login(name: str) -> TestClient:
        app_module.app.dependency_overrides[get_user] = lambda: User(name)
        return client

    yield login
    app_module.app.dependency_overrides.clear()


def test_the_page_itself_is_served() -> None:
    page = TestClient(app_module.app).get("/")
    assert page.status_code == 200 and "static/app.js" in page.text
    assert TestClient(app_module.app).get("/static/app.js").status_code == 200


def test_the_list_shows_only_jobs_of_dags_the_user_may_read(cluster: Cluster, as_user: Any) -> None:
    everyone = as_user("admin").get("/api/jobs").json()
    assert sorted(j["name"] for j in everyone["jobs"]) == ["hidden", "open"]
    assert everyone["choices"]["dag"] == ["etl", "secret"]
    outsider = as_user("outsider").get("/api/jobs").json()
    assert [j["name"] for j in outsider["jobs"]] == ["open"]
    assert outsider["choices"]["dag"] == ["etl"]


def test_the_list_filters_by_kind_and_dag(cluster: Cluster, as_user: Any) -> None:
    client = as_user("admin")
    assert [j["name"] for j in client.get("/api/jobs", params={"kind": "TFJob"}).json()["jobs"]] == ["hidden"]
    assert [j["name"] for j in client.get("/api/jobs", params={"dag": "etl"}).json()["jobs"]] == ["open"]


def test_a_job_of_a_dag_the_user_may_not_read_is_403(cluster: Cluster, as_user: Any) -> None:
    client = as_user("outsider")
    assert client.get("/api/jobs/kubernetes_default/ns1/tfjob-hidden").status_code == 403
    assert client.get("/api/jobs/kubernetes_default/ns1/tfjob-hidden/logs/p1").status_code == 403
    assert client.post("/api/jobs/kubernetes_default/ns1/tfjob-hidden/stop").status_code == 403
    assert client.get("/api/find", params={"dag_id": "secret", "run_id": "manual__1", "task_id": "run"}
                      ).status_code == 403
    assert as_user("admin").get("/api/jobs/kubernetes_default/ns1/tfjob-hidden").status_code == 200


def test_the_job_page_masks_secrets_from_status_events_and_logs(cluster: Cluster, as_user: Any) -> None:
    client = as_user("viewer")
    job = client.get("/api/jobs/kubernetes_default/ns1/bcj-open").json()
    assert SECRET not in str(job)
    assert job["table"]["rows"][0]["message"] == "token=***"
    assert job["warnings"][0]["message"] == "pull with ***"
    assert job["canStop"] is False
    log = client.get("/api/jobs/kubernetes_default/ns1/bcj-open/logs/p1").json()
    assert log["text"] == "line 1\npassword ***"


def test_only_pods_of_the_job_have_their_log_shown(cluster: Cluster, as_user: Any) -> None:
    assert as_user("admin").get("/api/jobs/kubernetes_default/ns1/bcj-open/logs/kube-apiserver").status_code == 404


def test_a_connection_not_configured_for_the_page_is_not_used(cluster: Cluster, as_user: Any) -> None:
    assert as_user("admin").get("/api/jobs/other_cluster/ns1/bcj-open").status_code == 404


def test_stop_needs_the_right_to_edit_the_dag(cluster: Cluster, as_user: Any) -> None:
    assert as_user("viewer").post("/api/jobs/kubernetes_default/ns1/bcj-open/stop").status_code == 403
    assert cluster.stopped == []
    answer = as_user("admin").post("/api/jobs/kubernetes_default/ns1/bcj-open/stop")
    assert answer.status_code == 200 and answer.json() == {"stopped": True, "deletedPods": 1}
    assert cluster.stopped == [("BroadcastJob", "ns1", "open", "bcj-open", "uid-open", "admin")]


def test_a_finished_job_cannot_be_stopped(cluster: Cluster, as_user: Any) -> None:
    cluster.records[0] = record("BroadcastJob", "open", {"phase": "completed", "conditions": [
        {"type": "Complete", "status": "True"}]}, dag="etl")
    assert as_user("admin").post("/api/jobs/kubernetes_default/ns1/bcj-open/stop").status_code == 409


def test_links_land_on_the_job_a_task_submitted(cluster: Cluster, as_user: Any) -> None:
    found = as_user("viewer").get("/api/find", params={"dag_id": "etl", "run_id": "manual__1", "task_id": "run",
                                                       "map_index": -1}).json()
    assert [(j["conn"], j["namespace"], j["record"]) for j in found["jobs"]] == [("kubernetes_default", "ns1",
                                                                                   "bcj-open")]
    by_name = as_user("viewer").get("/api/find", params={"kind": "BroadcastJob", "name": "open"}).json()
    assert [j["record"] for j in by_name["jobs"]] == ["bcj-open"]
    assert as_user("viewer").get("/api/find", params={"dag_id": "etl", "run_id": "other", "task_id": "run"}
                                 ).json() == {"jobs": []}
