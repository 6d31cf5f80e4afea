"""Real Airflow: the provider is registered, and a deferrable operator runs against the cluster."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from airflow_broadcast import __version__
from devcluster.airflow_env import AirflowEnv


@pytest.mark.airflow
def test_airflow_cli_lists_and_describes_the_provider(airflow_env: AirflowEnv) -> None:
    listed = airflow_env.airflow("providers", "list", "-o", "json")
    packages = {p["package_name"]: p for p in json.loads(listed.stdout)}
    assert packages["airflow-provider-broadcast"]["version"] == __version__

    got = airflow_env.airflow("providers", "get", "airflow-provider-broadcast", "--full", "-o", "json")
    info = json.loads(got.stdout)[0]
    assert info["package-name"] == "airflow-provider-broadcast"
    assert info["versions"] == [__version__]
    assert "airflow_broadcast.triggers.pod_completion" in info["triggers"][0]["python-modules"]
    assert "airflow_broadcast.operators.broadcast_job" in info["operators"][0]["python-modules"]

    triggers = airflow_env.airflow("providers", "triggers", "-o", "json")
    assert "airflow_broadcast.triggers.pod_completion" in triggers.stdout


@pytest.mark.airflow
@pytest.mark.cluster
@pytest.mark.parametrize("outcome", ["Succeeded", "Failed"])
def test_trivial_deferrable_operator_runs_through_dags_test(
    airflow_env: AirflowEnv, core_api: client.CoreV1Api, namespace: str, node_factory: Any, outcome: str,
) -> None:
    node_factory(1)
    result = airflow_env.dags_test("trivial_deferrable", conf={"namespace": namespace, "outcome": outcome})

    pod = core_api.read_namespaced_pod("roundtrip-1", namespace)
    assert pod.status.phase == outcome
    assert result.task_states == {"roundtrip": "success"}, result.output[-3000:]
    assert result.state == "success"
    assert result.xcoms["roundtrip"]["phase"] == outcome
    assert result.xcoms["roundtrip"]["pod"] == "roundtrip-1"
