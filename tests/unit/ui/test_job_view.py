"""The rows and numbers the pages show, from a record and its live pods."""

from __future__ import annotations

from ui_records import NOW, pod, record, stamp

from airflow_broadcast.ui.job_view import (
    NODE_COLUMNS,
    REPLICA_COLUMNS,
    Submitter,
    job_detail,
    job_summary,
    matches,
    page_of,
    submitter_of,
)

BCJ_STATUS = {"phase": "running", "desired": 3, "active": 2, "succeeded": 1, "failed": 0,
              "startTime": stamp(NOW - 60),
              "nodes": {"n1": {"pod": "p1", "phase": "Succeeded", "exitCode": 0, "restarts": 0},
                        "n2": {"pod": "p2", "phase": "Running", "restarts": 0},
                        "n3": {"pod": "p3", "phase": "Pending"}},
              "ineligibleNodes": {"n9": "node is unschedulable"}}


def test_the_submitter_is_read_from_the_record_annotation() -> None:
    assert submitter_of("etl/load/manual__2026-01-01T00:00:00+00:00/-1") == Submitter(
        "etl", "load", "manual__2026-01-01T00:00:00+00:00", -1)
    assert submitter_of("etl/load/scheduled/with/slashes/3") == Submitter("etl", "load", "scheduled/with/slashes", 3)
    assert submitter_of("") is None
    assert submitter_of("etl/load/run/not-an-index") is None


def test_a_broadcast_job_line_has_counts_age_deadline_ttl_and_its_task() -> None:
    manifest = {"metadata": {"name": "bcj"}, "spec": {"completionPolicy": {"activeDeadlineSeconds": 600}}}
    raw = record("BroadcastJob", "bcj", BCJ_STATUS, manifest=manifest,
                 annotations={"airflow-broadcast.io/expires-at": stamp(NOW + 300)})
    line = job_summary(raw, NOW)
    assert (line["kind"], line["namespace"], line["name"], line["record"]) == ("BroadcastJob", "ns1", "bcj", "bcj-bcj")
    assert line["phase"] == "running"
    assert line["counts"] == {"desired": 3, "active": 2, "succeeded": 1, "failed": 0}
    assert line["age"] == 90
    assert line["deadlineIn"] == 540
    assert line["ttlIn"] == 300
    assert (line["dagId"], line["taskId"], line["runId"], line["mapIndex"]) == ("etl", "run", "manual__1", -1)


def test_a_tf_job_line_counts_per_replica_type_and_reads_its_phase_from_conditions() -> None:
    status = {"conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}],
              "replicaStatuses": {"Worker": {"active": 2}, "Chief": {"active": 1, "succeeded": 0}}}
    line = job_summary(record("TFJob", "tf", status), NOW)
    assert line["phase"] == "Running"
    assert line["counts"] == {"Chief": {"active": 1, "succeeded": 0, "failed": 0},
                              "Worker": {"active": 2, "succeeded": 0, "failed": 0}}
    assert line["deadlineIn"] is None and line["ttlIn"] is None


def test_a_job_stopped_from_the_page_reads_stopped_until_it_finishes() -> None:
    manifest = {"metadata": {"name": "bcj", "annotations": {"airflow-broadcast.io/stopped-by": "admin at now"}}}
    assert job_summary(record("BroadcastJob", "bcj", BCJ_STATUS, manifest=manifest), NOW)["phase"] == "Stopped"
    done = {**BCJ_STATUS, "phase": "completed"}
    assert job_summary(record("BroadcastJob", "bcj", done, manifest=manifest), NOW)["phase"] == "completed"


def test_filters_match_phase_kind_namespace_and_dag() -> None:
    line = job_summary(record("BroadcastJob", "bcj", BCJ_STATUS, dag="nightly"), NOW)
    assert matches(line, {"phase": "Running", "kind": "BroadcastJob", "namespace": "ns1", "dag": "nightly"})
    assert matches(line, {"phase": None, "kind": ""})
    assert not matches(line, {"dag": "etl"})
    assert not matches(line, {"kind": "TFJob"})


def test_node_rows_take_the_live_pod_over_the_recorded_result() -> None:
    pods = [pod("p2", "Failed", node="n2", exit_code=3, reason="Error", restarts=1),
            pod("p3", "Running", node="n3"), pod("p1", "Running", node="n1")]
    detail = job_detail(record("BroadcastJob", "bcj", BCJ_STATUS), pods, NOW)
    rows = {row["node"]: row for row in detail["allRows"]}
    assert rows["n2"] == {"node": "n2", "pod": "p2", "phase": "Failed", "exitCode": 3, "reason": "Error",
                          "message": "", "restarts": 1}
    assert rows["n3"]["phase"] == "Running"
    assert rows["n1"]["phase"] == "Succeeded", "a recorded final result is not undone by a stale cache"
    assert detail["ineligibleNodes"] == [{"node": "n9", "reason": "node is unschedulable"}]
    assert detail["ineligibleTotal"] == 1
    assert detail["failedPods"] == ["p2"]
    assert detail["columns"] == list(NODE_COLUMNS)


def test_a_large_job_shows_its_whole_node_table_not_the_records_capped_view() -> None:
    status = {"nodes": {"n1": {"pod": "p1", "phase": "Failed"}}, "nodesTotal": 3,
              "ineligibleNodes": {"n9": "node is unschedulable"}, "ineligibleNodesTotal": 40}
    table = {f"n{i}": {"pod": f"p{i}", "phase": "Failed" if i == 1 else "Succeeded"} for i in (1, 2, 3)}
    detail = job_detail(record("BroadcastJob", "bcj", status), [], NOW, table)
    assert sorted((r["node"], r["phase"]) for r in detail["allRows"]) == [
        ("n1", "Failed"), ("n2", "Succeeded"), ("n3", "Succeeded")]
    assert detail["ineligibleTotal"] == 40


def test_a_pod_not_yet_in_the_status_gets_its_own_row() -> None:
    detail = job_detail(record("BroadcastJob", "bcj", {"nodes": {}}), [pod("p7", "Pending", node="n7")], NOW)
    assert [(r["node"], r["pod"], r["phase"]) for r in detail["allRows"]] == [("n7", "p7", "Pending")]


def test_replica_rows_come_from_the_pods_with_the_failure_cause() -> None:
    labels = {"training.kubeflow.org/replica-type": "worker"}
    pods = [pod("tf-worker-1", "Failed", labels={**labels, "training.kubeflow.org/replica-index": "1"},
                exit_code=137, reason="OOMKilled"),
            pod("tf-worker-0", "Running", labels={**labels, "training.kubeflow.org/replica-index": "0"}, restarts=2)]
    cause = {"replicaType": "Worker", "index": 1, "pod": "tf-worker-1", "exitCode": 137, "reason": "OOMKilled",
             "message": ""}
    detail = job_detail(record("TFJob", "tf", {"failure": cause}), pods, NOW)
    assert detail["failure"] == cause
    assert detail["columns"] == list(REPLICA_COLUMNS)
    table = page_of(detail["allRows"], sort="type", descending=False, page=0, size=10, columns=REPLICA_COLUMNS)
    assert [(r["type"], r["index"], r["phase"], r["exitCode"], r["restarts"]) for r in table["rows"]] == [
        ("worker", 0, "Running", None, 2), ("worker", 1, "Failed", 137, 0)]


def test_a_thousand_nodes_are_paged_and_sorted() -> None:
    rows = [{"node": f"node-{i:04d}", "pod": f"p{i}", "phase": "Failed" if i % 10 == 0 else "Succeeded",
             "exitCode": i % 7, "restarts": i % 3} for i in range(1000)]
    first = page_of(rows, sort="node", descending=False, page=0, size=100, columns=NODE_COLUMNS)
    assert (first["total"], first["pages"], len(first["rows"])) == (1000, 10, 100)
    assert first["rows"][0]["node"] == "node-0000" and first["rows"][-1]["node"] == "node-0099"
    last = page_of(rows, sort="node", descending=True, page=99, size=100, columns=NODE_COLUMNS)
    assert last["page"] == 9 and last["rows"][-1]["node"] == "node-0000"
    failed_first = page_of(rows, sort="phase", descending=False, page=0, size=100, columns=NODE_COLUMNS)
    assert {r["phase"] for r in failed_first["rows"]} == {"Failed"}
    assert page_of(rows, sort="bogus", descending=False, page=0, size=5000, columns=NODE_COLUMNS)["size"] == 1000


def test_the_ineligible_nodes_listed_are_capped_but_counted() -> None:
    status = {"ineligibleNodes": {f"n{i:05d}": "tainted" for i in range(15_000)}}
    detail = job_detail(record("BroadcastJob", "bcj", status), [], NOW)
    assert detail["ineligibleTotal"] == 15_000
    assert len(detail["ineligibleNodes"]) == 200 and detail["ineligibleNodes"][0]["node"] == "n00000"
