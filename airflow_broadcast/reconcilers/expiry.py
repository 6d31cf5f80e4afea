"""TTL after finished, as a plan states it: the `expires-at` annotation on a finished job's record.

No pass deletes a job. The pass that finishes it stamps `completionTime + ttlSecondsAfterFinished`
on the record, in the same write as the terminal status. The Airflow task that reads the result
deletes the record at once when that time has passed (TTL 0 included), else marks it read; the
sweeper deletes expired records once read, or after a grace period. So a loop that starts late
never destroys a result nobody has read.
"""

from __future__ import annotations

from collections.abc import Mapping

from airflow_broadcast.specs.timestamps import to_rfc3339

EXPIRES_AT = "airflow-broadcast.io/expires-at"


def expiry_change(annotations: Mapping[str, str], expires: float | None) -> dict[str, str | None]:
    """The `record_annotations` that make the record expire at `expires` (None: never); {} when it already does."""
    wanted = None if expires is None else to_rfc3339(expires)
    return {} if annotations.get(EXPIRES_AT) == wanted else {EXPIRES_AT: wanted}
