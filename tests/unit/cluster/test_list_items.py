"""A LIST page keeps its items raw: a relist reads each item's name and version and parses only what changed."""

from __future__ import annotations

import json
import threading
from typing import Any

import msgspec
import pytest
from support.fake_http import Response

from airflow_broadcast.cluster import informers, list_items
from airflow_broadcast.cluster.api_errors import TransportError
from airflow_broadcast.cluster.informers import Informer
from airflow_broadcast.cluster.list_items import metadata_of, object_of, parse_page, read_page
from airflow_broadcast.cluster.observation import pod_info

LABELS = {"airflow-broadcast.io/job-uid": "u1"}


def _pod(name: str, version: int, phase: str = "Running") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(version), "labels": LABELS},
            "spec": {"nodeName": "n1"}, "status": {"phase": phase}}


def _page(*pods: dict[str, Any], version: str = "30") -> bytes:
    return json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": version},
                       "items": list(pods)}).encode()


def test_a_page_keeps_its_items_raw_and_reads_their_metadata_alone() -> None:
    page = parse_page(_page(_pod("a", 11), _pod("b", 12)))

    assert page["metadata"] == {"resourceVersion": "30"}
    assert all(isinstance(item, msgspec.Raw) for item in page["items"])
    assert [metadata_of(item) for item in page["items"]] == [
        {"name": "a", "namespace": "ns", "resourceVersion": "11"},
        {"name": "b", "namespace": "ns", "resourceVersion": "12"}]
    assert object_of(page["items"][1]) == _pod("b", 12)


def test_a_page_msgspec_refuses_is_parsed_by_json_into_dicts() -> None:
    raw = _page(_pod("a", 11)).replace(b'"Running"', b"NaN")

    page = parse_page(raw)

    assert page["items"][0]["status"]["phase"] != page["items"][0]["status"]["phase"]  # NaN, as json reads it
    assert metadata_of(page["items"][0])["name"] == "a" and object_of(page["items"][0]) is page["items"][0]


def test_an_empty_list_and_a_missing_namespace() -> None:
    assert parse_page(b'{"metadata": {"resourceVersion": "5"}, "items": null}')["items"] == []
    item = parse_page(b'{"items": [{"metadata": {"name": "node-1", "namespace": null}}]}')["items"][0]
    assert metadata_of(item) == {"name": "node-1", "namespace": "", "resourceVersion": ""}


async def test_a_page_that_is_not_json_is_a_transport_failure_and_a_large_one_is_parsed_off_the_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TransportError, match="is not JSON"):
        await read_page(b'{"items": [', "/api/v1/pods")
    threads: list[str] = []
    real = list_items.parse_page

    def spy(raw: bytes) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        return real(raw)

    monkeypatch.setattr(list_items, "parse_page", spy)
    monkeypatch.setattr(list_items, "OFFLOAD_PARSE_BYTES", 1024)
    large = await read_page(_page(*(_pod(f"p{i}", i) for i in range(20))), "/api/v1/pods")
    small = await read_page(_page(_pod("a", 1)), "/api/v1/pods")
    assert len(large["items"]) == 20 and len(small["items"]) == 1
    assert threads[0] != threading.current_thread().name and threads[1] == threading.current_thread().name


async def test_a_relist_parses_only_the_items_newer_than_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    class _Pages:
        async def list_pages(self, path: str, **query: Any) -> Any:
            assert query.pop("lazy_items") is True
            yield parse_page(_page(_pod("a", 11), _pod("b", 15, "Succeeded")))

    informer: Informer[Any] = Informer(client=_Pages(), path="/pods", transform=pod_info,  # type: ignore[arg-type]
                                       index_label="airflow-broadcast.io/job-uid")
    informer.upsert(_pod("a", 11))
    informer.upsert(_pod("b", 12))
    held_a = informer.values["ns/a"]
    parsed: list[str] = []

    def counting(item: Any) -> dict[str, Any]:
        obj = object_of(item)
        parsed.append(obj["metadata"]["name"])
        return obj

    monkeypatch.setattr(informers, "object_of", counting)

    await informer._relist()

    assert parsed == ["b"]  # "a" is held at its listed version: never parsed
    assert informer.values["ns/a"] is held_a
    assert informer.values["ns/b"].phase == "Succeeded"


class _CutOnceApi:
    """An ApiClient whose first answer is cut in half on the way, as a broken connection or proxy would."""

    def __init__(self, body: bytes) -> None:
        self.body, self.calls = body, 0

    async def call_api(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return Response(200, self.body[: len(self.body) // 2] if self.calls == 1 else self.body)


async def test_a_page_cut_short_is_asked_for_again_like_any_answer() -> None:
    from airflow_broadcast.cluster import kube_client

    api = _CutOnceApi(_page(_pod("a", 11), _pod("b", 12)))
    kube = kube_client.KubeClient(api, qps=0)

    pages = [page async for page in kube.list_pages("/api/v1/namespaces/ns/pods", lazy_items=True)]

    assert api.calls == 2
    assert [metadata_of(item)["name"] for item in pages[0]["items"]] == ["a", "b"]
