"""How the shared client turns an answer's bytes into objects: fast, and exactly as json would."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from airflow_broadcast.cluster import kube_client
from airflow_broadcast.cluster.api_errors import TransportError

POD_EVENT = {
    "type": "MODIFIED",
    "object": {
        "metadata": {"name": "bench-e28df25f44", "resourceVersion": "98765432109876543210",
                     "labels": {"broadcastjob-name": "nightly", "ünïcode": "välue ✓"},
                     "managedFields": [{"fieldsV1": {"f:spec": {"k:{\"name\":\"c\"}": {".": {}}}}}]},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "10m", "memory": 1.5e3}}}],
                 "priority": -2147483648, "tolerations": []},
        "status": {"phase": "Running", "ready": True, "message": None, "escaped": "a\"b\\c\n\t\u0001"},
    },
}


async def test_an_event_parses_to_what_json_gives() -> None:
    raw = json.dumps(POD_EVENT).encode()
    parsed = await kube_client._parse_body(raw, "WATCH", "/api/v1/pods")
    assert parsed == json.loads(raw)
    assert type(parsed["object"]["spec"]["containers"][0]["resources"]["requests"]["memory"]) is float


@pytest.mark.parametrize("raw", [b'{"x": NaN}', b'{"x": Infinity}', b'{"x": "\\ud800"}', b'{"x": 1e400}'])
async def test_what_the_fast_parser_refuses_parses_as_json_does(raw: bytes) -> None:
    parsed = await kube_client._parse_body(raw, "GET", "/x")
    assert repr(parsed) == repr(json.loads(raw))


@pytest.mark.parametrize("raw", [b'{"items": [', b"<html>502 Bad Gateway</html>", b'{"a": 1} trailing'])
async def test_a_mangled_answer_is_a_retryable_transport_failure(raw: bytes) -> None:
    with pytest.raises(TransportError) as caught:
        await kube_client._parse_body(raw, "GET", "/api/v1/pods")
    assert caught.value.reason == "Malformed"
    assert caught.value.retryable
    assert f"({len(raw)} bytes) is not JSON" in str(caught.value.describe())


async def test_a_large_answer_is_parsed_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[str] = []
    real = kube_client._loads

    def spy(raw: bytes) -> Any:
        threads.append(threading.current_thread().name)
        return real(raw)

    monkeypatch.setattr(kube_client, "_loads", spy)
    big = json.dumps({"items": [POD_EVENT["object"]] * 1000}).encode()
    assert len(big) > kube_client._OFFLOAD_PARSE_BYTES
    assert await kube_client._parse_json(big) == json.loads(big)
    assert await kube_client._parse_json(b'{"small": true}') == {"small": True}
    assert threads[0] != threading.main_thread().name
    assert threads[1] == threading.main_thread().name
