"""cleanPodPolicy after success on the real cluster (checklist G1, G2, G3, G5, G8, F19).

The chief succeeds while a worker keeps running and an evaluator stays Pending (no node matches).
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from support.waits import wait_until
from tfjob_it_support import KIND, event_pairs, is_true, job_pods, job_services, replica, succeed, tf_manifest

pytestmark = pytest.mark.cluster

ALL = {"tidy-chief-0", "tidy-worker-0", "tidy-evaluator-0"}


@pytest.mark.parametrize(("policy", "kept"), [
    ("None", ALL),
    ("Running", {"tidy-chief-0"}),
    ("All", set()),
], ids=["G3-None", "G2-Running", "G1-All"])
def test_G1_G2_G3_clean_pod_policy_after_success(engine: Any, namespace: str, core_api: client.CoreV1Api,
                                                 policy: str, kept: set[str]) -> None:
    manifest = tf_manifest("tidy", {
        "Chief": replica(1, annotations=succeed("1s")),
        "Evaluator": replica(1, nodeSelector={"no-such-node": "anywhere"}),
        "Worker": replica(1),
    }, run_policy={"cleanPodPolicy": policy})
    submission = engine.submit(manifest)
    outcome = engine.drive(submission, KIND, timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "tidy")
    assert is_true(status, "Succeeded")
    wait_until(lambda: set(job_pods(core_api, namespace, "tidy")) == kept
               and set(job_services(core_api, namespace, "tidy")) == kept,
               timeout=60, what=f"only {sorted(kept)} left")
    if "tidy-chief-0" in kept:
        assert job_pods(core_api, namespace, "tidy")["tidy-chief-0"].status.phase == "Succeeded"
    events = event_pairs(engine, "tidy")
    for name in ALL - kept:
        assert ("SuccessfulDeletePod", f"Deleted pod: {name}") in events
        assert ("SuccessfulDeleteService", f"Deleted service: {name}") in events
    for name in kept:
        assert ("SuccessfulDeletePod", f"Deleted pod: {name}") not in events
        assert ("SuccessfulDeleteService", f"Deleted service: {name}") not in events

    again = engine.drive(submission, KIND, single_pass=True)  # G5: a finished job's pass is idempotent
    assert again.reason == "finished"
    assert set(job_pods(core_api, namespace, "tidy")) == kept
    assert set(job_services(core_api, namespace, "tidy")) == kept
    if policy == "None":
        assert job_pods(core_api, namespace, "tidy")["tidy-worker-0"].status.phase == "Running"
        assert job_pods(core_api, namespace, "tidy")["tidy-evaluator-0"].status.phase == "Pending"
        assert engine.status(KIND, "tidy")["replicaStatuses"]["Worker"] == {"succeeded": 1}, \
            "a finished job's active count moves to succeeded (F19)"
