"""What the pages show of a custom resource run by the cluster's controller, from the resource and its pods."""

from __future__ import annotations

from ui_records import NOW, pod, record, resource, stamp

from airflow_broadcast.ui.handoff_view import (
    owned_pods,
    parse_resource_id,
    pod_index,
    resource_detail,
    resource_id,
    resource_summary,
    submitted_by_airflow,
)
from airflow_broadcast.ui.job_view import job_summary


def test_a_resource_id_is_no_kubernetes_name_and_reads_back() -> None:
    assert resource_id("BroadcastJob", "my.job") == "~broadcastjobs.my.job"
    assert parse_resource_id("~broadcastjobs.my.job") == ("BroadcastJob", "my.job")
    assert parse_resource_id(resource_id("TFJob", "tf")) == ("TFJob", "tf")
    assert parse_resource_id("bcj-my-job") is None
    assert parse_resource_id("~configmaps.x") is None
    assert parse_resource_id("~tfjobs") is None and parse_resource_id("~tfjobs.") is None


def test_only_resources_with_the_submitter_annotation_are_airflows() -> None:
    assert submitted_by_airflow(resource("TFJob", "tf", {}))
    assert not submitted_by_airflow(resource("TFJob", "tf", {}, dag=None))


def test_a_resource_line_has_the_shape_of_a_records_line() -> None:
    line = resource_summary(resource("BroadcastJob", "bcj", {"phase": "failed", "desired": 2, "failed": 2}), NOW)
    assert set(line) == set(job_summary(record("BroadcastJob", "bcj", {}), NOW))
    assert (line["record"], line["uid"], line["controller"], line["phase"], line["age"]) == (
        "~broadcastjobs.bcj", "uid-bcj", "cluster", "failed", 60)
    assert line["counts"] == {"desired": 2, "active": 0, "succeeded": 0, "failed": 2}
    assert (line["dagId"], line["taskId"], line["runId"], line["mapIndex"]) == ("etl", "run", "manual__1", -1)
    assert job_summary(record("BroadcastJob", "bcj", {}), NOW)["controller"] == "airflow"


def test_a_resource_not_yet_seen_by_its_controller_is_pending_or_created() -> None:
    assert resource_summary(resource("BroadcastJob", "bcj", {}), NOW)["phase"] == "Pending"
    assert resource_summary(resource("TFJob", "tf", {}), NOW)["phase"] == "Created"


def test_the_ttl_runs_from_the_completion_time_in_each_kinds_policy_section() -> None:
    done = {"completionTime": stamp(NOW - 30)}
    bcj = resource("BroadcastJob", "bcj", done, spec={"completionPolicy": {"ttlSecondsAfterFinished": 60}})
    tf = resource("TFJob", "tf", done, spec={"runPolicy": {"ttlSecondsAfterFinished": 20}})
    assert resource_summary(bcj, NOW)["ttlIn"] == 30
    assert resource_summary(tf, NOW)["ttlIn"] == -10
    running = resource("TFJob", "tf", {}, spec={"runPolicy": {"ttlSecondsAfterFinished": 20}})
    assert resource_summary(running, NOW)["ttlIn"] is None
    assert resource_summary(resource("TFJob", "tf", done), NOW)["ttlIn"] is None


def test_the_deadline_is_read_from_the_resources_spec() -> None:
    started = {"startTime": stamp(NOW - 100)}
    tf = resource("TFJob", "tf", started, spec={"runPolicy": {"activeDeadlineSeconds": 60}})
    assert resource_summary(tf, NOW)["deadlineIn"] == -40


def test_a_kruise_jobs_rows_are_its_pods_per_node() -> None:
    pods = [pod("b-1", "Running", uid="uid-bcj", owner="BroadcastJob", node="n1"),
            pod("b-2", "Pending", uid="uid-bcj", owner="BroadcastJob", pinned="n2"),
            pod("b-3", "Failed", uid="uid-bcj", owner="BroadcastJob", node="n3", exit_code=1, reason="Error")]
    detail = resource_detail(resource("BroadcastJob", "bcj", {"phase": "running"}), pods, NOW)
    assert sorted((r["node"], r["pod"], r["phase"], r["exitCode"], r["reason"]) for r in detail["allRows"]) == [
        ("n1", "b-1", "Running", None, ""), ("n2", "b-2", "Pending", None, ""), ("n3", "b-3", "Failed", 1, "Error")]
    assert (detail["runBy"], detail["failedPods"], detail["ineligibleTotal"]) == ("OpenKruise", ["b-3"], 0)


def test_a_tf_jobs_rows_are_its_replicas_and_no_failing_replica_is_named() -> None:
    labels = {"training.kubeflow.org/replica-type": "ps", "training.kubeflow.org/replica-index": "0"}
    failed = {"conditions": [{"type": "Failed", "status": "True", "lastTransitionTime": stamp(NOW)}]}
    detail = resource_detail(resource("TFJob", "tf", failed), [pod("tf-ps-0", "Failed", labels=labels,
                                                                   exit_code=1)], NOW)
    assert [(r["type"], r["index"], r["phase"]) for r in detail["allRows"]] == [("ps", 0, "Failed")]
    assert (detail["phase"], detail["failure"], detail["runBy"]) == ("Failed", None, "training-operator")


def test_pods_are_found_by_the_controllers_label_and_kept_only_when_it_owns_them() -> None:
    assert pod_index("BroadcastJob", "bcj", "uid-1") == ("broadcastjob-controller-uid", "uid-1")
    assert pod_index("TFJob", "tf", "uid-2") == ("training.kubeflow.org/job-name", "tf")
    mine, older = pod("tf-worker-0", "Running", uid="uid-2"), pod("tf-worker-1", "Running", uid="uid-old")
    assert owned_pods([mine, older], "uid-2") == [mine]
