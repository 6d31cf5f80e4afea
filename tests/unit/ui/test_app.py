"""The page's JSON API: auth manager decides who sees and stops which job; secrets never reach the page."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from ui_fakes import Cluster
from ui_records import SECRET, record

from airflow_broadcast.ui import app as app_module


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
