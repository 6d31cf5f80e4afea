"""The sweeper deletes a record once its stamped expiry has passed and the result was read, or after a grace."""

from __future__ import annotations

import time

import pytest
from support.fake_api import RecordStore, job_record

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.job_records import EXPIRES_AT, RESULT_READ
from airflow_broadcast.cluster.ttl_sweeper import (
    UNREAD_GRACE_SECONDS,
    sweep_due,
    sweep_expired_records,
    sweep_in_background,
)
from airflow_broadcast.specs.timestamps import to_rfc3339

NOW = 1_800_000_000.0
READ = {RESULT_READ: "true"}


def expiring(job: str, at: float, **annotations: str) -> dict[str, object]:
    return job_record("BroadcastJob", job, **{EXPIRES_AT: to_rfc3339(at)}, **annotations)


async def test_T1_T3_only_read_or_long_unread_records_past_their_stamped_expiry_are_swept() -> None:
    store = RecordStore(expiring("read", NOW - 1, **READ), expiring("unread", NOW - 1),
                        expiring("forgotten", NOW - UNREAD_GRACE_SECONDS), expiring("later", NOW + 1, **READ),
                        job_record("BroadcastJob", "no-ttl", **READ))
    assert sorted(await sweep_expired_records(store, "ns", now=NOW)) == ["bcj-forgotten", "bcj-read"]
    assert sorted(store.records) == ["bcj-later", "bcj-no-ttl", "bcj-unread"]


async def test_T6_a_failed_delete_keeps_the_stamp_and_the_next_sweep_deletes_the_record() -> None:
    store = RecordStore(expiring("flaky", NOW - 60, **READ), failing_deletes=1)
    with pytest.raises(ClusterApiError):
        await sweep_expired_records(store, "ns", now=NOW)
    assert store.records["bcj-flaky"]["metadata"]["annotations"][EXPIRES_AT] == to_rfc3339(NOW - 60)
    assert await sweep_expired_records(store, "ns", now=NOW + 60) == ["bcj-flaky"]
    assert store.records == {}


async def test_a_namespace_swept_a_moment_ago_is_not_due_so_a_starting_trigger_needs_no_sweep_task() -> None:
    store = RecordStore(expiring("read", time.time() - 1, **READ))
    assert sweep_due("ns", every=60.0)
    await sweep_in_background(store, "ns", every=60.0)
    assert not store.records
    assert not sweep_due("ns", every=60.0)
    assert sweep_due("ns", every=0.0) and sweep_due("other-ns", every=60.0)
