"""controller="cluster" against the real controllers: OpenKruise runs the BroadcastJob and training-operator the
TFJob; the task returns the kind's XCom shape from their status, fails when they fail, and deletes the custom
resource on kill. Neither engine touches the other's jobs."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import pytest
from handoff_support import (
    RecordingTI,
    Runner,
    broadcast_job,
    broadcast_task,
    custom_resources,
    job_records,
    pod_owners,
    task_runner,
    tf_job,
)
from kubernetes import client
from support.waits import wait_until

from airflow_broadcast.exceptions import JobFailedError
from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.sensors.broadcast_job import BroadcastJobSensor
from airflow_broadcast.triggers.handoff import HandoffTrigger

pytestmark = [pytest.mark.cluster, pytest.mark.differential]


@pytest.fixture
def as_task(kubeconfig: str, upstream: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runner]:
    yield from task_runner(kubeconfig, monkeypatch)


def conditions(result: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in result["conditions"]}


def test_handoff_broadcast_job_runs_on_kruise_and_returns_the_summary(
        as_task: Runner, api_client: client.ApiClient, core_api: client.CoreV1Api, node_factory: Any,
        upstream_namespace: str) -> None:
    ns = upstream_namespace
    task = broadcast_task(node_factory, ns, "bcj-ok", "Succeeded", controller="cluster")

    result, ti, log = as_task(task)

    (resource,) = custom_resources(api_client, "BroadcastJob", ns)
    assert ti.xcom["job"] == {"kind": "BroadcastJob", "name": "bcj-ok", "namespace": ns,
                              "uid": resource["metadata"]["uid"], "record": "bcj-ok"}
    assert (result["phase"], result["desired"], result["succeeded"], result["failed"], result["active"]) == (
        "completed", 2, 2, 0, 0)
    assert conditions(result)["Complete"] == "True"
    assert set(result) >= {"startTime", "completionTime", "nodes", "failedNodes", "ineligibleNodes"}
    assert "run by the cluster's controller" in log
    assert job_records(core_api, ns) == []  # our engine has nothing to reconcile
    assert pod_owners(core_api, ns) == {("BroadcastJob", True)}


def test_handoff_broadcast_job_failure_fails_the_task(
        as_task: Runner, node_factory: Any, upstream_namespace: str) -> None:
    ns = upstream_namespace
    task = broadcast_task(node_factory, ns, "bcj-bad", "Failed", controller="cluster")

    with pytest.raises(JobFailedError, match=f"BroadcastJob {ns}/bcj-bad failed"):
        as_task(task)


def test_handoff_tfjob_runs_on_training_operator_and_returns_the_summary(
        as_task: Runner, api_client: client.ApiClient, core_api: client.CoreV1Api, upstream_namespace: str) -> None:
    ns = upstream_namespace
    task = TFJobOperator(task_id="tf", manifest=tf_job("tf-ok", "Succeeded"), namespace=ns, controller="cluster",
                         deferrable=False)

    result, _, _ = as_task(task)

    (resource,) = custom_resources(api_client, "TFJob", ns)
    assert result["uid"] == resource["metadata"]["uid"]
    assert result["phase"] == "Succeeded"
    assert conditions(result)["Succeeded"] == "True"
    assert result["replicaStatuses"]["Worker"]["succeeded"] == 2
    assert job_records(core_api, ns) == []
    assert pod_owners(core_api, ns) == {("TFJob", True)}


def test_handoff_tfjob_failure_fails_the_task(as_task: Runner, upstream_namespace: str) -> None:
    task = TFJobOperator(task_id="tf", manifest=tf_job("tf-bad", "Failed"), namespace=upstream_namespace,
                         controller="cluster", deferrable=False)

    with pytest.raises(JobFailedError, match=f"TFJob {upstream_namespace}/tf-bad failed"):
        as_task(task)


def test_handoff_on_kill_deletes_the_custom_resource(
        as_task: Runner, api_client: client.ApiClient, upstream_namespace: str) -> None:
    ns = upstream_namespace
    task = TFJobOperator(task_id="tf", manifest=tf_job("tf-kill", None), namespace=ns, controller="cluster",
                         wait_for_completion=False, deferrable=False)
    result, _, _ = as_task(task)
    assert result["phase"] == "submitted" and len(custom_resources(api_client, "TFJob", ns)) == 1

    task.on_kill()

    wait_until(lambda: custom_resources(api_client, "TFJob", ns) == [], timeout=30)


def test_handoff_trigger_on_kill_deletes_the_custom_resource_unless_kept(
        as_task: Runner, api_client: client.ApiClient, upstream_namespace: str) -> None:
    ns = upstream_namespace
    task = TFJobOperator(task_id="tf", manifest=tf_job("tf-trig", None), namespace=ns, controller="cluster",
                         wait_for_completion=False, deferrable=False)
    as_task(task)
    assert task._args is not None

    asyncio.run(HandoffTrigger(dataclasses.replace(task._args, on_kill_action="keep")).on_kill())
    assert len(custom_resources(api_client, "TFJob", ns)) == 1
    asyncio.run(HandoffTrigger(task._args).on_kill())
    wait_until(lambda: custom_resources(api_client, "TFJob", ns) == [], timeout=30)


def test_handoff_retry_reattaches_and_sensor_waits_on_the_resource(
        as_task: Runner, api_client: client.ApiClient, node_factory: Any, upstream_namespace: str) -> None:
    ns = upstream_namespace
    first, _, _ = as_task(broadcast_task(node_factory, ns, "bcj-sense", "Succeeded", controller="cluster",
                                         wait_for_completion=False))
    retry, _, log = as_task(BroadcastJobOperator(task_id="bcj", manifest=broadcast_job("bcj-sense", ns, "Succeeded"),
                                                  namespace=ns, controller="cluster", wait_for_completion=False,
                                                  deferrable=False))
    assert retry["uid"] == first["uid"] and "re-attached" in log

    sensor = BroadcastJobSensor(task_id="wait", job_name="bcj-sense", namespace=ns, controller="cluster",
                                deferrable=False)
    ti = {"ti": RecordingTI("wait")}
    until = time.monotonic() + 60
    done = sensor.poke(ti)
    while done is False and time.monotonic() < until:
        time.sleep(1)
        done = sensor.poke(ti)
    assert done is not False
    assert done.xcom_value["uid"] == first["uid"] and done.xcom_value["phase"] == "completed"
    assert len(custom_resources(api_client, "BroadcastJob", ns)) == 1


def test_handoff_deferred_trigger_fires_once_and_the_task_concludes_from_the_resource(
        as_task: Runner, upstream_namespace: str) -> None:
    ns = upstream_namespace
    task = TFJobOperator(task_id="tf", manifest=tf_job("tf-defer", "Succeeded"), namespace=ns, controller="cluster",
                         wait_for_completion=False, deferrable=False)
    as_task(task)
    assert task._args is not None
    trigger = HandoffTrigger(**HandoffTrigger(task._args).serialize()[1])  # as a restarted triggerer rebuilds it

    async def first_event() -> dict[str, Any]:
        return dict((await anext(trigger.run())).payload)  # type: ignore[arg-type]

    event = asyncio.run(asyncio.wait_for(first_event(), 90))

    assert (event["status"], event["namespace"], event["record_name"]) == ("finished", ns, "tf-defer")
    result = task.execute_handoff_complete({"ti": RecordingTI("tf")}, event)  # type: ignore[arg-type]
    assert result["phase"] == "Succeeded" and result["uid"] == task._args.uid
