"""A12: the record's labels mirror the job's phase and, for a BroadcastJob, done of desired."""

from __future__ import annotations

from airflow_broadcast.cluster.job_records import PHASE_LABEL, PROGRESS_LABEL, status_labels


def test_A12_a_broadcast_job_shows_its_phase_and_finished_pods_of_desired() -> None:
    status = {"phase": "running", "desired": 15, "active": 3, "succeeded": 10, "failed": 2}
    assert status_labels(status) == {PHASE_LABEL: "running", PROGRESS_LABEL: "12-of-15"}


def test_a_tfjob_record_shows_the_type_of_its_newest_true_condition_in_lower_case() -> None:
    conditions = [{"type": "Created", "status": "True"}, {"type": "Running", "status": "False"},
                  {"type": "Succeeded", "status": "True"}]
    assert status_labels({"conditions": conditions}) == {PHASE_LABEL: "succeeded"}
    assert status_labels({"conditions": [*conditions[:1], {"type": "Running", "status": "True"}]}) == {
        PHASE_LABEL: "running"}


def test_A12_a_status_without_a_phase_yet_has_no_phase_label() -> None:
    assert status_labels({}) == {}
    assert status_labels({"conditions": [{"type": "Created", "status": "False"}]}) == {}
    assert status_labels({"phase": "not a label value"}) == {}
