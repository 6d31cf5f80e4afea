"""Following the primary pod's log, over real HTTP: a stub API server on loopback, kubernetes_asyncio, KubeClient.

The local kwok cluster serves no pod logs, so the stream itself is tested here at the transport
level: chunks that split lines, timestamps, a dropped stream resumed with sinceTime, the position
stamped on the record, caps on line length and rate, and a log that is not available.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio.client import ApiClient, Configuration
from support.hand_caches import job_pod, pod_object, pods_informer
from support.tf_builders import UID

from airflow_broadcast.cluster import log_follow
from airflow_broadcast.cluster.informers import Informer
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.log_follow import LOGGED_UNTIL, LineBudget, LogFollower, log_time, split_line
from airflow_broadcast.reconcilers.observed import PodInfo
from airflow_broadcast.reconcilers.tf_job.logs import primary_pod

NS, RECORD, POD = "ns", "tfjob-mnist", "mnist-chief-0"
LOG_PATH = f"/api/v1/namespaces/{NS}/pods/{POD}/log"
RECORD_PATH = f"/api/v1/namespaces/{NS}/configmaps/{RECORD}"
T = "2026-12-01T10:00:0{}.{}Z"  # T.format(second, fraction)


@dataclass
class Stub:
    """The API server: scripted log sessions (chunks, or an Event to wait for), and the record's annotations."""

    sessions: list[list[bytes | asyncio.Event]] = field(default_factory=list)
    log_queries: list[dict[str, str]] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)
    version: int = 1
    log_status: int = 200

    async def log(self, request: web.Request) -> web.StreamResponse:
        self.log_queries.append(dict(request.query))
        if self.log_status != 200 or not self.sessions:
            body = {"kind": "Status", "status": "Failure", "code": 404, "reason": "NotFound",
                    "message": "the server could not find the requested resource ( pods/log mnist-chief-0)"}
            return web.json_response(body, status=404)
        response = web.StreamResponse()
        await response.prepare(request)
        for step in self.sessions.pop(0):
            if isinstance(step, asyncio.Event):
                await step.wait()
            else:
                await response.write(step)
        return response

    async def record(self, request: web.Request) -> web.Response:
        """GET, or PUT carrying the resourceVersion it read (a stale one is a 409, as on a real server)."""
        if request.method == "PUT":
            body = json.loads(await request.read())
            if body["metadata"]["resourceVersion"] != str(self.version):
                return web.json_response({"kind": "Status", "code": 409, "reason": "Conflict",
                                          "message": "the object has been modified"}, status=409)
            self.annotations, self.version = dict(body["metadata"]["annotations"]), self.version + 1
        return web.json_response({"metadata": {"name": RECORD, "namespace": NS, "annotations": self.annotations,
                                               "resourceVersion": str(self.version)}})


@pytest.fixture
async def stub() -> AsyncIterator[tuple[Stub, KubeClient]]:
    stub = Stub()
    app = web.Application()
    app.router.add_get(LOG_PATH, stub.log)
    app.router.add_route("*", RECORD_PATH, stub.record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    config = Configuration(host=f"http://127.0.0.1:{port}")
    client = KubeClient(ApiClient(configuration=config), qps=0, max_retries=0)
    yield stub, client
    await client.close()
    await runner.cleanup()


def chief(phase: str = "Running", uid: str = "u-chief") -> PodInfo:
    return job_pod(POD, uid, phase, labels={"training.kubeflow.org/job-role": "master"})


def follower(client: KubeClient, pods: Informer[PodInfo], lines: list[str]) -> LogFollower:
    return LogFollower(client, NS, RECORD, UID, pods, primary_pod, "tensorflow", lines.append)


def line(second: int, fraction: str, text: str) -> bytes:
    return f"{T.format(second, fraction)} {text}\n".encode()


async def until(predicate: Any, what: str, timeout: float = 5.0) -> None:
    end = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < end, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def shown(client: KubeClient, count: int, pod: PodInfo | None = None) -> list[str]:
    """What a follower of the chief (finished, unless `pod` is given) shows, once it has shown `count` lines."""
    pods = pods_informer()
    pods.upsert(pod_object(pod or chief("Succeeded")))
    lines: list[str] = []
    follow = follower(client, pods, lines)
    follow.start()
    await until(lambda: len(lines) >= count, f"{count} lines")
    await follow.finish()
    return lines


async def test_lines_split_across_chunks_are_shown_whole_without_timestamps_and_long_ones_are_cut(stub: Any) -> None:
    server, client = stub
    long = "x" * (log_follow.MAX_LINE_CHARS + 50)
    first, second = line(1, "5", "step 1 loss=0.9"), line(2, "25", "step 2 loss=0.7")
    server.sessions = [[first[:17], first[17:] + second[:9], second[9:], line(3, "0", long), b"no timestamp\n"]]
    lines = await shown(client, 4)

    assert lines[:2] == [f"[{POD}] step 1 loss=0.9", f"[{POD}] step 2 loss=0.7"]
    assert lines[2] == f"[{POD}] {'x' * log_follow.MAX_LINE_CHARS} [...]"
    assert lines[3] == f"[{POD}] no timestamp"
    assert server.log_queries == [{"follow": "true", "timestamps": "true", "container": "tensorflow"}]
    assert len(server.log_queries) == 1  # a finished pod's log is complete when its stream ends


async def test_the_callers_masker_sees_the_whole_line_before_it_is_cut(stub: Any) -> None:
    """A secret that the length cap would cut in half is masked first, so no half of it shows."""
    server, client = stub
    secret = "s3cret-token-5d0e"
    text = "x" * (log_follow.MAX_LINE_CHARS - 5) + secret
    server.sessions = [[line(1, "0", text)]]
    pods = pods_informer()
    pods.upsert(pod_object(chief("Succeeded")))
    lines: list[str] = []
    follow = LogFollower(client, NS, RECORD, UID, pods, primary_pod, "tensorflow", lines.append,
                         mask=lambda t: t.replace(secret, "***"))
    follow.start()
    await until(lambda: lines, "the line")
    await follow.finish()
    assert lines == [f"[{POD}] {'x' * (log_follow.MAX_LINE_CHARS - 5)}***"]


async def test_a_dropped_stream_resumes_with_since_time_and_shows_no_line_twice(stub: Any) -> None:
    server, client = stub
    release = asyncio.Event()
    server.sessions = [
        [line(1, "1", "a"), line(2, "2", "b")],  # ends while the pod still runs: a dropped connection
        [line(2, "2", "b"), line(2, "7", "c"), release, line(3, "0", "d")],  # sinceTime is whole seconds
    ]
    pods = pods_informer()
    pods.upsert(pod_object(chief()))
    lines: list[str] = []
    follow = follower(client, pods, lines)
    follow.start()
    await until(lambda: len(lines) == 3, "three lines")
    pods.upsert(pod_object(chief("Succeeded")))
    release.set()
    await until(lambda: len(lines) == 4, "the last line")
    await follow.finish()

    assert [text.split(" ", 1)[1] for text in lines] == ["a", "b", "c", "d"]
    assert server.log_queries[1] == {"follow": "true", "timestamps": "true", "container": "tensorflow",
                                     "sinceTime": "2026-12-01T10:00:02Z"}


async def test_a_stream_that_brings_nothing_new_is_not_asked_for_again_at_once(
        stub: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kubelet closed the stream (the container exited) before the pod's status says so: back off."""
    server, client = stub
    monkeypatch.setattr(log_follow, "RETRY_SECONDS", (0.2, 0.4))
    server.sessions = [[line(1, "0", "a")]] + [[line(1, "0", "a")] for _ in range(100)]
    pods = pods_informer()
    pods.upsert(pod_object(chief()))
    lines: list[str] = []
    follow = follower(client, pods, lines)
    follow.start()
    await asyncio.sleep(0.7)
    await follow.finish(grace=0.1)
    assert lines == [f"[{POD}] a"]
    assert 2 <= len(server.log_queries) <= 4  # 0 s, then 0.2 s and 0.4 s later, not a request per millisecond


async def test_the_position_is_stamped_on_the_record_and_a_new_follower_resumes_there(stub: Any) -> None:
    server, client = stub
    server.sessions = [[line(1, "1", "a"), line(2, "123456789", "b")]]
    assert len(await shown(client, 2)) == 2
    assert server.annotations == {LOGGED_UNTIL: T.format(2, "123456789")}

    # a restarted trigger, for the same pod, is served the log again from that second on
    server.sessions = [[line(2, "123456789", "b"), line(3, "0", "c")]]
    again = await shown(client, 2)

    assert again == [f"log resumes after {T.format(2, '123456789')} (the lines before were shown in an earlier log "
                     "of this task)", f"[{POD}] c"]
    assert server.log_queries[-1]["sinceTime"] == "2026-12-01T10:00:02Z"


async def test_lines_over_the_rate_cap_are_counted_not_shown(stub: Any) -> None:
    server, client = stub
    more = asyncio.Event()
    server.sessions = [[b"".join(line(1, str(i), f"burst {i}") for i in range(1, 6)), more, line(3, "0", "later")]]
    pods = pods_informer()
    pods.upsert(pod_object(chief("Succeeded")))
    lines: list[str] = []
    now = [100.0]
    follow = follower(client, pods, lines)
    follow.budget = LineBudget(rate=1.0, burst=2, clock=lambda: now[0])
    follow.start()
    await until(lambda: follow.budget.dropped == 3, "three dropped lines")
    now[0] += 1.0
    more.set()
    await until(lambda: len(lines) == 4, "the count and the next line")
    await follow.finish()

    assert lines == [f"[{POD}] burst 1", f"[{POD}] burst 2",
                     f"[{POD}] ... 3 line(s) not shown (more than 20 lines a second)", f"[{POD}] later"]


async def test_an_unavailable_log_is_reported_once_and_retried(stub: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    server, client = stub
    monkeypatch.setattr(log_follow, "RETRY_SECONDS", (0.05, 0.1))
    pods = pods_informer()
    pods.upsert(pod_object(chief()))
    lines: list[str] = []
    follow = follower(client, pods, lines)
    follow.start()
    await until(lambda: len(server.log_queries) >= 3, "three attempts")
    await follow.finish()

    assert len(lines) == 1
    assert lines[0].startswith(f"[{POD}] log not available (Kubernetes API 404 NotFound on GET {LOG_PATH}")


async def test_a_pending_pod_is_not_followed_until_it_starts(stub: Any) -> None:
    server, client = stub
    server.sessions = [[line(1, "0", "started")]]
    pods = pods_informer()
    pods.upsert(pod_object(chief("Pending")))
    lines: list[str] = []
    follow = follower(client, pods, lines)
    follow.start()
    await asyncio.sleep(0.2)
    assert server.log_queries == []
    pods.upsert(pod_object(chief("Succeeded")))
    await until(lambda: lines, "the line")
    await follow.finish()
    assert lines == [f"[{POD}] started"]


def test_log_timestamps_keep_nanoseconds_and_order_across_fraction_lengths() -> None:
    assert log_time("2026-12-01T10:00:00.1Z") == log_time("2026-12-01T10:00:00.100000000Z")
    assert log_time("2026-12-01T10:00:00.1Z") > log_time("2026-12-01T10:00:00.099999999Z")  # type: ignore[operator]
    assert log_time("2026-12-01T10:00:00Z") == 1796119200 * 1_000_000_000
    assert log_time("not a time") is None
    assert split_line(b"2026-12-01T10:00:00Z epoch 1/3\rEpoch 1/3 [=====>] 50%\r") == (
        1796119200 * 1_000_000_000, "2026-12-01T10:00:00Z", "Epoch 1/3 [=====>] 50%")


def test_the_primary_pod_is_the_chief_else_worker_zero_by_the_job_role_label() -> None:
    master = {"training.kubeflow.org/job-role": "master"}
    chief_pod = job_pod("mnist-chief-0", "u1", "Running", labels=master)
    worker = job_pod("mnist-worker-1", "u2", "Running")
    assert primary_pod([worker, chief_pod]) == chief_pod
    assert primary_pod([worker]) is None
    assert primary_pod([replace(chief_pod, deleting=True)]) is None
    newer = replace(chief_pod, uid="u3", created_at=chief_pod.created_at + 60)
    assert primary_pod([chief_pod, newer]) == newer
