"""TFJob end to end: real Airflow (`airflow dags test`) against the real local control plane.

All scenarios are tasks of one DAG (tests/dags/tf_e2e.py), run by a single `airflow dags test`
so that Airflow's start-up is paid once; each scenario has its own namespace, and each test
below checks its task's state, its XCom and the cluster state it left. Where a replica must end
at a chosen moment, an actor thread patches that pod's kwok annotation while the DAG runs, as
if its training process had just finished.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from support.waits import wait_until
from tf_support import (
    RECORD_SELECTOR,
    SIM,
    condition,
    finish_pod,
    job_pods,
    job_services,
    phases,
    record,
    record_status,
    replica,
    running_pod,
    succeed,
    tf_manifest,
    true_types,
)

from devcluster.airflow_env import AirflowEnv, DagRunResult

pytestmark = [pytest.mark.airflow, pytest.mark.cluster]

OOM = {f"{SIM}/result": "Failed", f"{SIM}/after": "1s", f"{SIM}/exit-code": "137", f"{SIM}/reason": "OOMKilled"}
MANIFESTS: dict[str, dict[str, Any]] = {
    "chief": tf_manifest("chiefly", {
        "Chief": replica(1, "OnFailure", succeed("2s")),
        "PS": replica(1),
        "Worker": replica(2, "ExitCode", succeed("1s")),
    }),
    "worker0": tf_manifest("firstdone", {"Worker": replica(3)}),
    "allworkers": tf_manifest("everyone", {"Worker": replica(2)}, successPolicy="AllWorkers"),
    "oom": tf_manifest("oomjob", {"Chief": replica(1), "Worker": replica(1, "Never", OOM)}),
    "comeback": tf_manifest("comeback", {"Worker": replica(2, "ExitCode", {
        **succeed("8s"), f"{SIM}/exit-code": "137", f"{SIM}/reason": "OOMKilled"})}),
    "deadline": tf_manifest("overdue", {"Worker": replica(2)},
                            run_policy={"activeDeadlineSeconds": 3, "cleanPodPolicy": "All"}),
    "broken": tf_manifest("broken", {
        "Chief": replica(1),
        "Master": replica(1),
        "PS": replica(-1),
        "Worker": replica(2, containers=[{"name": "main", "image": "busybox"}]),
    }),
    "sensed": tf_manifest("sensed", {"Chief": replica(1, annotations=succeed("2s")),
                                     "Worker": replica(1, annotations=succeed("1s"))}),
    "resilient": tf_manifest("resilient", {"Worker": replica(2, annotations=succeed("1s"))}),
}


@dataclass
class Scenarios:
    """The one DAG run, the namespace of each scenario, and what the actor threads saw."""

    result: DagRunResult
    namespaces: dict[str, str]
    marker: Path
    seen: dict[str, Any] = field(default_factory=dict)
    actor_errors: list[str] = field(default_factory=list)


class Actor(threading.Thread):
    """Acts on the cluster while the DAG runs; stops waiting once the DAG run is over."""

    def __init__(self, name: str, body: Callable[[Actor], None], run_over: threading.Event,
                 errors: list[str]) -> None:
        super().__init__(name=name, daemon=True)
        self.body, self.run_over, self.errors = body, run_over, errors

    def until(self, predicate: Callable[[], Any], what: str, timeout: float = 600) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.run_over.is_set():
            value = predicate()
            if value:
                return value
            time.sleep(0.2)
        raise TimeoutError(f"{self.name}: {what} never happened while the DAG ran")

    def run(self) -> None:
        try:
            self.body(self)
        except Exception as exc:  # reported by the scenario's test
            self.errors.append(f"{self.name}: {type(exc).__name__}: {exc}")


@pytest.fixture(scope="module")
def scenarios(airflow_env: AirflowEnv, core_api: client.CoreV1Api,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenarios]:
    namespaces = {key: f"t-{uuid.uuid4().hex[:10]}" for key in MANIFESTS}
    for ns in namespaces.values():
        core_api.create_namespace({"metadata": {"name": ns, "labels": {"airflow-broadcast.io/test": "true"}}})
    try:
        marker = tmp_path_factory.mktemp("tf-e2e") / "first-try-uid"
        conf: dict[str, Any] = {key: {"namespace": namespaces[key], "manifest": manifest}
                                for key, manifest in MANIFESTS.items()}
        conf["comeback"]["fail_for_seconds"] = 7
        conf["resilient"]["marker"] = str(marker)
        seen: dict[str, Any] = {}
        errors: list[str] = []
        run_over = threading.Event()

        def worker0(actor: Actor) -> None:
            ns = namespaces["worker0"]
            workers = [f"firstdone-worker-{i}" for i in range(3)]
            actor.until(lambda: all(running_pod(core_api, ns, pod) for pod in workers), "all three workers running")
            finish_pod(core_api, ns, "firstdone-worker-0")

        def allworkers(actor: Actor) -> None:
            ns = namespaces["allworkers"]
            actor.until(lambda: running_pod(core_api, ns, "everyone-worker-0")
                        and running_pod(core_api, ns, "everyone-worker-1"), "both workers running")
            finish_pod(core_api, ns, "everyone-worker-0")

            def one_done() -> dict[str, Any] | None:
                status = record_status(core_api, ns, "everyone")
                worker = (status.get("replicaStatuses") or {}).get("Worker") or {}
                return status if worker.get("succeeded") == 1 else None

            seen["allworkers_halfway"] = actor.until(one_done, "worker-0 counted as succeeded")
            finish_pod(core_api, ns, "everyone-worker-1")

        actors = [Actor("worker0", worker0, run_over, errors), Actor("allworkers", allworkers, run_over, errors)]
        for actor in actors:
            actor.start()
        try:
            result = airflow_env.dags_test("tf_e2e_scenarios", conf=conf)
        finally:
            run_over.set()
            for actor in actors:
                actor.join(30)
        yield Scenarios(result, namespaces, marker, seen, errors)
    finally:
        for ns in namespaces.values():
            core_api.delete_namespace(ns, propagation_policy="Background")


def counts(active: int = 0, succeeded: int = 0, failed: int = 0) -> dict[str, int]:
    return {"active": active, "succeeded": succeeded, "failed": failed}


def record_events(core: client.CoreV1Api, namespace: str, name: str) -> list[tuple[str, str]]:
    events = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name=tfjob-{name}").items
    return [(e.reason, e.message) for e in events]


def test_F4_success_via_chief(scenarios: Scenarios, core_api: client.CoreV1Api) -> None:
    ns, result = scenarios.namespaces["chief"], scenarios.result
    assert result.task_states["chief"] == "success", result.output[-4000:]
    summary = result.xcoms["chief"]
    rec = record(core_api, ns, "chiefly")
    assert (summary["kind"], summary["name"], summary["namespace"]) == ("TFJob", "chiefly", ns)
    assert (summary["record"], summary["uid"]) == (rec.metadata.name, rec.metadata.uid)
    assert summary["phase"] == "Succeeded"
    assert summary["conditions"][-1]["message"] == f"TFJob {ns}/chiefly successfully completed."
    assert true_types(summary["conditions"]) == ["Created", "Succeeded"]
    assert summary["replicaStatuses"] == {"Chief": counts(succeeded=1), "PS": counts(succeeded=1),
                                          "Worker": counts(succeeded=2)}
    assert summary["startTime"] and summary["completionTime"] and summary["failure"] is None
    assert record_status(core_api, ns, "chiefly")["conditions"] == summary["conditions"]
    assert phases(core_api, ns, "chiefly") == {
        "chiefly-chief-0": "Succeeded", "chiefly-ps-0": "Running",  # cleanPodPolicy None keeps the PS
        "chiefly-worker-0": "Succeeded", "chiefly-worker-1": "Succeeded"}
    assert sorted(job_services(core_api, ns, "chiefly")) == sorted(phases(core_api, ns, "chiefly"))


def test_F7_success_via_worker_0_while_other_workers_run(scenarios: Scenarios, core_api: client.CoreV1Api) -> None:
    ns, result = scenarios.namespaces["worker0"], scenarios.result
    assert not [e for e in scenarios.actor_errors if e.startswith("worker0")]
    assert result.task_states["worker0"] == "success", result.output[-4000:]
    summary = result.xcoms["worker0"]
    assert summary["phase"] == "Succeeded"
    assert summary["conditions"][-1]["type"] == "Succeeded"
    assert summary["replicaStatuses"] == {"Worker": counts(succeeded=3)}, "active moved to succeeded (F19)"
    assert phases(core_api, ns, "firstdone") == {
        "firstdone-worker-0": "Succeeded", "firstdone-worker-1": "Running", "firstdone-worker-2": "Running"}


def test_F9_all_workers_policy_waits_for_every_worker(scenarios: Scenarios, core_api: client.CoreV1Api) -> None:
    ns, result = scenarios.namespaces["allworkers"], scenarios.result
    assert not [e for e in scenarios.actor_errors if e.startswith("allworkers")]
    halfway = scenarios.seen["allworkers_halfway"]
    assert halfway["replicaStatuses"]["Worker"] == {"active": 1, "succeeded": 1}
    assert true_types(halfway["conditions"]) == ["Created", "Running"], "worker-0 alone does not finish it"
    assert result.task_states["allworkers"] == "success", result.output[-4000:]
    summary = result.xcoms["allworkers"]
    assert summary["phase"] == "Succeeded"
    assert summary["replicaStatuses"] == {"Worker": counts(succeeded=2)}
    assert phases(core_api, ns, "everyone") == {"everyone-worker-0": "Succeeded", "everyone-worker-1": "Succeeded"}


def test_F10_N10_oom_killed_worker_fails_the_task_naming_the_cause(scenarios: Scenarios,
                                                                   core_api: client.CoreV1Api) -> None:
    ns, result = scenarios.namespaces["oom"], scenarios.result
    assert result.task_states["oom"] == "failed"
    assert "oom" not in result.xcoms
    assert f"TFJob {ns}/oomjob has failed because 1 Worker replica(s) failed." in result.output
    assert "Failing replica: Worker 0 (pod oomjob-worker-0, exit code 137, OOMKilled" in result.output
    status = record_status(core_api, ns, "oomjob")
    assert condition(status, "Failed")["status"] == "True"
    assert condition(status, "Failed")["reason"] == "TFJobFailed"
    assert {k: status["failure"][k] for k in ("replicaType", "index", "pod", "exitCode", "reason")} == {
        "replicaType": "Worker", "index": 0, "pod": "oomjob-worker-0", "exitCode": 137, "reason": "OOMKilled"}
    pods = job_pods(core_api, ns, "oomjob")
    terminated = pods["oomjob-worker-0"].status.container_statuses[0].state.terminated
    assert (pods["oomjob-worker-0"].status.phase, terminated.exit_code, terminated.reason) == \
        ("Failed", 137, "OOMKilled")
    assert pods["oomjob-chief-0"].status.phase == "Running", "cleanPodPolicy None keeps the chief"


def test_E7_exitcode_restart_then_success(scenarios: Scenarios, core_api: client.CoreV1Api) -> None:
    ns, result = scenarios.namespaces["comeback"], scenarios.result
    assert result.task_states["comeback"] == "success", result.output[-4000:]
    summary = result.xcoms["comeback"]
    assert summary["phase"] == "Succeeded"
    assert summary["replicaStatuses"] == {"Worker": counts(succeeded=2)}
    assert "Restarting" not in true_types(summary["conditions"])
    status = record_status(core_api, ns, "comeback")
    assert status["controllerRestarts"] == {"Worker": 2}
    events = record_events(core_api, ns, "comeback")
    assert ("TFJobRestarting", "job comeback is restarting because Worker replica(s) failed.") in events
    assert ("ExitedWithCode", f"Pod: {ns}.comeback-worker-1 exited with code 137") in events
    pods = job_pods(core_api, ns, "comeback")
    assert {n: p.status.phase for n, p in pods.items()} == {"comeback-worker-0": "Succeeded",
                                                            "comeback-worker-1": "Succeeded"}
    for pod in pods.values():  # the survivors are the re-created pods, made after the failure window
        until = pod.metadata.annotations[f"{SIM}/fail-until"]
        assert pod.metadata.creation_timestamp.strftime("%Y-%m-%dT%H:%M:%SZ") >= until


def test_I1_I3_deadline_fails_the_task_and_cleans_up(scenarios: Scenarios, core_api: client.CoreV1Api) -> None:
    ns, result = scenarios.namespaces["deadline"], scenarios.result
    assert result.task_states["deadline"] == "failed"
    assert "deadline" not in result.xcoms
    assert "Job overdue has failed because it was active longer than specified deadline" in result.output
    status = record_status(core_api, ns, "overdue")
    assert condition(status, "Failed")["message"] == \
        "Job overdue has failed because it was active longer than specified deadline"
    assert status["failure"]["reason"] == "DeadlineExceeded"
    wait_until(lambda: not job_pods(core_api, ns, "overdue") and not job_services(core_api, ns, "overdue"),
               timeout=60, what="children deleted (cleanPodPolicy All)")


def test_N5_submit_then_sensor_drives_to_completion(scenarios: Scenarios, core_api: client.CoreV1Api) -> None:
    ns, result = scenarios.namespaces["sensed"], scenarios.result
    assert (result.task_states["submit"], result.task_states["sense"]) == ("success", "success"), \
        result.output[-4000:]
    submitted, sensed = result.xcoms["submit"], result.xcoms["sense"]
    assert submitted["phase"] == "submitted"
    assert sensed["phase"] == "Succeeded"
    assert sensed["uid"] == submitted["uid"] == record(core_api, ns, "sensed").metadata.uid
    assert sensed["replicaStatuses"] == {"Chief": counts(succeeded=1), "Worker": counts(succeeded=1)}
    assert phases(core_api, ns, "sensed") == {"sensed-chief-0": "Succeeded", "sensed-worker-0": "Succeeded"}


def test_M6_retry_reattaches_to_the_same_job(scenarios: Scenarios, core_api: client.CoreV1Api) -> None:
    ns, result = scenarios.namespaces["resilient"], scenarios.result
    assert result.task_states["resilient"] == "success", result.output[-4000:]
    assert result.try_numbers["resilient"] == 2
    assert "simulated worker crash after submission" in result.output
    assert f"TFJob {ns}/resilient re-attached" in result.output
    first_uid = scenarios.marker.read_text()
    assert result.xcoms["resilient"]["uid"] == first_uid, "the retry drove the first try's job"
    assert result.xcoms["resilient"]["phase"] == "Succeeded"
    assert record(core_api, ns, "resilient").metadata.uid == first_uid
    assert phases(core_api, ns, "resilient") == {"resilient-worker-0": "Succeeded",
                                                 "resilient-worker-1": "Succeeded"}


def test_B14_bad_manifest_fails_before_anything_is_created(scenarios: Scenarios, core_api: client.CoreV1Api) -> None:
    ns, result = scenarios.namespaces["broken"], scenarios.result
    assert result.task_states["broken"] == "failed"
    for expected in (
        "spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role",
        "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: "
        "must have at least one container with name tensorflow",
        "spec.tfReplicaSpecs[PS].replicas: Invalid value: -1: must be greater than or equal to 0",
    ):
        assert expected in result.output, expected
    assert core_api.list_namespaced_config_map(ns, label_selector=RECORD_SELECTOR).items == []
    assert [c.metadata.name for c in core_api.list_namespaced_config_map(ns).items
            if c.metadata.name != "kube-root-ca.crt"] == []
    assert core_api.list_namespaced_pod(ns).items == []
    assert core_api.list_namespaced_service(ns).items == []
