"""OpenKruise BroadcastJob: the typed model (`spec`), validation and parsing."""

from airflow_broadcast.specs.broadcast_job.parsing import parse_broadcast_job, to_manifest
from airflow_broadcast.specs.broadcast_job.spec import API_VERSION, KIND, BroadcastJobSpec
from airflow_broadcast.specs.broadcast_job.validation import broadcast_job_warnings, validate_broadcast_job

__all__ = [
    "API_VERSION",
    "KIND",
    "BroadcastJobSpec",
    "broadcast_job_warnings",
    "parse_broadcast_job",
    "to_manifest",
    "validate_broadcast_job",
]
