"""Restart policies and backoffLimit on the real cluster (checklist E7, E8, E10, J1-J3, J5, J6).

kwok scripts the outcomes: `fail-until` makes the first generation of pods fail and the
re-created ones succeed; `restarts` bumps container restartCount (an OnFailure restart in place).
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from support.sim_time import fail_until
from support.waits import wait_until
from tfjob_it_support import (
    KIND,
    SIM,
    condition,
    event_pairs,
    fail,
    is_true,
    job_pods,
    job_services,
    pod_events,
    record_statuses,
    replica,
    succeed,
    tf_manifest,
)

pytestmark = pytest.mark.cluster


def uids_by_pod(recorder: Any) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    for _, (name, uid, _phase) in recorder.events:
        seen.setdefault(name, set()).add(uid)
    return seen


def test_E7_exitcode_137_restarts_then_succeeds(engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    annotations = succeed("5s", exit_code="137", reason="OOMKilled", fail_until=fail_until(4))
    manifest = tf_manifest("oom", {"Worker": replica(2, "ExitCode", annotations=annotations)})
    with record_statuses(core_api, namespace, "oom") as statuses, pod_events(core_api, namespace, "oom") as pods:
        outcome = engine.drive(engine.submit(manifest), KIND, timeout=90)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "oom")
    assert is_true(status, "Succeeded") and not is_true(status, "Failed")
    restarting = [s for _, s in statuses.events if is_true(s, "Restarting")]
    assert restarting, "the job went through Restarting"
    first = condition(restarting[0], "Restarting")
    assert (first["reason"], first["message"]) == ("TFJobRestarting",
                                                   "job oom is restarting because Worker replica(s) failed.")
    assert {n: len(u) for n, u in uids_by_pod(pods).items()} == {"oom-worker-0": 2, "oom-worker-1": 2}, \
        "each failed pod was deleted and re-created once"
    assert status["controllerRestarts"] == {"Worker": 2}
    assert status["replicaStatuses"]["Worker"] == {"succeeded": 2}
    events = event_pairs(engine, "oom")
    assert ("ExitedWithCode", f"Pod: {namespace}.oom-worker-0 exited with code 137") in events
    assert ("TFJobRestarting", "job oom is restarting because Worker replica(s) failed.") in events
    assert ("SuccessfulDeletePod", "Deleted pod: oom-worker-1") in events
    final = job_pods(core_api, namespace, "oom")
    assert {n: p.status.phase for n, p in final.items()} == {"oom-worker-0": "Succeeded", "oom-worker-1": "Succeeded"}


@pytest.mark.parametrize("code", [1, 127])
def test_E8_exitcode_1_to_127_fails_the_job(engine: Any, namespace: str, core_api: client.CoreV1Api,
                                            code: int) -> None:
    manifest = tf_manifest("perm", {"Chief": replica(1, "ExitCode", annotations=fail(code)),
                                    "Worker": replica(1, "ExitCode")})
    with pod_events(core_api, namespace, "perm") as pods:
        outcome = engine.drive(engine.submit(manifest), KIND, timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "perm")
    failed = condition(status, "Failed")
    assert failed is not None and failed["status"] == "True" and failed["reason"] == "TFJobFailed"
    assert failed["message"] == 'job "perm" is failing because "Chief" replica(s) failed.'
    assert status["completionTime"]
    assert status["failure"]["replicaType"] == "Chief" and status["failure"]["index"] == 0
    assert status["failure"]["pod"] == "perm-chief-0" and status["failure"]["exitCode"] == code
    assert len(uids_by_pod(pods)["perm-chief-0"]) == 1, "a permanent exit code is not restarted"
    assert ("ExitedWithCode", f"Pod: {namespace}.perm-chief-0 exited with code {code}") in event_pairs(engine, "perm")


def test_E10_never_policy_failure_is_not_restarted(engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    manifest = tf_manifest("never", {"Worker": replica(2, "Never", annotations=fail(137, reason="OOMKilled"))})
    with pod_events(core_api, namespace, "never") as pods:
        outcome = engine.drive(engine.submit(manifest), KIND, timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "never")
    message = condition(status, "Failed")["message"]
    assert message.startswith(f"TFJob {namespace}/never has failed because ")
    assert message.endswith(" Worker replica(s) failed.")
    assert condition(status, "Restarting") is None
    assert status["failure"]["exitCode"] == 137 and status["failure"]["reason"] == "OOMKilled"
    assert {n: len(u) for n, u in uids_by_pod(pods).items()} == {"never-worker-0": 1, "never-worker-1": 1}


@pytest.mark.parametrize(("limit", "restarts"), [(2, "2"), (0, "1")], ids=["J1-sum-reaches-limit", "J2-limit-0"])
def test_J1_J2_onfailure_restarts_count_toward_backoff_limit(engine: Any, namespace: str,
                                                             core_api: client.CoreV1Api, limit: int,
                                                             restarts: str) -> None:
    annotations = succeed("1s", restarts=restarts)
    manifest = tf_manifest("flaky", {"Worker": replica(2, "OnFailure", annotations=annotations)},
                           run_policy={"backoffLimit": limit})
    outcome = engine.drive(engine.submit(manifest), KIND, timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "flaky")
    failed = condition(status, "Failed")
    assert failed is not None and failed["status"] == "True"
    assert failed["message"] == "Job flaky has failed because it has reached the specified backoff limit"
    assert status["failure"]["reason"] == "BackoffLimitExceeded"
    assert status["failure"]["pod"] in ("flaky-worker-0", "flaky-worker-1")
    assert not is_true(status, "Succeeded")


def test_J5_restarts_below_the_limit_do_not_fail_the_job(engine: Any, namespace: str) -> None:
    manifest = tf_manifest("patient", {"Worker": replica(1, "OnFailure", annotations=succeed("1s", restarts="2"))},
                           run_policy={"backoffLimit": 3})
    outcome = engine.drive(engine.submit(manifest), KIND, timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "patient")
    assert is_true(status, "Succeeded") and condition(status, "Failed") is None


def test_J3_never_replicas_are_not_counted(engine: Any, namespace: str) -> None:
    manifest = tf_manifest("nevercount", {
        "Chief": replica(1, "Never", annotations=succeed("3s")),
        "PS": replica(1, "Never", annotations={f"{SIM}/restarts": "2", f"{SIM}/after": "500ms"}),
    }, run_policy={"backoffLimit": 1})
    outcome = engine.drive(engine.submit(manifest), KIND, timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "nevercount")
    assert is_true(status, "Succeeded") and condition(status, "Failed") is None


def test_J6_exitcode_restarts_count_toward_backoff_limit(engine: Any, namespace: str,
                                                         core_api: client.CoreV1Api) -> None:
    manifest = tf_manifest("crashloop", {"Worker": replica(1, "ExitCode", annotations=fail(137, after="500ms"))},
                           run_policy={"backoffLimit": 2})
    with pod_events(core_api, namespace, "crashloop") as pods:
        outcome = engine.drive(engine.submit(manifest), KIND, timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "crashloop")
    assert condition(status, "Failed")["message"] == \
        "Job crashloop has failed because it has reached the specified backoff limit"
    assert status["controllerRestarts"] == {"Worker": 2}
    assert len(uids_by_pod(pods)["crashloop-worker-0"]) == 2, "failed after the second restart"


def test_J7_restart_sum_over_running_workers_fails_and_all_policy_cleans_up(
        engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    once = {f"{SIM}/restarts": "1", f"{SIM}/after": "500ms"}  # one restart, then running forever
    manifest = tf_manifest("j7", {"PS": replica(2, "Never"), "Worker": replica(4, "OnFailure", annotations=once)},
                           run_policy={"backoffLimit": 4, "cleanPodPolicy": "All"})
    outcome = engine.drive(engine.submit(manifest), KIND, timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "j7")
    assert condition(status, "Failed")["message"] == \
        "Job j7 has failed because it has reached the specified backoff limit"
    wait_until(lambda: not job_pods(core_api, namespace, "j7") and not job_services(core_api, namespace, "j7"),
               timeout=60, what="0 pods and 0 services left")


def test_J4_backoff_limit_0_fails_on_a_new_failed_pod(engine: Any, namespace: str) -> None:
    manifest = tf_manifest("strict", {"Chief": replica(1), "Worker": replica(1, "Never", annotations=fail(2))},
                           run_policy={"backoffLimit": 0})
    outcome = engine.drive(engine.submit(manifest), KIND, timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "strict")
    assert condition(status, "Failed")["message"] == \
        "Job strict has failed because it has reached the specified backoff limit"
    assert status["failure"]["pod"] == "strict-worker-0" and status["failure"]["exitCode"] == 2
