"""WarningLog: the job's warnings in the task log, at most one line per reason per interval, with counts."""

from __future__ import annotations

from airflow.sdk.log import mask_secret
from support.task_log import RecordingLog

from airflow_broadcast.cluster.job_warnings import JobWarning
from airflow_broadcast.triggers.progress import WarningLog


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def scheduling(pod: str) -> JobWarning:
    return JobWarning("FailedScheduling", f"pod {pod}", "0/3 nodes are available: 3 Insufficient cpu.")


def test_the_first_warning_of_a_reason_shows_at_once_with_its_subject_node_and_message() -> None:
    log, clock = RecordingLog(), Clock()
    WarningLog(log, 30, clock).add(JobWarning("OOMKilled", "pod mnist-worker-1", "container tensorflow terminated "
                                              "with exit code 137", node="gpu-3"))
    assert log.lines == ["Warning OOMKilled pod mnist-worker-1 on node gpu-3: container tensorflow terminated "
                         "with exit code 137"]


def test_a_burst_of_one_reason_is_one_line_then_one_line_with_the_count_after_the_interval() -> None:
    log, clock = RecordingLog(), Clock()
    warnings = WarningLog(log, 30, clock)
    for i in range(1000):
        clock.now += 0.01
        warnings.add(scheduling(f"p-{i}"))
    assert log.lines == ["Warning FailedScheduling pod p-0: 0/3 nodes are available: 3 Insufficient cpu."]
    clock.now += 30
    warnings.add(scheduling("p-1000"))
    assert log.lines[1] == ("Warning FailedScheduling pod p-1000: 0/3 nodes are available: 3 Insufficient cpu. "
                            "(and 999 more FailedScheduling warning(s) in the 40 s before, not shown)")
    assert len(log.lines) == 2


def test_reasons_are_throttled_independently() -> None:
    log, clock = RecordingLog(), Clock()
    warnings = WarningLog(log, 30, clock)
    warnings.add(scheduling("a"))
    warnings.add(JobWarning("BackOff", "pod b", "Back-off pulling image"))
    warnings.add(scheduling("c"))
    warnings.add(JobWarning("FailedCreate", "TFJob ns/mnist", "Error creating: quota exceeded"))
    assert [line.split(" ")[1] for line in log.lines] == ["FailedScheduling", "BackOff", "FailedCreate"]


def test_flush_reports_what_was_held_back_and_forgets_it() -> None:
    log, clock = RecordingLog(), Clock()
    warnings = WarningLog(log, 30, clock)
    for pod in "abc":
        warnings.add(scheduling(pod))
    warnings.add(JobWarning("BackOff", "pod b", "Back-off pulling image"))
    warnings.flush()
    assert log.lines[-1] == "2 more FailedScheduling warning(s) not shown (at most one line per reason every 30 s)"
    warnings.flush()
    assert len(log.lines) == 3  # nothing held any more, nothing repeated


def test_a_secret_in_an_event_message_is_masked() -> None:
    mask_secret("ev3nt-s3cret-91c2")
    log = RecordingLog()
    WarningLog(log, 30, Clock()).add(JobWarning("Failed", "pod p", "pull with token ev3nt-s3cret-91c2 refused"))
    assert log.lines == ["Warning Failed pod p: pull with token *** refused"]


def test_after_a_quiet_interval_a_reason_shows_again_without_a_count() -> None:
    log, clock = RecordingLog(), Clock()
    warnings = WarningLog(log, 30, clock)
    warnings.add(scheduling("a"))
    clock.now += 31
    warnings.add(scheduling("b"))
    assert log.lines[1] == "Warning FailedScheduling pod b: 0/3 nodes are available: 3 Insufficient cpu."
