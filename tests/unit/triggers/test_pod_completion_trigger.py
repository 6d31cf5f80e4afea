"""The foundation trigger serialises identifiers only and round-trips."""

from __future__ import annotations

import time

from airflow_broadcast.triggers.pod_completion import PodCompletionTrigger


def test_serialize_round_trip_has_no_credentials() -> None:
    trigger = PodCompletionTrigger(pod_name="p", namespace="ns", kubernetes_conn_id="k8s", deadline=12.5)
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_broadcast.triggers.pod_completion.PodCompletionTrigger"
    assert kwargs == {"pod_name": "p", "namespace": "ns", "kubernetes_conn_id": "k8s", "deadline": 12.5}
    assert PodCompletionTrigger(**kwargs).serialize() == (classpath, kwargs)


async def test_a_passed_deadline_fires_timeout_without_touching_the_cluster() -> None:
    trigger = PodCompletionTrigger(pod_name="p", namespace="ns", deadline=time.time() - 1)
    event = await trigger.run().__anext__()
    assert event.payload["status"] == "timeout"
    assert "deadline" in event.payload["message"]
