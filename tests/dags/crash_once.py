"""A mixin for the end-to-end DAGs: the first try of a task dies right after it submitted its job.

Used to prove that the retry re-attaches to that job instead of starting a second one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class CrashOnceAfterSubmit:
    """Mix in before a job operator that sets `crash_marker`: the file that records the first try.

    The operator class keeps its own __init__, because Airflow wraps only operator constructors.
    """

    crash_marker: str

    async def _submit(self, job: Any, submitter: str) -> Any:
        record, reattached = await super()._submit(job, submitter)  # type: ignore[misc]
        marker = Path(self.crash_marker)
        if not marker.exists():
            marker.write_text(record.uid)
            raise RuntimeError("simulated worker crash after submission")
        return record, reattached
