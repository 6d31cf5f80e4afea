"""TFJobKind: the one place the loop, the operator and the sensor read a TFJob's record from."""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.tf_builders import NOW, make_pod, make_record, make_spec, manifest

from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.reconcilers.tf_job import status as st
from airflow_broadcast.reconcilers.tf_job.kind import TFJobKind, TFObserved
from airflow_broadcast.specs.field_errors import InvalidSpecError
from airflow_broadcast.specs.timestamps import to_rfc3339

KIND = TFJobKind()


def test_parse_stores_the_manifest_as_written_in_the_resolved_namespace() -> None:
    written = {**manifest(namespace=None), "status": {"conditions": []}}
    job = KIND.parse(written, namespace=None, default_namespace="ml")
    assert (job.name, job.namespace, job.warnings) == ("mnist", "ml", ())
    assert job.manifest["metadata"] == {"name": "mnist", "namespace": "ml"}
    assert "status" not in job.manifest and "runPolicy" not in job.manifest["spec"], "no defaults stored"
    assert "namespace" not in written["metadata"], "the caller's manifest is untouched"


def test_reconcile_parses_the_stored_manifest_and_its_finish_check_is_the_reconcilers() -> None:
    stored = manifest(replicas={"Worker": 1})
    record = replace(make_record(make_spec(replicas={"Worker": 1})), manifest=stored)
    plan = KIND.reconcile(record, TFObserved([make_pod("mnist", "Worker", 0, "Succeeded", exit_code=0)], []), NOW)
    assert plan.status is not None and st.is_true(plan.status, st.SUCCEEDED)
    assert KIND.is_finished(plan.status) and plan.finished
    assert not KIND.is_finished({"conditions": [{"type": "Running", "status": "True"}]})


def test_an_update_that_breaks_a_rule_is_refused_with_the_field_path() -> None:
    old = manifest(run_policy={"managedBy": "kubeflow.org/training-operator"})
    with pytest.raises(InvalidSpecError, match=r"spec\.runPolicy\.managedBy: Invalid value.*field is immutable"):
        KIND.validate_update("mnist", manifest(run_policy={"managedBy": "other.io/controller"}), old, namespace="ml")
    KIND.validate_update("mnist", manifest(replicas={"Worker": 3}), old=manifest(), namespace="ml")


def test_the_active_deadline_runs_from_start_time_unless_the_job_is_suspended() -> None:
    started = {"startTime": to_rfc3339(NOW - 100)}
    spec = make_spec()

    def record(run_policy: dict[str, object], status: dict[str, object]) -> JobRecord:
        return replace(make_record(spec, dict(status)), manifest=manifest(run_policy=run_policy))

    assert KIND.active_deadline(record({"activeDeadlineSeconds": 600}, started), NOW) == NOW + 500
    assert KIND.active_deadline(record({"activeDeadlineSeconds": 600}, {}), NOW) == NOW + 600
    assert KIND.active_deadline(record({"activeDeadlineSeconds": 600, "suspend": True}, started), NOW) is None
    assert KIND.active_deadline(record({}, started), NOW) is None
    assert not KIND.settled(record({}, started))
