"""The shared client's own logic: rate limiting, retries and one client per loop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from airflow_broadcast.cluster import api_errors
from airflow_broadcast.cluster.kube_client import KubeClient, RateLimiter
from airflow_broadcast.cluster.shared_clients import clients_on_this_loop, shared_client


async def test_rate_limiter_spaces_requests_beyond_the_burst() -> None:
    limiter = RateLimiter(qps=100, burst=5)
    loop = asyncio.get_running_loop()
    start = loop.time()
    for _ in range(15):
        await limiter.acquire()
    elapsed = loop.time() - start
    # 10 requests past the burst at 100/s need at least ~0.1 s of waiting.
    assert elapsed >= 0.09


class _FlakyClient(KubeClient):
    def __init__(self, failures: list[api_errors.ClusterApiError]) -> None:
        super().__init__(api_client=None, qps=0, max_retries=3)
        self.failures = failures
        self.calls = 0

    async def _request_once(self, *args: Any) -> Any:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return {"ok": True}


async def test_retryable_errors_are_retried_with_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []

    async def fake_sleep(delay: float) -> None:
        sleeps.append(delay)

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    throttled = api_errors.TooManyRequests(429, "TooManyRequests", "slow", retry_after=2.0)
    down = api_errors.ServerError(503, "ServiceUnavailable", "etcd")
    kube = _FlakyClient([throttled, down])
    assert await kube.request("GET", "/x") == {"ok": True}
    assert kube.calls == 3
    assert 2.0 <= sleeps[0] <= 2.4


async def test_non_retryable_errors_surface_at_once() -> None:
    kube = _FlakyClient([api_errors.Invalid(422, "Invalid", "bad")])
    with pytest.raises(api_errors.Invalid):
        await kube.request("POST", "/x", body={})
    assert kube.calls == 1


async def test_shared_client_is_built_once_per_loop_and_key() -> None:
    built: list[int] = []

    class _Api:
        async def close(self) -> None:
            return None

    async def factory() -> Any:
        built.append(1)
        await asyncio.sleep(0)
        return _Api()

    clients = await asyncio.gather(*(shared_client("conn-a", factory) for _ in range(50)))
    assert len({id(c) for c in clients}) == 1
    assert len(built) == 1
    other = await shared_client("conn-b", factory)
    assert other is not clients[0]
    assert clients_on_this_loop() == 2


class _SlowApi:
    """An ApiClient whose answers take a while: counts the requests in flight at once."""

    def __init__(self) -> None:
        self.inflight = 0
        self.peak = 0

    async def call_api(self, *args: Any, **kwargs: Any) -> Any:
        self.inflight += 1
        self.peak = max(self.peak, self.inflight)
        api = self

        class Response:
            status = 200
            headers: dict[str, str] = {}

            async def __aenter__(self) -> Response:
                return self

            async def __aexit__(self, *exc: object) -> None:
                api.inflight -= 1

            async def read(self) -> bytes:
                await asyncio.sleep(0.01)
                return b"{}"

        return Response()


async def test_requests_in_flight_are_capped_so_connections_stay_few() -> None:
    api = _SlowApi()
    kube = KubeClient(api, qps=0, max_inflight=4)
    await asyncio.gather(*(kube.get(f"/x/{i}") for i in range(40)))
    assert api.peak == 4


async def test_each_request_is_counted_by_its_route_without_namespace_or_name() -> None:
    kube = KubeClient(_SlowApi(), qps=0)
    await kube.get("/api/v1/namespaces/ops/configmaps/bcj-a")
    await kube.get("/api/v1/namespaces/ops/configmaps/bcj-b")
    await kube.request("PUT", "/api/v1/namespaces/ops/configmaps/bcj-a", body={})
    await kube.get("/api/v1/nodes", query={"limit": 500})

    assert kube.requests_sent == 4
    assert kube.requests_by_route == {"GET configmaps": 2, "PUT configmaps": 1, "LIST nodes": 1}
