"""The event spam filter keeps large jobs from doubling their API writes, but never drops job-level events."""

from __future__ import annotations

from typing import Any

from airflow_broadcast.cluster import job_events
from airflow_broadcast.cluster.job_events import SPAM_BURST, EventRecorder, flush_events
from airflow_broadcast.reconcilers.plan import JobEvent


class _Recorder:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def request(self, method: str, path: str, *, body: dict[str, Any], retry: bool) -> dict[str, Any]:
        self.bodies.append(body)
        return {}


async def test_per_child_events_are_capped_per_object_but_job_events_always_pass(monkeypatch: Any) -> None:
    monkeypatch.setattr(job_events, "_spam", job_events._SpamFilter())
    client = _Recorder()
    record = {"metadata": {"name": "bcj-x", "namespace": "ns", "uid": "u1"}}
    recorder = EventRecorder(client, record)  # type: ignore[arg-type]
    creates = [JobEvent("Normal", "SuccessfulCreate", f"Created pod: p{i}") for i in range(100)]
    await recorder.record([*creates, JobEvent("Normal", "JobComplete", "Job ns/x is completed")])
    await flush_events("u1")

    reasons = [b["reason"] for b in client.bodies]
    assert reasons.count("SuccessfulCreate") == SPAM_BURST
    assert reasons.count("JobComplete") == 1
    assert recorder.dropped == 100 - SPAM_BURST
    assert client.bodies[0]["involvedObject"] == {"apiVersion": "v1", "kind": "ConfigMap", "name": "bcj-x",
                                                  "namespace": "ns", "uid": "u1"}


async def test_another_object_has_its_own_burst(monkeypatch: Any) -> None:
    monkeypatch.setattr(job_events, "_spam", job_events._SpamFilter())
    client = _Recorder()
    for uid in ("a", "b"):
        recorder = EventRecorder(client, {"metadata": {"name": uid, "namespace": "ns", "uid": uid}})  # type: ignore[arg-type]
        await recorder.record([JobEvent("Normal", "SuccessfulCreate", "x")] * 30)
    await flush_events("a")
    await flush_events("b")
    assert len(client.bodies) == 2 * SPAM_BURST


async def test_a_flush_waits_for_its_own_records_events_only() -> None:
    import asyncio

    class _Slow(_Recorder):
        def __init__(self) -> None:
            super().__init__()
            self.gate = asyncio.Event()

        async def request(self, method: str, path: str, *, body: dict[str, Any], retry: bool) -> dict[str, Any]:
            if body["involvedObject"]["uid"] == "other":
                await self.gate.wait()
            return await super().request(method, path, body=body, retry=retry)

    client = _Slow()
    for uid in ("mine", "other"):
        recorder = EventRecorder(client, {"metadata": {"name": uid, "namespace": "ns", "uid": uid}})  # type: ignore[arg-type]
        await recorder.record([JobEvent("Normal", "JobComplete", uid)])
    await asyncio.wait_for(flush_events("mine"), 1.0)  # not held by the other job's slow post
    assert [b["message"] for b in client.bodies] == ["mine"]
    client.gate.set()
    await flush_events("other")
    assert [b["message"] for b in client.bodies] == ["mine", "other"]
    assert not job_events._pending
