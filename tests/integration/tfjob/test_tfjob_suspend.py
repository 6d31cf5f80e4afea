"""Suspend and resume on the real cluster while a reconcile loop runs (checklist K1-K5, I4, F22, G7).

The user edits `spec.runPolicy.suspend` in the stored manifest, as `kubectl edit` would on a TFJob.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client
from support.waits import wait_until
from tfjob_it_support import (
    KIND,
    Background,
    condition,
    condition_summary,
    event_pairs,
    is_true,
    job_pods,
    job_services,
    pod_events,
    record_statuses,
    replica,
    rfc3339,
    tf_manifest,
)

pytestmark = pytest.mark.cluster


def test_K1_created_suspended_creates_nothing(engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    manifest = tf_manifest("held", {"Worker": replica(2)}, run_policy={"suspend": True})
    outcome = engine.drive(engine.submit(manifest), KIND, single_pass=True)

    assert outcome.reason == "pending"
    status = engine.status(KIND, "held")
    assert job_pods(core_api, namespace, "held") == {} and job_services(core_api, namespace, "held") == {}
    assert status.get("startTime") is None
    assert condition_summary(status) == [("Created", "True", "TFJobCreated"),
                                         ("Suspended", "True", "TFJobSuspended")]
    assert condition(status, "Suspended")["message"] == "TFJob held is suspended."
    assert condition(status, "Created")["message"] == "TFJob held is created."


def test_K2_K3_K4_K5_I4_N11_suspend_then_resume(engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    name = "pausable"
    manifest = tf_manifest(name, {"Chief": replica(1), "Worker": replica(2)},
                           run_policy={"activeDeadlineSeconds": 6, "cleanPodPolicy": "None"})
    submission = engine.submit(manifest)
    with record_statuses(core_api, namespace, name) as statuses, pod_events(core_api, namespace, name) as pods:
        loop = Background(lambda: engine.drive(submission, KIND, timeout=150))

        def running() -> dict[str, Any] | None:
            status = engine.status(KIND, name)
            active = (status.get("replicaStatuses") or {}).get("Worker", {}).get("active")
            return status if is_true(status, "Running") and active == 2 else None

        first = wait_until(running, timeout=60, what="job running")
        first_start = rfc3339(first["startTime"])
        first_uids = {uid for _, (_, uid, _) in pods.events}
        assert len(first_uids) == 3
        wait_until(lambda: time.time() >= first_start + 1.5, timeout=10, what="a second past the start")

        engine.edit_manifest(KIND, name, lambda m: m["spec"]["runPolicy"].update(suspend=True))
        suspended = wait_until(lambda: (s := engine.status(KIND, name)) and is_true(s, "Suspended") and s,
                               timeout=60, what="job suspended")
        wait_until(lambda: not job_pods(core_api, namespace, name) and not job_services(core_api, namespace, name),
                   timeout=60, what="all children deleted (G7: regardless of cleanPodPolicy None)")
        # K5: stay suspended past the original deadline; a suspended job is not failed by it.
        wait_until(lambda: time.time() >= first_start + 7.5, timeout=30, what="past the first deadline")
        held = engine.status(KIND, name)

        resumed_at = time.time()
        engine.edit_manifest(KIND, name, lambda m: m["spec"]["runPolicy"].update(suspend=False))
        outcome = loop.result(150)  # the pods run forever: the deadline, counted from the resume, ends it

    # K2: suspended while running
    assert suspended["startTime"] == first["startTime"], "startTime kept while suspended"
    assert condition_summary(suspended) == [("Created", "True", "TFJobCreated"),
                                            ("Running", "False", "TFJobSuspended"),
                                            ("Suspended", "True", "TFJobSuspended")]
    assert condition(suspended, "Suspended")["message"] == f"TFJob {name} is suspended."
    assert condition(suspended, "Running")["message"] == f"TFJob {name} is suspended."
    assert all(not entry.get("active") for entry in suspended["replicaStatuses"].values())
    assert not is_true(held, "Failed") and is_true(held, "Suspended"), "K5: no deadline while suspended"

    # K3/K4/I4: resumed, children re-created, startTime reset, and the deadline counts from the resume
    assert outcome.reason == "finished"
    final = engine.status(KIND, name)
    suspended_condition = condition(final, "Suspended")
    assert (suspended_condition["status"], suspended_condition["reason"], suspended_condition["message"]) == \
        ("False", "TFJobResumed", f"TFJob {name} is resumed.")
    restarted = rfc3339(final["startTime"])
    assert restarted >= int(resumed_at) and restarted > first_start, "startTime reset on resume"
    assert condition(final, "Failed")["message"] == \
        f"Job {name} has failed because it was active longer than specified deadline"
    assert rfc3339(final["completionTime"]) - restarted >= 6, "I4: the deadline counts from the resume"
    seen = [condition_summary(s) for _, s in statuses.events]
    assert [("Created", "True", "TFJobCreated"), ("Suspended", "False", "TFJobResumed"),
            ("Running", "True", "TFJobRunning")] in seen, "F22: [Created, Suspended(False), Running]"
    assert condition_summary(final) == [("Created", "True", "TFJobCreated"), ("Suspended", "False", "TFJobResumed"),
                                        ("Running", "False", "TFJobRunning"), ("Failed", "True", "TFJobFailed")]
    second_uids = {uid for _, (_, uid, _) in pods.events} - first_uids
    assert len(second_uids) == 3, "every replica was re-created after the resume"
    events = event_pairs(engine, name)
    assert ("TFJobSuspended", f"TFJob {name} is suspended.") in events
    assert ("TFJobResumed", f"TFJob {name} is resumed.") in events


def test_K6_a_job_managed_by_multikueue_is_never_touched(engine: Any, namespace: str,
                                                        core_api: client.CoreV1Api) -> None:
    manifest = tf_manifest("remote", {"Worker": replica(2)},
                           run_policy={"managedBy": "kueue.x-k8s.io/multikueue", "suspend": True})
    submission = engine.submit(manifest)
    assert engine.drive(submission, KIND, single_pass=True).reason == "pending"
    engine.edit_manifest(KIND, "remote", lambda m: m["spec"]["runPolicy"].update(suspend=False))
    assert engine.drive(submission, KIND, single_pass=True).reason == "pending"

    assert engine.status(KIND, "remote") == {}
    assert job_pods(core_api, namespace, "remote") == {} and job_services(core_api, namespace, "remote") == {}
