"""startup_timeout_seconds and get_logs from the operator and the sensor through the trigger to the end of the task."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from support.fake_cluster import FakeCluster
from support.task_log import RecordingLog

from airflow_broadcast.cluster.job_records import new_record, records_path
from airflow_broadcast.cluster.job_warnings import JobWarning
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.reconcile_loop import LoopOutcome, LoopReason
from airflow_broadcast.exceptions import JobStartupTimeoutError, JobTimeoutError
from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.job_runtime import DEFAULT_STARTUP_TIMEOUT_SECONDS, conclude
from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.sensors.broadcast_job import BroadcastJobSensor
from airflow_broadcast.sensors.tf_job import TFJobSensor
from airflow_broadcast.triggers import job_reconcile
from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger, JobTriggerArgs, drive_job

CONTEXT = {"ti": type("TI", (), {"dag_id": "d", "task_id": "t", "run_id": "r"})()}
CHIEF = {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}
TF = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "mnist"},
      "spec": {"tfReplicaSpecs": {"Chief": CHIEF}}}
STALL = ("pod mnist-chief-0 on node n1 has been starting for 601 s, longer than startup_timeout_seconds=600: "
         "ErrImagePull")


def test_operators_and_sensors_default_to_a_600_s_start_up_timeout_and_no_log_following() -> None:
    assert DEFAULT_STARTUP_TIMEOUT_SECONDS == 600.0
    for task in (BroadcastJobOperator(task_id="b", manifest={}), TFJobOperator(task_id="t", manifest=TF),
                 BroadcastJobSensor(task_id="bs", job_name="x"), TFJobSensor(task_id="ts", job_name="x")):
        assert task.startup_timeout_seconds == 600.0
        assert task.get_logs is False


@pytest.mark.parametrize("make", [
    lambda: BroadcastJobOperator(task_id="b", manifest={}, startup_timeout_seconds=-1),
    lambda: TFJobSensor(task_id="s", job_name="x", startup_timeout_seconds=-5),
])
def test_a_negative_start_up_timeout_fails_when_the_dag_is_parsed(make: Any) -> None:
    with pytest.raises(ValueError, match="startup_timeout_seconds must be >= 0"):
        make()


def test_the_trigger_carries_both_and_its_kwargs_name_them_only_when_set() -> None:
    op = TFJobOperator(task_id="t", manifest=TF, get_logs=True, startup_timeout_seconds=90)
    args = op._trigger_args("ml", "tfjob-mnist", "u", CONTEXT)
    assert (args.startup_timeout_seconds, args.get_logs) == (90, True)
    _, kwargs = JobReconcileTrigger(args).serialize()
    assert (kwargs["startup_timeout_seconds"], kwargs["get_logs"]) == (90, True)
    assert JobReconcileTrigger(**kwargs).args == args

    plain = TFJobOperator(task_id="t", manifest=TF, startup_timeout_seconds=None)._trigger_args("ml", "r", "u", CONTEXT)
    _, kwargs = JobReconcileTrigger(plain).serialize()
    assert "startup_timeout_seconds" not in kwargs and "get_logs" not in kwargs  # an older triggerer loads them


def test_the_sensor_passes_them_on_and_still_keeps_the_pods() -> None:
    args = TFJobSensor(task_id="s", job_name="x", get_logs=True, startup_timeout_seconds=30)._args("ml", "r", "u",
                                                                                                     CONTEXT)
    assert (args.startup_timeout_seconds, args.get_logs, args.on_kill_action) == (30, True, "keep")


def test_get_logs_is_refused_for_a_kind_without_a_primary_pod() -> None:
    with pytest.raises(ValueError, match="get_logs is not supported for BroadcastJob"):
        JobTriggerArgs.from_kwargs({"kind": "BroadcastJob", "namespace": "n", "record_name": "r", "uid": "u",
                                    "get_logs": True})


async def test_drive_job_hands_the_loop_the_timeout_and_a_throttled_warning_sink_and_follows_the_chief(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    followers: list[str] = []

    async def loop(client: Any, driver: Any, namespace: str, record: str, uid: str, **kw: Any) -> LoopOutcome:
        seen.update(kw)
        for _ in range(3):
            kw["warnings"](JobWarning("FailedScheduling", "pod mnist-chief-0", "0/3 nodes are available"))
        return LoopOutcome(LoopReason.STARTUP_TIMEOUT, None, STALL)

    class Follower:
        def __init__(self, client: Any, namespace: str, record: str, uid: str, pods: Any, choose: Any,
                     container: str, sink: Any, mask: Any) -> None:
            followers.append(f"{record} {container} {choose.__name__} {mask.__name__}")

        def start(self) -> None:
            followers.append("started")

        async def finish(self) -> None:
            followers.append("finished")

    class Driver:
        kind = job_reconcile.driver_for("TFJob").kind

        def watch(self, client: Any, namespace: str) -> Any:
            return type("Watched", (), {"children": None})()

    monkeypatch.setattr(job_reconcile, "run_reconcile_loop", loop)
    monkeypatch.setattr(job_reconcile, "LogFollower", Follower)
    monkeypatch.setattr(JobTriggerArgs, "driver", lambda self: Driver())
    args = JobTriggerArgs.from_kwargs({"kind": "TFJob", "namespace": "ml", "record_name": "tfjob-mnist", "uid": "u",
                                       "startup_timeout_seconds": 600, "get_logs": True})
    log = RecordingLog()

    outcome = await drive_job(args, KubeClient(FakeCluster()), log)

    assert outcome.reason is LoopReason.STARTUP_TIMEOUT and seen["startup_timeout"] == 600
    assert followers == ["tfjob-mnist tensorflow primary_pod masked", "started", "finished"]
    assert log.lines == ["Warning FailedScheduling pod mnist-chief-0: 0/3 nodes are available",
                         "2 more FailedScheduling warning(s) not shown (at most one line per reason every 30 s)"]
    followers.clear()
    await drive_job(args, KubeClient(FakeCluster()), log, single_pass=True)
    assert followers == []  # a poke streams no log


class Hook:
    def __init__(self, fake: FakeCluster) -> None:
        self.fake = fake

    async def kube_client(self) -> KubeClient:
        return KubeClient(self.fake, qps=0)


@pytest.mark.parametrize(("action", "left"), [("delete_active_pods", ["done"]), ("keep", ["done", "stuck"])])
def test_a_start_up_timeout_fails_the_task_and_deletes_the_active_pods_unless_kept(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, action: str, left: list[str]) -> None:
    fake = FakeCluster()
    record = fake.create(records_path("ml"), new_record("TFJob", "mnist", "ml", TF, {}, {}))
    uid = record["metadata"]["uid"]
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "tfjob-mnist", "uid": uid, "controller": True}
    for name in ("stuck", "done"):
        fake.create("/api/v1/namespaces/ml/pods", {"metadata": {"name": name, "ownerReferences": [owner], "labels": {
            "airflow-broadcast.io/job-uid": uid}}})
    fake.patch("/api/v1/namespaces/ml/pods/done", {"status": {"phase": "Succeeded"}})
    monkeypatch.setattr(JobTriggerArgs, "hook", lambda self: Hook(fake))
    args = JobTriggerArgs.from_kwargs({"kind": "TFJob", "namespace": "ml", "record_name": "tfjob-mnist", "uid": uid,
                                       "on_kill_action": action, "startup_timeout_seconds": 600})

    with caplog.at_level(logging.WARNING, logger="test.startup"), pytest.raises(JobStartupTimeoutError) as failed:
        conclude(args, "startup_timeout", STALL, logging.getLogger("test.startup"))

    assert str(failed.value) == f"TFJob ml/mnist: {STALL}"
    assert isinstance(failed.value, JobTimeoutError)
    assert sorted(p["metadata"]["name"] for p in fake.objects("/api/v1/namespaces/ml/pods")) == left
    assert ("Start-up timeout: deleted 1 active pod(s)" in caplog.text) == (action == "delete_active_pods")
