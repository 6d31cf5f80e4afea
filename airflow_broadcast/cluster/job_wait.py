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

from airflow_broadcast.cluster.api_errors import Gone
from airflow_broadcast.cluster.job_api import get_job
from airflow_broadcast.cluster.job_records import record_name, records_path
from airflow_broadcast.cluster.kinds.registry import check_kind
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
    after `wait_timeout` seconds; JobNotFound when it does not exist (or is deleted meanwhile).
    """
    wanted = expected_conditions(kind, expected)
    if wait_timeout < 0 or polling_interval <= 0:
        raise ValueError("wait_timeout must be >= 0 and polling_interval > 0")
    deadline = clock() + wait_timeout
    while True:
        job = await get_job(client, kind, namespace, name)
        if callback is not None:
            callback(job)
        held = true_conditions(job)
        types = {str(c.get("type")) for c in held}
        if "Failed" in types and "Failed" not in wanted:
            failed = next(c for c in held if c.get("type") == "Failed")
            raise JobFailedError(f"{kind} {namespace}/{name} is Failed: {failed.get('reason', '')}: "
                                 f"{failed.get('message', '')}; conditions: {sorted(types)}")
        if types & wanted:
            return job
        remaining = deadline - clock()
        if remaining <= 0:
            raise TimeoutError(f"{kind} {namespace}/{name} did not reach any of {sorted(wanted)} within "
                               f"{wait_timeout:g} s; its conditions: {sorted(types) or 'none'}")
        await _next_change(client, kind, namespace, name, str(job["metadata"].get("resourceVersion") or ""),
                           min(polling_interval, remaining))


async def _next_change(client: KubeClient, kind: str, namespace: str, name: str, version: str,
                       seconds: float) -> None:
    """Return at the record's next change after `version`, or after `seconds`."""
    selector = f"metadata.name={record_name(kind, name)}"
    try:
        async with asyncio.timeout(seconds):
            events = client.watch(records_path(namespace), resource_version=version,
                                  timeout_seconds=max(1, math.ceil(seconds)), fieldSelector=selector)
            async with aclosing(events):
                async for event_type, _ in events:
                    if event_type != "BOOKMARK":
                        return
    except (TimeoutError, Gone):
        return  # the interval passed, or the version expired: look again
