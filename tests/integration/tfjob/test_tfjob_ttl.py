"""ttlSecondsAfterFinished on the real cluster (checklist H1, H2, H4).

A finished job's record gets `airflow-broadcast.io/expires-at`; the sweeper deletes it once
that time has passed and a task has read the result (`result-read=true`), and the children
go with it through garbage collection (they are owned by the record).
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from support.waits import wait_until
from tfjob_it_support import (
    EXPIRES_AT,
    KIND,
    RESULT_READ,
    event_pairs,
    is_true,
    job_pods,
    job_services,
    replica,
    rfc3339,
    succeed,
    tf_manifest,
)

from airflow_broadcast.cluster.job_records import record_name
from airflow_broadcast.cluster.ttl_sweeper import UNREAD_GRACE_SECONDS, sweep_expired_records
from airflow_broadcast.specs.timestamps import to_rfc3339

pytestmark = pytest.mark.cluster


def finished_job(engine: Any, name: str, run_policy: dict[str, Any]) -> Any:
    manifest = tf_manifest(name, {"Chief": replica(1, annotations=succeed("500ms")), "Worker": replica(1)},
                           run_policy=run_policy)
    submission = engine.submit(manifest)
    outcome = engine.drive(submission, KIND, timeout=60)
    assert outcome.reason == "finished"
    assert is_true(engine.status(KIND, name), "Succeeded")
    return submission


def sweep(engine: Any, now: float) -> list[str]:
    result: list[str] = engine.run_async(lambda kube: sweep_expired_records(kube, engine.namespace, now=now))
    return result


def test_H2_expired_record_is_swept_once_read_and_children_are_collected(
        engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    finished_job(engine, "brief", {"ttlSecondsAfterFinished": 2})
    record = engine.record(KIND, "brief")
    completed = rfc3339(engine.status(KIND, "brief")["completionTime"])
    expires = record.metadata.annotations[EXPIRES_AT]
    assert expires == to_rfc3339(completed + 2)
    assert len(job_pods(core_api, namespace, "brief")) == 2 and len(job_services(core_api, namespace, "brief")) == 2

    assert sweep(engine, rfc3339(expires) + 1) == [], "nobody read the result yet: kept for the grace period"
    core_api.patch_namespaced_config_map(record.metadata.name, namespace,
                                         {"metadata": {"annotations": {RESULT_READ: "true"}}})
    assert sweep(engine, rfc3339(expires) - 1) == [], "not expired yet"
    assert engine.record(KIND, "brief") is not None

    assert sweep(engine, rfc3339(expires) + 1) == [record_name(KIND, "brief")]
    assert engine.record(KIND, "brief") is None
    wait_until(lambda: not job_pods(core_api, namespace, "brief") and not job_services(core_api, namespace, "brief"),
               timeout=90, what="children garbage-collected")


def test_H2_unread_record_is_swept_after_the_grace_period(engine: Any, namespace: str) -> None:
    finished_job(engine, "unread", {"ttlSecondsAfterFinished": 1})
    expires = rfc3339(engine.record(KIND, "unread").metadata.annotations[EXPIRES_AT])
    assert sweep(engine, expires + UNREAD_GRACE_SECONDS - 1) == []
    assert sweep(engine, expires + UNREAD_GRACE_SECONDS + 1) == [record_name(KIND, "unread")]


def test_H4_ttl_zero_expires_at_completion_and_is_swept_once_read(engine: Any, namespace: str,
                                                                  core_api: client.CoreV1Api) -> None:
    submission = finished_job(engine, "zero", {"ttlSecondsAfterFinished": 0})
    record = engine.record(KIND, "zero")
    assert record is not None, "the pass that finishes the job writes the terminal status first"
    completed = engine.status(KIND, "zero")["completionTime"]
    assert record.metadata.annotations[EXPIRES_AT] == completed

    # A loop that (re)starts on the finished job leaves the deletion to the task that reads the
    # result, or to the sweeper once it was read.
    assert engine.drive(submission, KIND, single_pass=True).reason == "finished"
    assert engine.record(KIND, "zero") is not None
    core_api.patch_namespaced_config_map(record.metadata.name, namespace,
                                         {"metadata": {"annotations": {RESULT_READ: "true"}}})
    assert sweep(engine, rfc3339(completed) + 1) == [record_name(KIND, "zero")]
    assert engine.record(KIND, "zero") is None
    wait_until(lambda: not job_pods(core_api, namespace, "zero") and not job_services(core_api, namespace, "zero"),
               timeout=90, what="children garbage-collected")


def test_H2_no_deleted_job_event_while_the_job_still_exists(engine: Any, namespace: str) -> None:
    submission = finished_job(engine, "stale", {"ttlSecondsAfterFinished": 0})
    assert engine.drive(submission, KIND, single_pass=True).reason == "finished"

    assert engine.record(KIND, "stale") is not None
    assert ("SuccessfulDeleteJob", "Deleted job: stale") not in event_pairs(engine, "stale")


def test_H2_sweeping_an_expired_job_records_the_deleted_job_event(engine: Any, namespace: str,
                                                                 core_api: client.CoreV1Api) -> None:
    finished_job(engine, "swept", {"ttlSecondsAfterFinished": 1})
    record = engine.record(KIND, "swept")
    core_api.patch_namespaced_config_map(record.metadata.name, namespace,
                                         {"metadata": {"annotations": {RESULT_READ: "true"}}})
    expires = rfc3339(record.metadata.annotations[EXPIRES_AT])
    assert sweep(engine, expires + 1) == [record_name(KIND, "swept")]

    events = wait_until(lambda: event_pairs(engine, "swept"), timeout=10, what="the job's events")
    assert ("SuccessfulDeleteJob", "Deleted job: swept") in events


def test_H1_no_ttl_never_expires(engine: Any, namespace: str) -> None:
    submission = finished_job(engine, "keep", {})
    assert EXPIRES_AT not in (engine.record(KIND, "keep").metadata.annotations or {})
    assert engine.drive(submission, KIND, single_pass=True).reason == "finished"
    assert sweep(engine, 4_000_000_000) == []
    assert engine.record(KIND, "keep") is not None
