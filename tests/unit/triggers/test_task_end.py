"""`finish_in_triggerer`: a succeeded job ends its task in the triggerer; anything else resumes on a worker."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from airflow.triggers.base import TaskSuccessEvent
from support.fake_api import RecordStore, job_record

from airflow_broadcast.cluster.job_records import EXPIRES_AT, RESULT_READ
from airflow_broadcast.cluster.reconcile_loop import LoopOutcome, LoopReason
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.specs.timestamps import to_rfc3339
from airflow_broadcast.triggers.task_end import success_event

LOG = logging.getLogger(__name__)


class Store(RecordStore):
    async def get(self, path: str, **query: Any) -> dict[str, Any]:
        from airflow_broadcast.cluster.api_errors import NotFound

        name = path.rsplit("/", 1)[-1]
        if name not in self.records:
            raise NotFound(404, "NotFound", f"configmaps {name} not found", verb="GET", target=path)
        return self.records[name]


class Kind:
    """A job kind whose summary is the record's phase, failed when the phase says so."""

    name = "BroadcastJob"

    def summary(self, record: JobRecord) -> dict[str, Any]:
        return {"name": record.job_name or record.name, "phase": record.annotations.get("phase", "completed")}

    def failure(self, summary: Mapping[str, Any]) -> str:
        return "the job failed" if summary["phase"] == "failed" else ""


def outcome(reason: LoopReason, raw: Mapping[str, Any]) -> LoopOutcome:
    meta = raw["metadata"]
    record = JobRecord(name=meta["name"], namespace=meta["namespace"], uid=meta["uid"], owner_reference={},
                       annotations=dict(meta["annotations"]), raw=raw)
    return LoopOutcome(reason, record)


async def end(store: Store, reason: LoopReason, name: str = "bcj-nightly", uid: str | None = None) -> Any:
    raw = store.records[name]
    return await success_event(store, Kind(), "ns", name, uid or raw["metadata"]["uid"],  # type: ignore[arg-type]
                               outcome(reason, raw), LOG)


async def test_a_succeeded_job_ends_the_task_with_its_summary_as_the_xcom_and_marks_the_result_read() -> None:
    expires = to_rfc3339(time.time() + 600)
    store = Store(job_record("BroadcastJob", "nightly", **{EXPIRES_AT: expires}))
    event = await end(store, LoopReason.FINISHED)
    assert isinstance(event, TaskSuccessEvent)
    assert event.xcoms == {"return_value": {"name": "nightly", "phase": "completed"}}  # read afresh
    assert store.records["bcj-nightly"]["metadata"]["annotations"][RESULT_READ] == "true"


async def test_a_settled_never_job_also_ends_in_the_triggerer() -> None:
    store = Store(job_record("BroadcastJob", "nightly"))
    assert isinstance(await end(store, LoopReason.SETTLED), TaskSuccessEvent)


async def test_an_expired_ttl_deletes_the_record_before_the_task_ends() -> None:
    store = Store(job_record("BroadcastJob", "nightly", **{EXPIRES_AT: to_rfc3339(time.time() - 1)}))
    assert isinstance(await end(store, LoopReason.FINISHED), TaskSuccessEvent)
    assert store.records == {}


async def test_a_failed_job_timeout_or_error_resumes_on_the_worker_and_touches_nothing() -> None:
    failed = Store(job_record("BroadcastJob", "nightly", phase="failed"))
    assert await end(failed, LoopReason.FINISHED) is None
    for reason in (LoopReason.TIMEOUT, LoopReason.ERROR, LoopReason.GONE, LoopReason.STARTUP_TIMEOUT):
        store = Store(job_record("BroadcastJob", "nightly"))
        assert await end(store, reason) is None
        assert RESULT_READ not in store.records["bcj-nightly"]["metadata"]["annotations"]


async def test_a_record_replaced_under_the_same_name_resumes_on_the_worker() -> None:
    store = Store(job_record("BroadcastJob", "nightly"))
    assert await end(store, LoopReason.FINISHED, uid="another-uid") is None
