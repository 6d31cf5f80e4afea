"""The SDK's pod selection, log reading (follow included) and verbose Events, against a stand-in client (N6, N7).

The real cluster's kwok serves no container logs, so the log text and the follow stream are
asserted here; tests/integration/tfjob/test_tfjob_client_sdk.py runs the same calls on the cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import pytest

from airflow_broadcast.cluster import job_pods
from airflow_broadcast.cluster.api_errors import TransportError
from airflow_broadcast.cluster.job_pods import PodSelection, pod_selector


def pod(name: str, phase: str, containers: tuple[str, ...] = ("tensorflow",), uid: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": uid or f"uid-{name}"}, "status": {"phase": phase},
            "spec": {"containers": [{"name": c} for c in containers]}}


class StandIn:
    """list_all, request_text and stream_lines of a KubeClient, answering from fixed pods, logs and Events."""

    def __init__(self, pods: list[dict[str, Any]], logs: Mapping[str, list[bytes]],
                 events: list[dict[str, Any]] | None = None) -> None:
        self.pods, self.logs, self.events = pods, logs, events or []
        self.lists: list[tuple[str, dict[str, Any]]] = []
        self.reads: list[tuple[str, dict[str, Any]]] = []

    async def list_all(self, path: str, **query: Any) -> tuple[list[dict[str, Any]], str]:
        self.lists.append((path, query))
        if path.endswith("/events"):
            uid = query["fieldSelector"].removeprefix("involvedObject.uid=")
            return [e for e in self.events if e["involvedObject"]["uid"] == uid], "1"
        return list(reversed(self.pods)), "1"

    async def request_text(self, method: str, path: str, *, query: Mapping[str, Any]) -> str:
        self.reads.append((path, dict(query)))
        return b"".join(line + b"\n" for line in self.logs[path.split("/")[-2]]).decode()

    async def stream_lines(self, path: str, *, query: Mapping[str, Any], read_timeout: float,
                           max_line_bytes: int | None = None) -> AsyncGenerator[bytes, None]:
        self.reads.append((path, dict(query)))
        for line in self.logs[path.split("/")[-2]]:
            await asyncio.sleep(0)  # the streams of several pods interleave
            yield line


@pytest.mark.parametrize(("selection", "selector"), [
    (PodSelection(), "training.kubeflow.org/job-name=j"),
    (PodSelection(is_master=True), "training.kubeflow.org/job-name=j,training.kubeflow.org/job-role=master"),
    (PodSelection(replica_type="PS"), "training.kubeflow.org/job-name=j,training.kubeflow.org/replica-type=ps"),
    (PodSelection(replica_type="Evaluator", replica_index=0),
     "training.kubeflow.org/job-name=j,training.kubeflow.org/replica-type=evaluator,"
     "training.kubeflow.org/replica-index=0"),
])
def test_N6_tfjob_pods_are_selected_by_the_sdks_labels(selection: PodSelection, selector: str) -> None:
    assert selection.selector("TFJob", "j") == selector


def test_N6_a_filter_the_kind_has_no_label_for_is_a_value_error() -> None:
    assert pod_selector("BroadcastJob", "b") == "broadcastjob-name=b"
    with pytest.raises(ValueError, match="BroadcastJob's pods have no master"):
        pod_selector("BroadcastJob", "b", is_master=True)
    with pytest.raises(ValueError, match="replica_type must be one of"):
        pod_selector("TFJob", "j", replica_type="Launcher")
    for index in (-1, True, "0"):
        with pytest.raises(ValueError, match="replica_index must be an integer >= 0"):
            pod_selector("TFJob", "j", replica_index=index)  # type: ignore[arg-type]


async def test_N7_logs_of_the_tensorflow_container_of_started_pods_only() -> None:
    pods = [pod("j-chief-0", "Succeeded", ("sidecar", "tensorflow")), pod("j-worker-0", "Running"),
            pod("j-worker-1", "Pending")]
    api = StandIn(pods, {"j-chief-0": [b"a", b"b"], "j-worker-0": [b"w"]})

    logs = await job_pods.job_logs(api, "TFJob", "ns", "j")  # type: ignore[arg-type]

    assert logs == {"j-chief-0": "a\nb\n", "j-worker-0": "w\n"}, "sorted by name; the Pending pod is not asked"
    assert {q["container"] for _, q in api.reads} == {"tensorflow"}
    assert api.lists == [("/api/v1/namespaces/ns/pods", {"labelSelector": "training.kubeflow.org/job-name=j"})]


async def test_N7_follow_streams_every_pod_to_the_sink_until_its_log_ends() -> None:
    pods = [pod("b-x", "Running", ("probe", "helper")), pod("b-y", "Failed", ("probe",))]
    api = StandIn(pods, {"b-x": [b"1", b"2", b"3"], "b-y": [b"only"]})
    printed: list[str] = []

    logs = await job_pods.job_logs(api, "BroadcastJob", "ns", "b", follow=True, sink=printed.append)  # type: ignore[arg-type]

    assert logs == {"b-x": "1\n2\n3\n", "b-y": "only\n"}
    assert sorted(printed) == ["[Pod b-x]: 1", "[Pod b-x]: 2", "[Pod b-x]: 3", "[Pod b-y]: only"]
    assert printed.index("[Pod b-y]: only") < printed.index("[Pod b-x]: 3"), "the pods are followed at once"
    assert all(q == {"container": "probe", "follow": "true"} for _, q in api.reads), "a BroadcastJob pod's first"


async def test_N7_verbose_events_of_the_job_and_its_pods_oldest_first() -> None:
    events = [
        {"involvedObject": {"uid": "rec"}, "type": "Normal", "reason": "SuccessfulCreatePod",
         "message": "Created pod: j-worker-0", "lastTimestamp": "2026-01-01T00:00:02Z"},
        {"involvedObject": {"uid": "rec"}, "type": "Normal", "reason": "JobCreated", "message": "made",
         "lastTimestamp": "2026-01-01T00:00:01Z"},
        {"involvedObject": {"uid": "uid-j-worker-0"}, "type": "Warning", "reason": "FailedScheduling",
         "message": "0/3 nodes", "eventTime": "2026-01-01T00:00:03.000000Z"},
        {"involvedObject": {"uid": "someone-else"}, "type": "Normal", "reason": "Other", "message": "x"},
    ]
    api = StandIn([], {}, events)

    found = await job_pods.job_events(api, "TFJob", "ns", {"metadata": {"name": "j", "uid": "rec"}},  # type: ignore[arg-type]
                                      [pod("j-worker-0", "Pending")])

    assert found == {
        "TFJob j": ["2026-01-01T00:00:01Z Normal JobCreated: made",
                    "2026-01-01T00:00:02Z Normal SuccessfulCreatePod: Created pod: j-worker-0"],
        "Pod j-worker-0": ["2026-01-01T00:00:03.000000Z Warning FailedScheduling: 0/3 nodes"],
    }


class Slow(StandIn):
    """Counts the logs read at once; the stream of `broken` fails after its first line."""

    def __init__(self, *args: Any, broken: str = "") -> None:
        super().__init__(*args)
        self.broken, self.inflight, self.most = broken, 0, 0

    async def request_text(self, method: str, path: str, *, query: Mapping[str, Any]) -> str:
        self.inflight += 1
        self.most = max(self.most, self.inflight)
        await asyncio.sleep(0.01)
        self.inflight -= 1
        return await super().request_text(method, path, query=query)

    async def stream_lines(self, path: str, *, query: Mapping[str, Any], read_timeout: float,
                           max_line_bytes: int | None = None) -> AsyncGenerator[bytes, None]:
        self.inflight += 1
        self.most = max(self.most, self.inflight)
        try:
            async for line in super().stream_lines(path, query=query, read_timeout=read_timeout):
                yield line
                if path.split("/")[-2] == self.broken:
                    raise TransportError(0, "Unreachable", "ClientPayloadError: cut", verb="GET", target=path)
        finally:
            self.inflight -= 1


async def test_N7_logs_are_read_a_few_at_a_time_and_many_pods_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_pods, "MAX_LOG_REQUESTS", 2)
    pods = [pod(f"b-{i}", "Succeeded", ("c",)) for i in range(5)]
    api = Slow(pods, {f"b-{i}": [b"x"] for i in range(5)})

    logs = await job_pods.job_logs(api, "BroadcastJob", "ns", "b", tail_lines=20)  # type: ignore[arg-type]

    assert len(logs) == 5 and api.most == 2
    assert all(q == {"tailLines": 20, "container": "c"} for _, q in api.reads)
    with pytest.raises(ValueError, match="5 pods of BroadcastJob ns/b have logs, more than max_pods=4"):
        await job_pods.job_logs(api, "BroadcastJob", "ns", "b", max_pods=4)  # type: ignore[arg-type]


async def test_N7_a_followed_log_keeps_its_tail_and_a_broken_stream_is_told_not_raised(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_pods, "FOLLOW_KEEP_LINES", 2)
    pods = [pod("b-x", "Running", ("c",)), pod("b-y", "Running", ("c",))]
    api = Slow(pods, {"b-x": [b"1", b"2", b"3"], "b-y": [b"a", b"b"]}, broken="b-y")
    printed: list[str] = []

    logs = await job_pods.job_logs(api, "BroadcastJob", "ns", "b", follow=True, sink=printed.append)  # type: ignore[arg-type]

    assert logs == {"b-x": "2\n3\n", "b-y": "a\n"}, "the last FOLLOW_KEEP_LINES lines of each"
    assert "[Pod b-x]: 1" in printed, "every line went to the sink as it came"
    assert "[Pod b-y]: <log stream ended: Kubernetes API 0 Unreachable on GET /api/v1/namespaces/ns/pods/b-y/log: " \
           "ClientPayloadError: cut>" in printed
