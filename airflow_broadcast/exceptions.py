"""The errors a DAG author sees, in one place.

Each is raised before anything is created (InvalidSpecError, QueueCheckError, PodGroupApiError,
JobConflictError) or when a task concludes (JobFailedError, JobTimeoutError). The job API's
not-found and conflict errors are HTTP-shaped and live with it (`cluster.job_api`).
"""

from __future__ import annotations

from airflow_broadcast.specs.field_errors import InvalidSpecError

__all__ = ["InvalidSpecError", "JobConflictError", "JobFailedError", "JobStartupTimeoutError", "JobTimeoutError",
           "PodGroupApiError", "QueueCheckError"]


class JobFailedError(RuntimeError):
    """The job ended Failed, or could not be driven; the message names the cause and the failed children."""


class JobTimeoutError(RuntimeError):
    """The task's execution deadline passed while the job was still running."""


class JobStartupTimeoutError(JobTimeoutError):
    """A pod of the job stayed Pending (unscheduled, or its containers not started) past `startup_timeout_seconds`."""


class JobConflictError(RuntimeError):
    """A record with the job's name exists and cannot be re-used (another submitter, or not ours)."""


class QueueCheckError(RuntimeError):
    """The Kueue LocalQueue could not be checked for a reason other than 404 or 403."""


class PodGroupApiError(RuntimeError):
    """Gang scheduling is on but PodGroups cannot be used in the namespace."""
