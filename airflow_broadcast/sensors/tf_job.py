"""TFJobSensor: wait for (and keep reconciling) a TFJob submitted earlier."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_broadcast.operators.tf_job import DEFAULTS, tf_job_options
from airflow_broadcast.sensors.job_sensor import ReconciledJobSensor


class TFJobSensor(ReconciledJobSensor):
    """Wait for a TFJob by name; the XCom matches TFJobOperator's.

    :param get_logs: while deferred, stream the chief's (else worker 0's) log into the task log.
    """

    kind = "TFJob"

    def __init__(self, *, cluster_domain: str = DEFAULTS.cluster_domain, compat: bool = False,
                 tf_options: Mapping[str, Any] | None = None, get_logs: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.get_logs = get_logs
        self.cluster_domain = cluster_domain
        self.compat = compat
        self.tf_options = dict(tf_options or {})
        self.job_options = tf_job_options(cluster_domain, compat, self.tf_options)
