"""The sensor's job_name and namespace go into API paths: anything no job can be named fails before a request."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
from airflow_broadcast.sensors.broadcast_job import BroadcastJobSensor
from airflow_broadcast.sensors.tf_job import TFJobSensor
from airflow_broadcast.specs.field_errors import InvalidSpecError

FORGED = "../../../namespaces/kube-system/secrets/x?"


@pytest.fixture
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fails the test on any attempt to reach the cluster."""
    attempts: list[str] = []

    async def refuse(self: BroadcastKubernetesHook) -> Any:
        attempts.append("kube_client")
        raise AssertionError("the sensor reached for the cluster")

    monkeypatch.setattr(BroadcastKubernetesHook, "kube_client", refuse)
    return attempts


@pytest.mark.parametrize("sensor_type", [BroadcastJobSensor, TFJobSensor])
@pytest.mark.parametrize("deferrable", [True, False])
def test_a_forged_job_name_fails_with_a_field_error_and_no_request(
        sensor_type: type[Any], deferrable: bool, no_cluster: list[str]) -> None:
    sensor = sensor_type(task_id="wait", job_name=FORGED, namespace="ns", deferrable=deferrable)

    with pytest.raises(InvalidSpecError) as invalid:
        sensor.execute({"ti": None})

    assert no_cluster == []
    assert f'job_name: Invalid value: "{FORGED}": a lowercase RFC 1123 subdomain' in str(invalid.value)


def test_an_invalid_namespace_fails_the_same_way(no_cluster: list[str]) -> None:
    sensor = BroadcastJobSensor(task_id="wait", job_name="nightly", namespace="kube-system/secrets",
                                deferrable=False)

    with pytest.raises(InvalidSpecError, match=r'namespace: Invalid value: "kube-system/secrets"'):
        sensor.poke({"ti": None})
    assert no_cluster == []


def test_a_non_string_job_name_is_refused(no_cluster: list[str]) -> None:
    sensor = TFJobSensor(task_id="wait", job_name=["a"], namespace="ns")

    with pytest.raises(InvalidSpecError, match=r"job_name: Invalid value: .*must be a string"):
        sensor.execute({"ti": None})
    assert no_cluster == []
