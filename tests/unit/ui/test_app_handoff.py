"""The page's JSON API for jobs left to the cluster's controller: listed beside job records, readable, never
stopped from the page."""

from __future__ import annotations

from typing import Any

import pytest
from ui_fakes import Cluster
from ui_records import NOW, pod, resource, stamp

BCJ_PAGE = "/api/jobs/kubernetes_default/ns1/~broadcastjobs.kruise"
TF_PAGE = "/api/jobs/kubernetes_default/ns1/~tfjobs.trainer"
TF_LABELS = {"training.kubeflow.org/job-name": "trainer", "training.kubeflow.org/replica-type": "worker"}


@pytest.fixture
def handed_off(cluster: Cluster) -> Cluster:
    """A Kruise BroadcastJob (DAG etl) on two nodes, a TFJob (DAG secret), and a resource Airflow did not submit."""
    spec = {"completionPolicy": {"activeDeadlineSeconds": 300}, "template": {"spec": {"containers": [{"name": "c"}]}}}
    cluster.resources = [
        resource("BroadcastJob", "kruise", {"phase": "running", "desired": 2, "active": 1, "succeeded": 1,
                                            "failed": 0, "startTime": stamp(NOW - 50)}, spec=spec),
        resource("TFJob", "trainer", {"conditions": [{"type": "Created", "status": "True"},
                                                     {"type": "Succeeded", "status": "True"}],
                                      "replicaStatuses": {"Worker": {"succeeded": 2}},
                                      "completionTime": stamp(NOW - 10)},
                 dag="secret", spec={"runPolicy": {"ttlSecondsAfterFinished": 100}}),
    ]
    cluster.pods += [
        pod("kruise-a", "Succeeded", uid="uid-kruise", owner="BroadcastJob", node="n1", exit_code=0),
        pod("kruise-b", "Pending", uid="uid-kruise", owner="BroadcastJob", pinned="n2"),
        pod("trainer-worker-0", "Succeeded", uid="uid-trainer", owner="TFJob", exit_code=0,
            labels={**TF_LABELS, "training.kubeflow.org/replica-index": "0"}),
        pod("trainer-worker-1", "Failed", uid="uid-trainer", owner="TFJob", exit_code=2,
            labels={**TF_LABELS, "training.kubeflow.org/replica-index": "1"}),
    ]
    return cluster


def test_the_list_shows_both_modes_with_their_controller(handed_off: Cluster, as_user: Any) -> None:
    listed = as_user("admin").get("/api/jobs").json()
    lines = {(j["kind"], j["name"]): j for j in listed["jobs"]}
    assert {key: (j["controller"], j["record"]) for key, j in lines.items()} == {
        ("BroadcastJob", "open"): ("airflow", "bcj-open"), ("TFJob", "hidden"): ("airflow", "tfjob-hidden"),
        ("BroadcastJob", "kruise"): ("cluster", "~broadcastjobs.kruise"),
        ("TFJob", "trainer"): ("cluster", "~tfjobs.trainer")}
    kruise, trainer = lines["BroadcastJob", "kruise"], lines["TFJob", "trainer"]
    assert (kruise["phase"], kruise["counts"], kruise["deadlineIn"]) == (
        "running", {"desired": 2, "active": 1, "succeeded": 1, "failed": 0}, 250)
    assert (trainer["phase"], trainer["counts"], trainer["ttlIn"]) == (
        "Succeeded", {"Worker": {"active": 0, "succeeded": 2, "failed": 0}}, 90)
    assert (kruise["dagId"], kruise["conn"]) == ("etl", "kubernetes_default")
    assert listed["choices"]["controller"] == ["airflow", "cluster"]


def test_the_list_filters_by_controller_and_hides_resources_of_dags_the_user_may_not_read(
        handed_off: Cluster, as_user: Any) -> None:
    cluster_run = as_user("admin").get("/api/jobs", params={"controller": "cluster"}).json()["jobs"]
    assert sorted(j["name"] for j in cluster_run) == ["kruise", "trainer"]
    outsider = as_user("outsider").get("/api/jobs").json()["jobs"]
    assert sorted((j["name"], j["controller"]) for j in outsider) == [("kruise", "cluster"), ("open", "airflow")]
    assert as_user("outsider").get(TF_PAGE).status_code == 403


def test_a_broadcast_job_page_has_one_row_per_node_from_kruises_pods(handed_off: Cluster, as_user: Any) -> None:
    job = as_user("admin").get(BCJ_PAGE).json()
    assert (job["kind"], job["name"], job["controller"], job["runBy"]) == (
        "BroadcastJob", "kruise", "cluster", "OpenKruise")
    assert [(r["node"], r["pod"], r["phase"], r["exitCode"]) for r in job["table"]["rows"]] == [
        ("n1", "kruise-a", "Succeeded", 0), ("n2", "kruise-b", "Pending", None)]
    assert job["ineligibleNodes"] == [] and job["canStop"] is False
    assert handed_off.warned[-1] == ("uid-kruise", ["kruise-a", "kruise-b"])


def test_a_tf_job_page_has_one_row_per_replica(handed_off: Cluster, as_user: Any) -> None:
    job = as_user("admin").get(TF_PAGE).json()
    assert job["runBy"] == "training-operator" and job["failedPods"] == ["trainer-worker-1"]
    assert [(r["type"], r["index"], r["phase"], r["exitCode"]) for r in job["table"]["rows"]] == [
        ("worker", 0, "Succeeded", 0), ("worker", 1, "Failed", 2)]
    assert [c["type"] for c in job["conditions"]] == ["Created", "Succeeded"]


def test_the_log_of_a_resources_pod_is_read_from_its_kinds_container(handed_off: Cluster, as_user: Any) -> None:
    client = as_user("viewer")
    assert client.get(f"{TF_PAGE}/logs/trainer-worker-1").json()["text"] == "line 1\npassword ***"
    assert client.get(f"{BCJ_PAGE}/logs/kruise-a").status_code == 200
    assert handed_off.logged == [("trainer-worker-1", "tensorflow"), ("kruise-a", "c")]
    assert client.get(f"{BCJ_PAGE}/logs/trainer-worker-0").status_code == 404


def test_a_job_run_by_the_cluster_is_not_stopped_from_the_page(handed_off: Cluster, as_user: Any) -> None:
    answer = as_user("admin").post(f"{BCJ_PAGE}/stop")
    assert answer.status_code == 409 and "run by the cluster's controller" in answer.json()["detail"]
    assert as_user("viewer").post(f"{BCJ_PAGE}/stop").status_code == 403
    assert handed_off.stopped == []


def test_an_unknown_or_malformed_resource_id_is_404(handed_off: Cluster, as_user: Any) -> None:
    client = as_user("admin")
    assert client.get("/api/jobs/kubernetes_default/ns1/~broadcastjobs.gone").status_code == 404
    assert client.get("/api/jobs/kubernetes_default/ns2/~broadcastjobs.kruise").status_code == 404
    assert client.get("/api/jobs/kubernetes_default/ns1/~pods.kruise").status_code == 404


def test_a_sensors_link_finds_the_resource_by_kind_and_name(handed_off: Cluster, as_user: Any) -> None:
    found = as_user("viewer").get("/api/find", params={"kind": "BroadcastJob", "name": "kruise"}).json()
    assert [(j["record"], j["controller"]) for j in found["jobs"]] == [("~broadcastjobs.kruise", "cluster")]
