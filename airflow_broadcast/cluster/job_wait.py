"""Wait until a job has one of a set of conditions, as the SDK's wait_for_job_conditions (N5).

The SDK polls every `polling_interval`; this waits on a watch of the job's record instead, so
a change is seen at once, and still looks at least every `polling_interval` (the callback's
pace when nothing changes).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Collection, Mapping
from contextlib import aclosing
from typing import Any

from airflow_broadcast.cluster.api_errors import ClusterApiError, Gone
from airflow_broadcast.cluster.job_api import JobNotFound, get_job, job_object
from airflow_broadcast.cluster.job_records import is_record_of, record_name, record_view, records_path
from airflow_broadcast.cluster.kinds.registry import check_kind, kind_for
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.exceptions import JobFailedError

CONDITIONS: dict[str, tuple[str, ...]] = {
    "TFJob": ("Created", "Running", "Restarting", "Succeeded", "Suspended", "Failed"),
    "BroadcastJob": ("Complete", "Failed"),
}
DONE_CONDITION = {"TFJob": "Succeeded", "BroadcastJob": "Complete"}


def expected_conditions(kind: str, expected: Collection[str] | str | None) -> frozenset[str]:
    """The conditions to wait for (default: the kind's success); ValueError for one the kind never sets."""
    known = CONDITIONS[check_kind(kind)]
    if expected is None:
        return frozenset({DONE_CONDITION[kind]})
    wanted = frozenset({expected} if isinstance(expected, str) else expected)
    unknown = sorted(str(c) for c in wanted - set(known))
    if not wanted or unknown:
        raise ValueError(f"expected_conditions must be a non-empty subset of {{{', '.join(known)}}}"
                         + (f"; {kind} has no condition {', '.join(map(repr, unknown))}" if unknown else ""))
    return wanted


def true_conditions(job: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]


async def wait_for_conditions(client: KubeClient, kind: str, namespace: str, name: str, *,
                              expected: Collection[str] | str | None = None, wait_timeout: float = 600,
                              polling_interval: float = 15, callback: Callable[[JsonDict], Any] | None = None,
                              clock: Callable[[], float] = time.monotonic) -> JsonDict:
    """The job once it has one of `expected` (status "True").

    JobFailedError (a RuntimeError) when it is Failed and Failed is not expected; TimeoutError
    after `wait_timeout` seconds; JobNotFound when it does not exist (or is deleted meanwhile
    without having reached one). A change seen on the watch is judged from the watch's own
    object, so a job deleted right after it finished (a TTL of 0) still answers.
    """
    wanted = expected_conditions(kind, expected)
    if wait_timeout < 0 or polling_interval <= 0:
        raise ValueError("wait_timeout must be >= 0 and polling_interval > 0")
    deadline = clock() + wait_timeout
    job, gone = await get_job(client, kind, namespace, name), False
    while True:
        if callback is not None:
            callback(job)
        types = _verdict(kind, namespace, name, job, wanted)
        if types is None:
            return job
        if gone:
            raise JobNotFound(kind, namespace, name, verb="WATCH")
        remaining = deadline - clock()
        if remaining <= 0:
            raise TimeoutError(f"{kind} {namespace}/{name} did not reach any of {sorted(wanted)} within "
                               f"{wait_timeout:g} s; its conditions: {sorted(types) or 'none'}")
        change = await _next_change(client, kind, namespace, name, str(job["metadata"].get("resourceVersion") or ""),
                                    min(polling_interval, remaining))
        if change is None:
            job = await get_job(client, kind, namespace, name)
        else:
            gone, job = change[0] == "DELETED", job_object(kind_for(kind), record_view(change[1]))


def _verdict(kind: str, namespace: str, name: str, job: Mapping[str, Any], wanted: frozenset[str]) -> set[str] | None:
    """None when the job has a wanted condition; else the types it holds. JobFailedError for an unwanted Failed."""
    held = true_conditions(job)
    types = {str(c.get("type")) for c in held}
    if "Failed" in types and "Failed" not in wanted:
        failed = next(c for c in held if c.get("type") == "Failed")
        raise JobFailedError(f"{kind} {namespace}/{name} is Failed: {failed.get('reason', '')}: "
                             f"{failed.get('message', '')}; conditions: {sorted(types)}")
    return None if types & wanted else types


async def _next_change(client: KubeClient, kind: str, namespace: str, name: str, version: str,
                       seconds: float) -> tuple[str, JsonDict] | None:
    """The record's next change after `version` (event type, object), or None after `seconds`.

    A watch that cannot start or breaks with a transient error (429, 5xx, a reset) waits out the
    interval instead: the caller then reads the job again, as the SDK's polling would.
    """
    selector = f"metadata.name={record_name(kind, name)}"
    started = time.monotonic()
    try:
        async with asyncio.timeout(seconds):
            events = client.watch(records_path(namespace), resource_version=version,
                                  timeout_seconds=max(1, math.ceil(seconds)), fieldSelector=selector)
            async with aclosing(events):
                async for event_type, obj in events:
                    if event_type in ("ADDED", "MODIFIED", "DELETED") and is_record_of(obj, kind, name):
                        return event_type, obj
    except (TimeoutError, Gone):
        return None  # the interval passed, or the version expired: look again
    except ClusterApiError as exc:
        if not exc.retryable:
            raise
        await asyncio.sleep(max(0.0, seconds - (time.monotonic() - started)))
    return None
