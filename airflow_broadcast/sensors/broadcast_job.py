"""BroadcastJobSensor: wait for (and keep reconciling) a BroadcastJob submitted earlier."""

from __future__ import annotations

from typing import Any

from airflow_broadcast.operators.broadcast_job import bcj_driver_options
from airflow_broadcast.sensors.job_sensor import KubernetesJobSensor


class BroadcastJobSensor(KubernetesJobSensor):
    """Wait for a BroadcastJob by name; the XCom matches BroadcastJobOperator's."""

    kind = "BroadcastJob"

    def __init__(self, *, assign_pods_by_scheduler: bool = True, kruise_compat: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.assign_pods_by_scheduler = assign_pods_by_scheduler
        self.kruise_compat = kruise_compat

    def driver_options(self) -> dict[str, Any]:
        return bcj_driver_options(self.assign_pods_by_scheduler, self.kruise_compat)
