"""activeDeadlineSeconds on the real cluster (checklist I1, I2, I3, I5, G6).

Pods run forever, so after they start nothing happens in the cluster: the only thing that
can wake the loop at the deadline is its own timer. The resync is set far beyond the bound
of the wait, so a missing timer makes the drive time out instead of passing by a resync.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from support.waits import wait_until
from tfjob_it_support import (
    KIND,
    condition,
    drive_with_resync,
    event_pairs,
    is_true,
    job_pods,
    job_services,
    replica,
    rfc3339,
    tf_manifest,
)

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("policy", ["All", "None"])
def test_I3_deadline_fires_with_no_events(engine: Any, namespace: str, core_api: client.CoreV1Api,
                                          policy: str) -> None:
    manifest = tf_manifest("slow", {"Chief": replica(1), "Worker": replica(1)},
                           run_policy={"activeDeadlineSeconds": 3, "cleanPodPolicy": policy})
    outcome = drive_with_resync(engine, engine.submit(manifest), resync=3600, timeout=30)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "slow")
    failed = condition(status, "Failed")
    assert failed is not None and failed["status"] == "True" and failed["reason"] == "TFJobFailed"
    assert failed["message"] == "Job slow has failed because it was active longer than specified deadline"
    assert not is_true(status, "Running"), "Running is flipped to False when the job fails (F15)"
    assert rfc3339(status["completionTime"]) - rfc3339(status["startTime"]) >= 3, "I1: not before the deadline"
    assert status["failure"]["reason"] == "DeadlineExceeded"
    assert ("TFJobFailed", failed["message"]) in event_pairs(engine, "slow")
    if policy == "All":  # I5/G6: v1.9.4 cleans up per cleanPodPolicy on a deadline failure
        wait_until(lambda: not job_pods(core_api, namespace, "slow") and not job_services(core_api, namespace, "slow"),
                   timeout=60, what="children deleted")
    else:
        pods = job_pods(core_api, namespace, "slow")
        assert {n: p.status.phase for n, p in pods.items()} == {"slow-chief-0": "Running",
                                                                 "slow-worker-0": "Running"}
        assert sorted(job_services(core_api, namespace, "slow")) == ["slow-chief-0", "slow-worker-0"]


def test_I2_zero_deadline_fails_right_after_start(engine: Any, namespace: str) -> None:
    manifest = tf_manifest("instant", {"Worker": replica(2)}, run_policy={"activeDeadlineSeconds": 0})
    outcome = drive_with_resync(engine, engine.submit(manifest), resync=3600, timeout=30)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "instant")
    assert condition(status, "Failed")["message"] == \
        "Job instant has failed because it was active longer than specified deadline"
    assert status["startTime"] and status["completionTime"]
