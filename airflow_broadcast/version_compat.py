"""The single place that picks Airflow base classes and configuration by Airflow version."""

from __future__ import annotations

from airflow import __version__ as _airflow_version
from packaging.version import Version

_BASE = Version(Version(_airflow_version).base_version)
AIRFLOW_V_3_3_PLUS = Version("3.3.0") <= _BASE
MIN_AIRFLOW_VERSION = Version("3.1.0")

if _BASE < MIN_AIRFLOW_VERSION:  # pragma: no cover - refused at install time too
    raise RuntimeError(
        f"airflow-provider-broadcast needs Apache Airflow >= {MIN_AIRFLOW_VERSION}, found {_airflow_version}"
    )

# The common-compat provider resolves each name to the Task SDK where it exists, else to Airflow core.
from airflow.providers.common.compat.sdk import AirflowNotFoundException, conf  # noqa: E402
from airflow.sdk import BaseHook, BaseOperator, BaseSensorOperator  # noqa: E402

__all__ = ["AIRFLOW_V_3_3_PLUS", "AirflowNotFoundException", "BaseHook", "BaseOperator", "BaseSensorOperator",
           "conf"]
