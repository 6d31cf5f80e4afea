"""The hand-off trigger and the `controller` parameter: kwargs a restarted triggerer rebuilds it from, and
the modes and probe times the operators and sensors accept."""

from __future__ import annotations

import pytest

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.reconcilers.tf_job.options import TFJobOptions
from airflow_broadcast.sensors.tf_job import TFJobSensor
from airflow_broadcast.triggers.handoff import HandoffTrigger
from airflow_broadcast.triggers.job_reconcile import JobTriggerArgs

MANIFEST = {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": "x"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}


def test_the_trigger_serializes_to_its_own_class_and_rebuilds_from_its_kwargs() -> None:
    args = JobTriggerArgs(kind="TFJob", namespace="ns", record_name="job", uid="u", options=TFJobOptions(),
                          deadline=123.0, on_kill_action="keep")
    path, kwargs = HandoffTrigger(args).serialize()

    assert path == "airflow_broadcast.triggers.handoff.HandoffTrigger"
    assert HandoffTrigger(**kwargs).args == args


def test_operators_and_sensors_default_to_airflow_as_the_controller() -> None:
    task = BroadcastJobOperator(task_id="t", manifest=MANIFEST)
    sensor = TFJobSensor(task_id="s", job_name="job", controller="auto", handoff_probe_seconds=5)

    assert (task.controller, task.handoff_probe_seconds) == ("airflow", 30.0)
    assert (sensor.controller, sensor.handoff_probe_seconds) == ("auto", 5.0)


def test_an_unknown_mode_or_a_probe_without_time_fails_at_parse_time() -> None:
    with pytest.raises(ValueError, match="controller must be one of"):
        BroadcastJobOperator(task_id="t", manifest=MANIFEST, controller="kruise")
    with pytest.raises(ValueError, match="handoff_probe_seconds must be > 0"):
        TFJobSensor(task_id="s", job_name="job", controller="auto", handoff_probe_seconds=0)
