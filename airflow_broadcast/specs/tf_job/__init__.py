"""Kubeflow TFJob: the typed model (`spec`), defaults, validation, parsing and the SDK-style builders."""

from airflow_broadcast.specs.tf_job.builder import tf_job_from_callable, tf_job_from_image
from airflow_broadcast.specs.tf_job.defaults import default_tf_job
from airflow_broadcast.specs.tf_job.parsing import parse_tf_job, to_manifest
from airflow_broadcast.specs.tf_job.spec import API_VERSION, KIND, TFJobSpec
from airflow_broadcast.specs.tf_job.validation import tf_job_warnings, validate_tf_job, validate_tf_job_update

__all__ = [
    "API_VERSION",
    "KIND",
    "TFJobSpec",
    "default_tf_job",
    "parse_tf_job",
    "tf_job_from_callable",
    "tf_job_from_image",
    "tf_job_warnings",
    "to_manifest",
    "validate_tf_job",
    "validate_tf_job_update",
]
