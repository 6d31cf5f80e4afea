"""What an idle job holds while it waits: its cached record, not a parsed view of it nor its parsed spec
(1,000 jobs per triggerer)."""

from __future__ import annotations

import asyncio
import gc

import pytest
from support import bcj_builders
from support.fake_engine import NAMESPACE, fake_engine

from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.specs.broadcast_job.spec import BroadcastJobSpec


def specs_named(name: str) -> list[BroadcastJobSpec]:
    gc.collect()
    return [o for o in gc.get_objects() if type(o) is BroadcastJobSpec and o.name == name]


def views_of(uid: str, besides: JobRecord) -> list[JobRecord]:
    gc.collect()
    return [o for o in gc.get_objects() if type(o) is JobRecord and o.uid == uid and o is not besides]


async def test_an_idle_job_with_a_small_status_keeps_no_parsed_view_of_its_record(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async with fake_engine(monkeypatch) as env:
        env.fake.add_node("node-0")
        submission = await env.submit(bcj_builders.manifest(name="idle", namespace=NAMESPACE))
        loop = env.start(submission, "BroadcastJob")
        [pod] = await env.wait_pods(1)
        env.fake.set_pod_phase(NAMESPACE, pod["metadata"]["name"], "Running")
        await env.fake.wait_for(lambda: env.status("BroadcastJob", "idle").get("active") == 1, what="running")
        await asyncio.sleep(0.1)  # the pass after the pod's update has gone back to waiting

        assert views_of(submission.uid, submission) == []
        assert specs_named("idle") == [], "a quiet resync drops the parsed spec; the next pass parses again"
        assert not loop.done()
        env.fake.set_pod_phase(NAMESPACE, pod["metadata"]["name"], "Succeeded")
        outcome = await asyncio.wait_for(loop, 5)
        assert outcome.reason == "finished"  # the next pass read the record again and finished the job
