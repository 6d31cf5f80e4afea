"""JobClient's wait, pods, logs and errors on the real cluster, as the Kubeflow SDK's TrainingClient (N5, N6, N7, N9).

Every call goes through the sync `JobClient` and a real Airflow connection; the jobs are
driven by the engine in a background thread, as a trigger would drive them.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kubernetes import client
from support.waits import wait_until
from tfjob_it_support import KIND, Background, fail, is_true, replica, succeed, tf_manifest

from airflow_broadcast.cluster.api_errors import ClusterApiError, NotFound
from airflow_broadcast.cluster.job_api import JobNotFound
from airflow_broadcast.exceptions import JobFailedError
from airflow_broadcast.hooks.job_client import JobClient

pytestmark = pytest.mark.cluster


@pytest.fixture
def jobs(namespace: str, kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> JobClient:
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(
        {"conn_type": "kubernetes", "extra": {"kube_config_path": kubeconfig, "namespace": namespace}}))
    return JobClient("TFJob")


def test_N5_wait_returns_at_the_first_expected_condition_and_calls_back_each_look(engine: Any, jobs: JobClient) -> None:
    submission = engine.submit(tf_manifest("waited", {"Worker": replica(2, annotations=succeed("3s"))}))
    seen: list[list[str]] = []
    driving = Background(lambda: engine.drive(submission, KIND, timeout=120))

    started = time.monotonic()
    running = jobs.wait_for_job_conditions(
        "waited", expected_conditions={"Running"}, polling_interval=60, wait_timeout=120,
        callback=lambda job: seen.append([c["type"] for c in job["status"].get("conditions") or []]))
    woken_after = time.monotonic() - started

    assert is_true(running["status"], "Running") and running["metadata"]["uid"] == submission.uid
    assert woken_after < 60, "a watch of the job woke the wait, not the 60 s polling interval"
    assert seen and "Running" in seen[-1] and all("Running" not in types for types in seen[:-1])
    done = jobs.wait_for_job_conditions("waited", polling_interval=60, wait_timeout=120)  # default: Succeeded
    assert is_true(done["status"], "Succeeded")
    driving.result()
    assert jobs.wait_for_job_conditions("waited", expected_conditions="Succeeded", wait_timeout=0) == \
        jobs.get_job("waited"), "a job already there returns at the first look, even with no time left"


def test_N5_failed_raises_unless_expected_and_a_timeout_is_a_timeout_error(engine: Any, jobs: JobClient) -> None:
    submission = engine.submit(tf_manifest("broken", {"Worker": replica(1, annotations=fail(3))}))
    engine.drive(submission, KIND, timeout=120)

    with pytest.raises(JobFailedError, match=r"TFJob .*/broken is Failed") as failed:
        jobs.wait_for_job_conditions("broken", wait_timeout=30)
    assert isinstance(failed.value, RuntimeError)
    assert is_true(jobs.wait_for_job_conditions("broken", expected_conditions={"Failed", "Succeeded"})["status"],
                   "Failed")

    engine.submit(tf_manifest("parked", {"Worker": replica(1)}, run_policy={"suspend": True}))
    looks: list[dict[str, Any]] = []
    with pytest.raises(TimeoutError, match=r"parked did not reach any of \['Running'\] within 2 s"):
        jobs.wait_for_job_conditions("parked", expected_conditions={"Running"}, wait_timeout=2,
                                     polling_interval=0.5, callback=looks.append)
    assert len(looks) >= 3, "the callback runs at every look, at least each polling interval"
    with pytest.raises(ValueError, match="TFJob has no condition 'Complete'"):
        jobs.wait_for_job_conditions("parked", expected_conditions={"Complete"})
    with pytest.raises(JobNotFound):
        jobs.wait_for_job_conditions("ghost", wait_timeout=1)


def test_N6_pods_by_job_name_master_replica_type_and_index_evaluator_included(
        engine: Any, jobs: JobClient, core_api: client.CoreV1Api, namespace: str) -> None:
    submission = engine.submit(tf_manifest("picked", {"Chief": replica(1), "Worker": replica(2),
                                                      "Evaluator": replica(1)}))
    engine.drive(submission, KIND, single_pass=True)
    other = engine.submit(tf_manifest("picked-too", {"Worker": replica(1)}))
    engine.drive(other, KIND, single_pass=True)

    assert jobs.get_job_pod_names("picked") == ["picked-chief-0", "picked-evaluator-0", "picked-worker-0",
                                                "picked-worker-1"]
    assert jobs.get_job_pod_names("picked", is_master=True) == ["picked-chief-0"]
    assert jobs.get_job_pod_names("picked", replica_type="Worker") == ["picked-worker-0", "picked-worker-1"]
    assert jobs.get_job_pod_names("picked", replica_type="worker", replica_index=1) == ["picked-worker-1"]
    assert jobs.get_job_pod_names("picked", replica_type="evaluator") == ["picked-evaluator-0"]
    pods = jobs.get_job_pods("picked", replica_index=0)
    assert {p["metadata"]["name"] for p in pods} == {"picked-chief-0", "picked-evaluator-0", "picked-worker-0"}
    assert all(p["metadata"]["ownerReferences"][0]["uid"] == submission.uid for p in pods)
    with pytest.raises(ValueError, match="replica_type must be one of Chief, Evaluator, Master, PS, Worker"):
        jobs.get_job_pods("picked", replica_type="Launcher")
    assert jobs.get_job_pods("nothing-here") == []


def test_N7_N9_logs_of_started_pods_events_with_verbose_and_api_failures_are_runtime_errors(
        engine: Any, jobs: JobClient, namespace: str) -> None:
    """kwok simulates pods, not containers: the API server answers 404 for every pod log of this cluster."""
    submission = engine.submit(tf_manifest("talky", {"Chief": replica(1, annotations=succeed("2s")),
                                                     "Worker": replica(1, annotations=succeed("2s"))}))
    engine.drive(submission, KIND, timeout=120)

    assert jobs.get_job_logs("talky", replica_type="PS") == {}, "no pod of that type: nothing to read"
    with pytest.raises(NotFound) as missing:
        jobs.get_job_logs("talky")
    assert isinstance(missing.value, RuntimeError) and isinstance(missing.value, ClusterApiError)
    assert f"/api/v1/namespaces/{namespace}/pods/talky-chief-0/log" in str(missing.value), "the master's only"

    stuck = engine.submit(tf_manifest("stuck", {"Worker": replica(1, nodeSelector={"pool": "nowhere"})}))
    engine.drive(stuck, KIND, single_pass=True)

    def verbose() -> tuple[dict[str, str], dict[str, list[str]]]:
        result: tuple[dict[str, str], dict[str, list[str]]] = jobs.get_job_logs("stuck", is_master=False,
                                                                               verbose=True)
        return result

    wait_until(lambda: any("FailedScheduling" in line for line in verbose()[1].get("Pod stuck-worker-0", [])),
               timeout=30, what="the scheduler's event on the pod")
    logs, events = verbose()
    assert logs == {}, "a Pending pod has no log yet and is not asked for one"
    assert set(events) == {"TFJob stuck", "Pod stuck-worker-0"}
    assert any(" Normal SuccessfulCreatePod: Created pod: stuck-worker-0" in line for line in events["TFJob stuck"])
    assert any(" Warning FailedScheduling: " in line for line in events["Pod stuck-worker-0"])
