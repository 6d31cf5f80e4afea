"""API paths are built only from names Kubernetes allows; anything else is refused before a request."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_broadcast.cluster.api_paths import InvalidApiPath, api_path, request_route
from airflow_broadcast.cluster.job_records import get_record
from airflow_broadcast.cluster.kinds.tf_job import local_queue_path
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.pod_logs import cap_tail, log_tails

FORGED = "../../../namespaces/kube-system/secrets/x?"


class RecordingTransport:
    """Stands where kubernetes_asyncio's ApiClient stands; fails the test if anything is sent."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    async def call_api(self, path: str, method: str, **_: Any) -> Any:
        self.paths.append(path)
        raise AssertionError(f"a request was sent: {method} {path}")

    async def close(self) -> None:
        return None


@pytest.mark.parametrize(("args", "kwargs", "path"), [
    (("v1", "pods"), {"namespace": "ns"}, "/api/v1/namespaces/ns/pods"),
    (("v1", "pods"), {"namespace": "ns", "name": "job-a.b", "subresource": "log"},
     "/api/v1/namespaces/ns/pods/job-a.b/log"),
    (("v1", "nodes"), {}, "/api/v1/nodes"),
    (("scheduling.x-k8s.io/v1alpha1", "podgroups"), {"namespace": "ml", "name": "train"},
     "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups/train"),
])
def test_valid_segments_build_the_usual_paths(args: tuple[str, str], kwargs: dict[str, str], path: str) -> None:
    assert api_path(*args, **kwargs) == path


@pytest.mark.parametrize(("kwargs", "what"), [
    ({"namespace": "ns", "name": FORGED}, "name of pods"),
    ({"namespace": "ns", "name": "a/b"}, "name of pods"),
    ({"namespace": "ns", "name": ".."}, "name of pods"),
    ({"namespace": "ns", "name": "Pod"}, "name of pods"),
    ({"namespace": "ns", "name": "a%2F.."}, "name of pods"),
    ({"namespace": "ns", "name": ""}, "name of pods"),
    ({"namespace": "kube-system/secrets"}, "namespace"),
    ({"namespace": "a.b"}, "namespace"),
    ({"namespace": "ns", "name": "x", "subresource": "../exec"}, "subresource"),
])
def test_anything_else_is_refused_with_what_was_wrong(kwargs: dict[str, str], what: str) -> None:
    with pytest.raises(InvalidApiPath, match="refused to request the Kubernetes API") as refused:
        api_path("v1", "pods", **kwargs)
    assert refused.value.what == what
    assert refused.value.problems


def test_a_non_string_name_is_refused() -> None:
    with pytest.raises(InvalidApiPath, match="must be a string, not int"):
        api_path("v1", "pods", namespace="ns", name=7)  # type: ignore[arg-type]


def test_api_group_and_version_are_checked() -> None:
    with pytest.raises(InvalidApiPath, match="API group"):
        api_path("../v1", "podgroups", namespace="ns")
    with pytest.raises(InvalidApiPath, match="API version"):
        api_path("scheduling.x-k8s.io/v1/../..", "podgroups", namespace="ns")


def test_record_and_queue_paths_refuse_forged_names() -> None:
    with pytest.raises(InvalidApiPath):
        local_queue_path("ns", FORGED)


async def test_a_forged_pod_name_sends_no_log_request_for_any_pod() -> None:
    transport = RecordingTransport()
    client = KubeClient(transport, qps=0)

    with pytest.raises(InvalidApiPath, match=r"name of pods '\.\./\.\./\.\./namespaces/kube-system/secrets/x\?'"):
        await log_tails(client, "ns", ["job-ok-1", FORGED], container="main")

    assert transport.paths == []  # not even for the valid name listed before it


async def test_a_forged_record_name_sends_no_request() -> None:
    transport = RecordingTransport()
    with pytest.raises(InvalidApiPath):
        await get_record(KubeClient(transport, qps=0), "ns", f"bcj-{FORGED}")
    assert transport.paths == []


@pytest.mark.parametrize(("text", "lines", "max_bytes", "tail"), [
    ("a\nb\nc\nd", 2, 100, "c\nd"),
    ("a\nb\nc\nd", 10, 3, "c\nd"),
    ("héllo", 5, 4, "llo"),  # the cut 'é' (2 bytes) is dropped, not half-decoded
    ("x", 0, 10, ""),
])
def test_log_tails_are_capped_in_lines_and_bytes(text: str, lines: int, max_bytes: int, tail: str) -> None:
    assert cap_tail(text, lines, max_bytes) == tail


@pytest.mark.parametrize(("verb", "path", "route"), [
    ("GET", "/api/v1/namespaces/ops/pods", "LIST pods"),
    ("WATCH", "/api/v1/namespaces/ops/pods?watch=1", "WATCH pods"),
    ("GET", "/api/v1/namespaces/ops/pods/bcj-x-1/log", "GET pods/log"),
    ("PATCH", "/apis/scheduling.volcano.sh/v1beta1/namespaces/ops/podgroups/tf", "PATCH podgroups"),
    ("GET", "/api/v1/nodes", "LIST nodes"),
    ("GET", "/api/v1/namespaces/ops", "GET namespaces"),
    ("GET", "/version", "GET version"),
])
def test_a_request_route_drops_the_namespace_and_the_name(verb: str, path: str, route: str) -> None:
    assert request_route(verb, path) == route


async def test_each_failed_pod_is_tailed_in_its_own_container_where_one_is_named() -> None:
    """A pod that failed in an init container has nothing in its main container's log: tail the init one."""

    class Logs(KubeClient):
        def __init__(self) -> None:
            self.asked: list[tuple[str, Any]] = []

        async def request_text(self, method: str, path: str, *, query: Any = None, **_: Any) -> str:
            self.asked.append((path.split("/")[-2], (query or {}).get("container")))
            return "line"

    client = Logs()
    tails = await log_tails(client, "ns", ["job-a", "job-b"], container="main", containers={"job-b": "check"})
    assert tails == {"job-a": "line", "job-b": "line"}
    assert sorted(client.asked) == [("job-a", "main"), ("job-b", "check")]
