"""BroadcastJobKind: the one place the loop, the operator and the sensor read a BroadcastJob's record from."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from support.bcj_builders import NOW, make_nodes, make_pod, make_record, make_spec, manifest, started_status

from airflow_broadcast.reconcilers.broadcast_job.job_status import job_finished
from airflow_broadcast.reconcilers.broadcast_job.kind import BroadcastJobKind, BroadcastObserved
from airflow_broadcast.reconcilers.broadcast_job.reconciler import BroadcastOptions
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.specs.broadcast_job import to_manifest

KIND = BroadcastJobKind()


def _record(status: dict[str, Any], **manifest_fields: Any) -> JobRecord:
    spec = make_spec(**manifest_fields)
    return replace(make_record(status), name="bcj-bcj", job_name="bcj", manifest=to_manifest(spec))


def test_reconcile_parses_the_stored_manifest_and_its_finish_check_is_the_reconcilers() -> None:
    record = _record(started_status(desired=1, active=1))
    plan = KIND.reconcile(record, BroadcastObserved(make_nodes(1), [make_pod("node-00", "Succeeded")]), NOW)
    assert plan.finished and plan.status is not None
    assert KIND.is_finished(plan.status) and job_finished(plan.status) == "Complete"
    assert not KIND.is_finished(record.status)


def test_parse_stores_the_defaulted_manifest_and_returns_upstreams_warnings() -> None:
    job = KIND.parse(manifest(restart_limit=3, namespace="ignored"), namespace="ops", default_namespace="default")
    assert (job.name, job.namespace) == ("bcj", "ops")
    assert job.manifest == to_manifest(make_spec(restart_limit=3, namespace="ops"))
    assert job.manifest["spec"]["completionPolicy"] == {"type": "Always"}
    assert len(job.warnings) == 1 and "restartLimit: 3 has no effect" in job.warnings[0]


def test_a_never_job_settles_once_every_desired_node_is_done() -> None:
    nodes = {"a": {"phase": "Succeeded"}, "b": {"phase": "Failed"}}
    done = started_status(desired=2, succeeded=1, failed=1, nodes=nodes)
    assert KIND.settled(_record(done, completion="Never"))
    assert not KIND.settled(_record({**done, "active": 1}, completion="Never"))
    assert not KIND.settled(_record({**done, "nodes": {"a": nodes["a"]}}, completion="Never"))
    assert not KIND.settled(_record(done))  # an Always job finishes instead


def test_the_active_deadline_runs_from_start_time_and_not_for_paused_jobs() -> None:
    started = started_status(start=NOW - 100)
    assert KIND.active_deadline(_record(started, ads=600), NOW) == NOW + 500
    assert KIND.active_deadline(_record({}, ads=600), NOW) == NOW + 600
    assert KIND.active_deadline(_record(started, ads=600, paused=True), NOW) is None
    assert KIND.active_deadline(_record(started), NOW) is None


def test_summary_failure_and_progress_name_the_failed_nodes() -> None:
    nodes = {f"node-{i:02d}": {"pod": f"bcj-{i:02d}", "phase": "Failed", "exitCode": 2, "reason": "Error"}
             for i in range(22)}
    nodes["node-99"] = {"pod": "bcj-99", "phase": "Succeeded", "exitCode": 0}
    status = started_status(phase="failed", desired=23, succeeded=1, failed=22, nodes=nodes,
                            conditions=[{"type": "Failed", "status": "True", "message": "failed pod is found"}])
    summary = KIND.summary(_record(status))
    assert (summary["kind"], summary["name"], summary["record"], summary["uid"]) == (
        "BroadcastJob", "bcj", "bcj-bcj", "record-uid-1")
    failure = KIND.failure(summary)
    assert failure is not None
    assert failure.startswith("BroadcastJob ops/bcj failed: failed pod is found "
                              "(1 succeeded, 22 failed of 23 desired).")
    assert "node-00 (pod bcj-00, exit code 2, Error)" in failure and failure.endswith(" and 2 more.")
    assert KIND.failed_children(summary)[:2] == ["bcj-00", "bcj-01"] and len(KIND.failed_children(summary)) == 22
    assert KIND.failed_units(summary)["node-05"] == "pod bcj-05 exit code 2 Error"
    assert KIND.progress_line(summary) == ("BroadcastJob ops/bcj: 23/23 done (1 succeeded, 22 failed, 0 active), "
                                           "phase failed")
    assert KIND.failure(KIND.summary(_record(started_status()))) is None
    assert KIND.failed_in_other_containers(summary) == {}


def test_a_pod_that_failed_in_an_init_container_is_tailed_in_that_container() -> None:
    nodes = {"node-00": {"pod": "bcj-00", "phase": "Failed", "exitCode": 3, "reason": "Init:Error",
                         "container": "check"},
             "node-01": {"pod": "bcj-01", "phase": "Failed", "exitCode": 1, "reason": "Error"}}
    status = started_status(phase="failed", desired=2, failed=2, nodes=nodes)
    assert KIND.failed_in_other_containers(KIND.summary(_record(status))) == {"bcj-00": "check"}


def test_the_log_container_is_the_templates_first() -> None:
    assert KIND.log_container(to_manifest(make_spec())) == "main"
    assert BroadcastJobKind(BroadcastOptions(kruise_compat=True)).log_container({}) is None
