"""BroadcastJob end to end: real Airflow (`airflow dags test`) against the real local control plane."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from bcj_support import SIM, bcj_manifest, job_pods, record
from kubernetes import client
from support.waits import wait_until

from devcluster.airflow_env import AirflowEnv, DagRunResult

pytestmark = [pytest.mark.airflow, pytest.mark.cluster]


@pytest.fixture
def pool(node_factory: Any, namespace: str) -> tuple[list[str], dict[str, str]]:
    """Three fresh nodes that only this test's jobs select."""
    selector = {"e2e-pool": namespace}
    return node_factory(3, labels=selector), selector


def run(env: AirflowEnv, dag: str, namespace: str, manifest: dict[str, Any], **conf: Any) -> DagRunResult:
    return env.dags_test(dag, conf={"namespace": namespace, "manifest": manifest, **conf})


def test_C1_C2_S11_success_reports_every_node(airflow_env: AirflowEnv, core_api: client.CoreV1Api, namespace: str,
                                    pool: tuple[list[str], dict[str, str]]) -> None:
    nodes, selector = pool
    manifest = bcj_manifest("hello", selector, annotations={f"{SIM}/result": "Succeeded"},
                            completionPolicy={"type": "Always"})
    result = run(airflow_env, "bcj_run", namespace, manifest)

    assert result.task_states == {"bcj": "success"}, result.output[-4000:]
    summary = result.xcoms["bcj"]
    assert summary["phase"] == "completed"
    assert (summary["desired"], summary["succeeded"], summary["failed"], summary["active"]) == (3, 3, 0, 0)
    assert sorted(summary["nodes"]) == sorted(nodes)
    assert all(r["phase"] == "Succeeded" and r["exitCode"] == 0 for r in summary["nodes"].values())
    assert all("affinity/selector" in why for why in summary["ineligibleNodes"].values())
    assert summary["conditions"][-1]["message"] == "Job completed, 3 pods succeeded, 0 pods failed"
    pods = job_pods(core_api, namespace, "hello")
    assert sorted(p.spec.node_name for p in pods) == sorted(nodes)
    assert {p.metadata.labels["broadcastjob-controller-uid"] for p in pods} == {summary["uid"]}


def test_F4_failfast_fails_the_task_naming_the_node(airflow_env: AirflowEnv, core_api: client.CoreV1Api,
                                                 namespace: str, pool: tuple[list[str], dict[str, str]]) -> None:
    nodes, selector = pool
    bad = sorted(nodes)[1]
    manifest = bcj_manifest("failfast", selector, annotations={
        f"{SIM}/result": "Succeeded", f"{SIM}/after": "2s", f"{SIM}/fail-nodes": bad, f"{SIM}/exit-code": "137",
        f"{SIM}/reason": "OOMKilled"}, parallelism=1)
    result = run(airflow_env, "bcj_run", namespace, manifest)

    assert result.task_states == {"bcj": "failed"}
    assert "failure policy is FailurePolicyTypeFailFast and failed pod is found" in result.output
    assert f"{bad} (pod failfast-" in result.output and "exit code 137, OOMKilled" in result.output
    status = json.loads(record(core_api, namespace, "failfast").data["status"])
    assert status["phase"] == "failed"
    assert status["nodes"][bad]["exitCode"] == 137


def test_F8_C6_continue_succeeds_and_reports_the_failure(airflow_env: AirflowEnv, namespace: str,
                                                   pool: tuple[list[str], dict[str, str]]) -> None:
    nodes, selector = pool
    bad = sorted(nodes)[0]
    manifest = bcj_manifest("keepgoing", selector, annotations={
        f"{SIM}/result": "Succeeded", f"{SIM}/fail-nodes": bad, f"{SIM}/exit-code": "3"},
        failurePolicy={"type": "Continue"})
    result = run(airflow_env, "bcj_run", namespace, manifest)

    assert result.task_states == {"bcj": "success"}, result.output[-4000:]
    summary = result.xcoms["bcj"]
    assert (summary["succeeded"], summary["failed"]) == (2, 1)
    assert summary["nodes"][bad]["phase"] == "Failed" and summary["nodes"][bad]["exitCode"] == 3
    assert summary["conditions"][-1]["type"] == "Complete"


def test_D3_D8_deadline_exceeded_deletes_active_pods_and_fails(airflow_env: AirflowEnv, core_api: client.CoreV1Api,
                                                        namespace: str,
                                                        pool: tuple[list[str], dict[str, str]]) -> None:
    _, selector = pool
    manifest = bcj_manifest("forever", selector, completionPolicy={"type": "Always", "activeDeadlineSeconds": 4})
    started = time.monotonic()
    result = run(airflow_env, "bcj_run", namespace, manifest)

    assert result.task_states == {"bcj": "failed"}
    assert f"Job {namespace}/forever was active longer than specified deadline" in result.output
    status = json.loads(record(core_api, namespace, "forever").data["status"])
    assert status["phase"] == "failed" and status["failed"] == 3 and status["active"] == 0
    wait_until(lambda: not job_pods(core_api, namespace, "forever"), what="deadline pods deleted")
    assert time.monotonic() - started >= 4


def test_T1_T5_ttl_cleans_up_after_the_task_ended(airflow_env: AirflowEnv, core_api: client.CoreV1Api, namespace: str,
                                            pool: tuple[list[str], dict[str, str]]) -> None:
    _, selector = pool
    manifest = bcj_manifest("short-lived", selector, annotations={f"{SIM}/result": "Succeeded"},
                            completionPolicy={"type": "Always", "ttlSecondsAfterFinished": 3})
    result = run(airflow_env, "bcj_run", namespace, manifest)
    assert result.task_states == {"bcj": "success"}, result.output[-4000:]
    kept = record(core_api, namespace, "short-lived")
    assert kept is not None, "the record must outlive the task until its TTL passes"
    assert kept.metadata.annotations["airflow-broadcast.io/result-read"] == "true"
    assert len(job_pods(core_api, namespace, "short-lived")) == 3

    expires = kept.metadata.annotations["airflow-broadcast.io/expires-at"]
    wait_until(lambda: time.time() > time.mktime(time.strptime(expires, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone + 0.5,
               timeout=30, what="TTL expiry")
    cleanup = airflow_env.dags_test("bcj_cleanup", conf={"namespace": namespace})
    assert cleanup.task_states == {"cleanup": "success"}
    assert cleanup.xcoms["cleanup"] == [f"{namespace}/bcj-short-lived"]
    assert record(core_api, namespace, "short-lived") is None
    wait_until(lambda: not job_pods(core_api, namespace, "short-lived"), what="pods garbage-collected")


def test_T4_ttl_zero_deletes_at_completion(airflow_env: AirflowEnv, core_api: client.CoreV1Api, namespace: str,
                                        pool: tuple[list[str], dict[str, str]]) -> None:
    _, selector = pool
    manifest = bcj_manifest("gone-at-once", selector, annotations={f"{SIM}/result": "Succeeded"},
                            completionPolicy={"type": "Always", "ttlSecondsAfterFinished": 0})
    result = run(airflow_env, "bcj_run_in_worker", namespace, manifest)

    assert result.task_states == {"bcj": "success"}, result.output[-4000:]
    assert result.xcoms["bcj"]["succeeded"] == 3, "the result was read before the record was deleted"
    assert record(core_api, namespace, "gone-at-once") is None


def test_Z2_Z4_paused_job_waits_then_resumes(airflow_env: AirflowEnv, core_api: client.CoreV1Api, namespace: str,
                                       pool: tuple[list[str], dict[str, str]]) -> None:
    _, selector = pool
    manifest = bcj_manifest("held", selector, annotations={f"{SIM}/result": "Succeeded"}, paused=True)
    outcome: dict[str, DagRunResult] = {}
    runner = threading.Thread(target=lambda: outcome.update(r=run(airflow_env, "bcj_run", namespace, manifest)))
    runner.start()

    def paused() -> bool:
        rec = record(core_api, namespace, "held")
        return rec is not None and json.loads(rec.data["status"]).get("phase") == "paused"

    wait_until(paused, timeout=120, what="job paused")
    assert job_pods(core_api, namespace, "held") == [], "a paused job creates no pods"
    rec = record(core_api, namespace, "held")
    stored = json.loads(rec.data["manifest"])
    stored["spec"]["paused"] = False
    core_api.patch_namespaced_config_map(rec.metadata.name, namespace, {"data": {"manifest": json.dumps(stored)}})
    runner.join(timeout=300)

    result = outcome["r"]
    assert result.task_states == {"bcj": "success"}, result.output[-4000:]
    assert result.xcoms["bcj"]["succeeded"] == 3
    events = core_api.list_namespaced_event(namespace, field_selector=f"involvedObject.name={rec.metadata.name}")
    assert "Continue" in {e.reason for e in events.items}


def test_operator_submits_and_sensor_drives_to_completion(airflow_env: AirflowEnv, namespace: str,
                                                          pool: tuple[list[str], dict[str, str]]) -> None:
    _, selector = pool
    manifest = bcj_manifest("sensed", selector, annotations={f"{SIM}/result": "Succeeded", f"{SIM}/after": "1s"})
    result = run(airflow_env, "bcj_submit_and_sense", namespace, manifest)

    assert result.task_states == {"submit": "success", "sense": "success"}, result.output[-4000:]
    assert result.xcoms["submit"]["phase"] == "submitted"
    assert result.xcoms["sense"]["phase"] == "completed"
    assert result.xcoms["sense"]["succeeded"] == 3
    assert result.xcoms["sense"]["uid"] == result.xcoms["submit"]["uid"]


def test_X6_retry_reattaches_to_the_same_job(airflow_env: AirflowEnv, namespace: str, tmp_path: Path,
                                          pool: tuple[list[str], dict[str, str]]) -> None:
    _, selector = pool
    marker = tmp_path / "first-try-uid"
    manifest = bcj_manifest("resilient", selector, annotations={f"{SIM}/result": "Succeeded", f"{SIM}/after": "1s"})
    result = run(airflow_env, "bcj_retry_reattach", namespace, manifest, marker=str(marker))

    assert result.task_states == {"bcj": "success"}, result.output[-4000:]
    assert result.try_numbers["bcj"] == 2
    assert "simulated worker crash after submission" in result.output
    assert "re-attached" in result.output
    assert result.xcoms["bcj"]["uid"] == marker.read_text(), "the retry drove the first try's job"
    assert result.xcoms["bcj"]["succeeded"] == 3


def test_V10_V20_bad_manifest_fails_before_anything_is_created(airflow_env: AirflowEnv, core_api: client.CoreV1Api,
                                                       namespace: str) -> None:
    manifest = bcj_manifest("bad.name", {"x": "y"}, restart_policy="Always",
                            completionPolicy={"type": "Never", "ttlSecondsAfterFinished": 5}, parallelism=-1)
    result = run(airflow_env, "bcj_run", namespace, manifest)

    assert result.task_states == {"bcj": "failed"}
    for expected in ("metadata.name", "BroadcastJob name must consist of alphanumeric characters or '-'",
                     "spec.completionPolicy.ttlSecondsAfterFinished",
                     "ttlSecondsAfterFinished can just work with Always CompletionPolicyType",
                     "spec.template.spec.restartPolicy", "pod restartPolicy can only be Never or OnFailure",
                     "spec.parallelism"):
        assert expected in result.output, expected
    assert core_api.list_namespaced_config_map(
        namespace, label_selector="app.kubernetes.io/managed-by=airflow-broadcast").items == []
    assert core_api.list_namespaced_pod(namespace).items == []
