"""PodCompletionTrigger serialises identifiers only, round-trips, and reads the pod through the right cluster."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from airflow_broadcast.triggers import pod_completion
from airflow_broadcast.triggers.pod_completion import PodCompletionTrigger


class _Client:
    """A cluster holding one pod: the LIST returns it, the watch then reports `events`."""

    def __init__(self, pod: dict[str, Any] | None, events: list[tuple[str, dict[str, Any]]]) -> None:
        self.pod, self.events = pod, events
        self.listed: list[tuple[str, dict[str, Any]]] = []

    async def list_all(self, path: str, **query: Any) -> tuple[list[dict[str, Any]], str]:
        self.listed.append((path, query))
        return ([self.pod] if self.pod else []), "7"

    async def watch(self, path: str, *, resource_version: str, **query: Any) -> AsyncIterator[tuple[str, Any]]:
        for event in self.events:
            yield event


def _install_hook(monkeypatch: pytest.MonkeyPatch, client: _Client) -> list[tuple[str, str | None]]:
    """Replace the hook; returns the (connection, context) of every hook the trigger builds."""
    built: list[tuple[str, str | None]] = []

    class _Hook:
        def __init__(self, kubernetes_conn_id: str, cluster_context: str | None = None) -> None:
            built.append((kubernetes_conn_id, cluster_context))

        async def kube_client(self) -> _Client:
            return client

    monkeypatch.setattr(pod_completion, "BroadcastKubernetesHook", _Hook)
    return built


def _pod(phase: str) -> dict[str, Any]:
    terminated = {"reason": "Completed", "exitCode": 0}
    return {"metadata": {"name": "p"}, "status": {"phase": phase, "containerStatuses": [
        {"state": {"terminated": terminated} if phase == "Succeeded" else {}}]}}


def test_serialize_round_trip_has_no_credentials() -> None:
    trigger = PodCompletionTrigger(pod_name="p", namespace="ns", kubernetes_conn_id="k8s", deadline=12.5,
                                   cluster_context="prod")
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_broadcast.triggers.pod_completion.PodCompletionTrigger"
    assert kwargs == {"pod_name": "p", "namespace": "ns", "kubernetes_conn_id": "k8s", "deadline": 12.5,
                      "cluster_context": "prod"}
    assert PodCompletionTrigger(**kwargs).serialize() == (classpath, kwargs)


def test_cluster_context_defaults_to_the_connections_own() -> None:
    assert PodCompletionTrigger(pod_name="p", namespace="ns").serialize()[1]["cluster_context"] is None


async def test_the_pod_is_read_through_the_given_connection_and_cluster_context(
        monkeypatch: pytest.MonkeyPatch) -> None:
    client = _Client(_pod("Succeeded"), [])
    built = _install_hook(monkeypatch, client)
    trigger = PodCompletionTrigger(pod_name="p", namespace="ns", kubernetes_conn_id="k8s", cluster_context="prod")
    event = await trigger.run().__anext__()
    assert built == [("k8s", "prod")]
    assert client.listed == [("/api/v1/namespaces/ns/pods", {"fieldSelector": "metadata.name=p"})]
    assert event.payload["status"] == "success"
    assert event.payload["phase"] == "Succeeded"
    assert event.payload["reason"] == "Completed (exit code 0)"


async def test_a_pod_finishing_during_the_watch_fires_success(monkeypatch: pytest.MonkeyPatch) -> None:
    _install_hook(monkeypatch, _Client(_pod("Running"), [("MODIFIED", _pod("Running")), ("MODIFIED", _pod("Failed"))]))
    event = await PodCompletionTrigger(pod_name="p", namespace="ns").run().__anext__()
    assert (event.payload["status"], event.payload["phase"]) == ("success", "Failed")


async def test_a_missing_pod_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _install_hook(monkeypatch, _Client(None, []))
    event = await PodCompletionTrigger(pod_name="p", namespace="ns").run().__anext__()
    assert event.payload["status"] == "error"
    assert event.payload["message"] == "pod ns/p was deleted: not found"


async def test_a_passed_deadline_fires_timeout_without_touching_the_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    built = _install_hook(monkeypatch, _Client(_pod("Running"), []))
    trigger = PodCompletionTrigger(pod_name="p", namespace="ns", deadline=time.time() - 1)
    event = await trigger.run().__anext__()
    assert event.payload["status"] == "timeout"
    assert "deadline" in event.payload["message"]
    assert built == []
