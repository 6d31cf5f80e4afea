"""BroadcastJobSensor: wait for (and keep reconciling) a BroadcastJob submitted earlier."""

from __future__ import annotations

from typing import Any

from airflow_broadcast.operators.broadcast_job import DEFAULTS, set_broadcast_switches
from airflow_broadcast.sensors.job_sensor import ReconciledJobSensor


class BroadcastJobSensor(ReconciledJobSensor):
    """Wait for a BroadcastJob by name; the XCom matches BroadcastJobOperator's."""

    kind = "BroadcastJob"

    def __init__(self, *, assign_pods_by_scheduler: bool = DEFAULTS.assign_by_scheduler,
                 kruise_compat: bool = DEFAULTS.kruise_compat,
                 cleanup_succeeded_pods: bool = DEFAULTS.cleanup_succeeded_pods, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        set_broadcast_switches(self, assign_pods_by_scheduler, kruise_compat, cleanup_succeeded_pods)
