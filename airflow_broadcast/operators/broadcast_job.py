"""BroadcastJobOperator: run an OpenKruise BroadcastJob manifest, with Airflow as the controller."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_broadcast.operators.job_operator import KubernetesJobOperator, ParsedJob
from airflow_broadcast.specs.broadcast_job import broadcast_job_warnings, parse_broadcast_job, to_manifest


def bcj_driver_options(assign_pods_by_scheduler: bool, kruise_compat: bool) -> dict[str, Any]:
    """The BroadcastJob engine switches, as trigger kwargs carry them (shared with BroadcastJobSensor)."""
    return {"assign_by_scheduler": assign_pods_by_scheduler, "kruise_compat": kruise_compat}


class BroadcastJobOperator(KubernetesJobOperator):
    """One pod on every eligible node, as OpenKruise's BroadcastJob controller would run it.

    Returns (XCom) name, namespace, uid, phase, desired/active/succeeded/failed, start and
    completion times, conditions, `nodes` (node → pod, phase, exitCode, reason, message,
    restarts) and `ineligibleNodes` (node → why it got no pod). A failed job fails the task.

    :param assign_pods_by_scheduler: pin pods with a node-affinity term (default, like Kruise's
        --assign-bcj-pods-by-scheduler) or, when False, with spec.nodeName.
    :param kruise_compat: reproduce the upstream defects that are fixed by default.
    """

    kind = "BroadcastJob"

    def __init__(self, *, assign_pods_by_scheduler: bool = True, kruise_compat: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.assign_pods_by_scheduler = assign_pods_by_scheduler
        self.kruise_compat = kruise_compat

    def parse(self, manifest: Mapping[str, Any] | str, namespace: str | None, default_namespace: str) -> ParsedJob:
        spec = parse_broadcast_job(manifest, namespace=namespace, default_namespace=default_namespace)
        for warning in broadcast_job_warnings(to_manifest(spec)):
            self.log.warning("%s", warning)
        return ParsedJob(spec.name, spec.namespace, to_manifest(spec),
                         spec.completion_policy.active_deadline_seconds, starts_suspended=spec.paused)

    def driver_options(self) -> dict[str, Any]:
        return bcj_driver_options(self.assign_pods_by_scheduler, self.kruise_compat)

    def is_finished(self, status: Mapping[str, Any]) -> bool:
        return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                   for c in status.get("conditions") or [])
