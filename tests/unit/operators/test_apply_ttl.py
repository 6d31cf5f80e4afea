"""The task that reads a result applies the TTL the reconciler stamped: delete now if expired, else mark it read."""

from __future__ import annotations

import logging
import time
from typing import Any

from support.fake_api import RecordStore, job_record

from airflow_broadcast.cluster import api_errors as e
from airflow_broadcast.cluster.job_records import EXPIRES_AT, RESULT_READ
from airflow_broadcast.cluster.job_results import result_read
from airflow_broadcast.specs.timestamps import to_rfc3339

LOG = logging.getLogger(__name__)


async def read_result(store: RecordStore, name: str) -> None:
    await result_read(store, store.records[name], LOG)


async def test_T1_T4_an_expired_stamp_deletes_the_record_right_after_the_result_is_read() -> None:
    store = RecordStore(job_record("TFJob", "mnist", **{EXPIRES_AT: to_rfc3339(time.time() - 1)}))
    await read_result(store, "tfjob-mnist")
    assert store.records == {}
    assert store.events == [("SuccessfulDeleteJob", "Deleted job: mnist")]


async def test_T1_an_unexpired_stamp_marks_the_result_read_and_leaves_the_record_to_the_sweeper() -> None:
    expires = to_rfc3339(time.time() + 600)
    store = RecordStore(job_record("BroadcastJob", "nightly", **{EXPIRES_AT: expires}))
    await read_result(store, "bcj-nightly")
    assert store.records["bcj-nightly"]["metadata"]["annotations"] == {EXPIRES_AT: expires, RESULT_READ: "true"}


async def test_T3_a_record_without_the_stamp_has_no_ttl() -> None:
    record = job_record("BroadcastJob", "keep")
    store = RecordStore(record)
    await read_result(store, "bcj-keep")
    assert store.records == {"bcj-keep": record} and record["metadata"]["annotations"] == {}


class _MovedOn(RecordStore):
    """The trigger's last write lands between the task's read of the record and its mark: one 409."""

    def __init__(self, *records: dict[str, Any], conflicts: int) -> None:
        super().__init__(*records)
        self.conflicts = conflicts

    async def get(self, path: str, **query: Any) -> dict[str, Any]:
        name = path.rsplit("/", 1)[-1]
        if name not in self.records:
            raise e.NotFound(404, "NotFound", "gone")
        return self.records[name]

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.conflicts:
            self.conflicts -= 1
            stored = self.records[body["metadata"]["name"]]
            stored["metadata"]["resourceVersion"] = str(int(stored["metadata"]["resourceVersion"]) + 1)
            raise e.Conflict(409, "Conflict", "the object has been modified; please apply your changes")
        return await super().replace(path, body)


async def test_T1_a_conflict_on_the_read_mark_reads_the_record_again_and_marks_that() -> None:
    expires = to_rfc3339(time.time() + 600)
    stored = job_record("BroadcastJob", "nightly", **{EXPIRES_AT: expires})
    store = _MovedOn(stored, conflicts=1)
    await result_read(store, dict(stored, metadata=dict(stored["metadata"])), LOG)
    meta = store.records["bcj-nightly"]["metadata"]
    assert meta["annotations"][RESULT_READ] == "true" and meta["resourceVersion"] == "8"


async def test_T1_a_record_that_keeps_changing_is_left_unmarked_and_the_task_goes_on(caplog: Any) -> None:
    stored = job_record("BroadcastJob", "busy", **{EXPIRES_AT: to_rfc3339(time.time() + 600)})
    store = _MovedOn(stored, conflicts=10)
    with caplog.at_level(logging.WARNING):
        await result_read(store, stored, LOG)
    assert RESULT_READ not in store.records["bcj-busy"]["metadata"]["annotations"]
    assert "changed under each of 3 attempts" in caplog.text
