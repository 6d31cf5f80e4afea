"""TFJobSensor: wait for (and keep reconciling) a TFJob submitted earlier."""

from __future__ import annotations

from typing import Any

from airflow_broadcast.operators.tf_job import tf_driver_options
from airflow_broadcast.sensors.job_sensor import KubernetesJobSensor


class TFJobSensor(KubernetesJobSensor):
    """Wait for a TFJob by name; the XCom matches TFJobOperator's."""

    kind = "TFJob"

    def __init__(self, *, cluster_domain: str = "", compat: bool = False,
                 tf_options: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cluster_domain = cluster_domain
        self.compat = compat
        self.tf_options = dict(tf_options or {})

    def driver_options(self) -> dict[str, Any]:
        return tf_driver_options(self.cluster_domain, self.compat, self.tf_options)
