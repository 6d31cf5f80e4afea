"""A TFJob's task log on the real cluster: scheduling warnings, the start-up timeout, and get_logs against kwok."""

from __future__ import annotations

from typing import Any

import pytest
from support.task_log import RecordingLog, drive_as_a_task
from tfjob_it_support import KIND, SIM, replica, tf_manifest

from airflow_broadcast.cluster.log_follow import LOGGED_UNTIL
from airflow_broadcast.cluster.reconcile_loop import LoopReason

pytestmark = pytest.mark.cluster


def test_an_unschedulable_chief_shows_failed_scheduling_and_ends_at_the_start_up_timeout(
        engine: Any, namespace: str) -> None:
    nowhere = {"nodeSelector": {"pool": f"{namespace}-no-such-node"}}
    submission = engine.submit(tf_manifest("stuck", {"Chief": replica(1, **nowhere), "Worker": replica(1)}))
    log = RecordingLog()

    outcome = drive_as_a_task(engine, submission, KIND, log, startup_timeout_seconds=5)

    assert outcome.reason is LoopReason.STARTUP_TIMEOUT, outcome.message
    assert outcome.message.startswith("pod stuck-chief-0 (not scheduled to a node) has been starting for ")
    assert "longer than startup_timeout_seconds=5: Unschedulable: 0/" in outcome.message
    scheduling = log.having("Warning FailedScheduling pod stuck-chief-0: 0/")
    assert scheduling and "didn't match Pod's node affinity/selector" in scheduling[0]
    assert log.having(f"Warning Unschedulable TFJob {namespace}/stuck: Error pod stuck-chief-0 condition message: 0/")


def test_get_logs_follows_the_chief_and_says_once_that_kwok_serves_no_log(
        engine: Any, namespace: str, node_factory: Any) -> None:
    """kwok simulates pods, not containers: the API server answers 404 for every pod log of this cluster."""
    node_factory(1, labels={"pool": namespace})
    done = {"annotations": {f"{SIM}/result": "Succeeded", f"{SIM}/after": "4s"}}
    submission = engine.submit(tf_manifest("logged", {"Chief": replica(1, nodeSelector={"pool": namespace}, **done),
                                                      "Worker": replica(1, nodeSelector={"pool": namespace})}))
    log = RecordingLog()

    outcome = drive_as_a_task(engine, submission, KIND, log, get_logs=True)

    assert outcome.reason is LoopReason.FINISHED, outcome.message
    unavailable = log.having("log not available")
    assert len(unavailable) == 1, log.lines
    assert unavailable[0].startswith("INFO [logged-chief-0] log not available (Kubernetes API 404 NotFound on GET "
                                     f"/api/v1/namespaces/{namespace}/pods/logged-chief-0/log")
    assert not log.having("[logged-worker-0]")  # only the chief is followed
    record = engine.record(KIND, "logged")
    assert LOGGED_UNTIL not in (record.metadata.annotations or {})  # no line was shown, no position stamped
