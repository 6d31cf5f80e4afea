"""TFJobSensor: wait for (and keep reconciling) a TFJob submitted earlier."""

from __future__ import annotations

from typing import Any

from airflow_broadcast.sensors.job_sensor import KubernetesJobSensor


class TFJobSensor(KubernetesJobSensor):
    """Wait for a TFJob by name; the XCom matches TFJobOperator's."""

    kind = "TFJob"

    def __init__(self, *, cluster_domain: str = "", compat: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cluster_domain = cluster_domain
        self.compat = compat

    def driver_options(self) -> dict[str, Any]:
        return {
            "cluster_domain": self.cluster_domain,
            "compat_succeeded_then_failed": self.compat,
            "compat_recreate_succeeded": self.compat,
            "compat_exitcode_ignores_backoff": self.compat,
        }
