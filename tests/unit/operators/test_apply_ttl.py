"""The task that reads a result applies the TTL the reconciler stamped: delete now if expired, else mark it read."""

from __future__ import annotations

import logging
import time

from support.fake_api import RecordStore, job_record

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
