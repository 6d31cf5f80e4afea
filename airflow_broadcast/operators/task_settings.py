"""The parameters an operator and a sensor of a job share, with their defaults written once."""

from __future__ import annotations

from typing import Any, ClassVar

from airflow_broadcast.config import parse_time_setting
from airflow_broadcast.operators.job_runtime import DEFAULT_STARTUP_TIMEOUT_SECONDS
from airflow_broadcast.reconcilers.handoff import DEFAULT_PROBE_SECONDS, check_controller, check_probe_seconds
from airflow_broadcast.reconcilers.kind import KindName
from airflow_broadcast.triggers.job_reconcile import check_visibility
from airflow_broadcast.version_compat import BaseOperator, conf


class JobTaskSettings(BaseOperator):
    """Where the job lives, how to reach it, and what the task log shows.

    The operators derive from it directly and the sensors list it before BaseSensorOperator. It is an
    operator class, so Airflow fills its parameters from `default_args` like any other.
    """

    kind: ClassVar[KindName]
    get_logs: bool = False  # TFJob tasks: follow the chief's log

    def __init__(self, *, namespace: str | None = None, kubernetes_conn_id: str = "kubernetes_default",
                 cluster_context: str | None = None,
                 deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=True),
                 resync_seconds: float | None = None, log_tail_lines: int = 50,
                 max_logged_failures: int = 5,
                 startup_timeout_seconds: float | None = DEFAULT_STARTUP_TIMEOUT_SECONDS, controller: str = "airflow",
                 handoff_probe_seconds: float = DEFAULT_PROBE_SECONDS, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        check_visibility(self.kind, startup_timeout_seconds, self.get_logs)
        self.namespace = namespace
        self.kubernetes_conn_id = kubernetes_conn_id
        self.cluster_context = cluster_context
        self.deferrable = deferrable
        # The configured default, read as this task is built (each parse), not when the module is imported.
        self.resync_seconds = parse_time_setting("resync_seconds") if resync_seconds is None else resync_seconds
        self.log_tail_lines = log_tail_lines
        self.max_logged_failures = max_logged_failures
        self.startup_timeout_seconds = startup_timeout_seconds
        self.controller = check_controller(controller)  # see docs/handoff.md
        self.handoff_probe_seconds = check_probe_seconds(handoff_probe_seconds)
