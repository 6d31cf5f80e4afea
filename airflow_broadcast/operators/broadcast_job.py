"""BroadcastJobOperator: run an OpenKruise BroadcastJob manifest, with Airflow as the controller."""

from __future__ import annotations

from typing import Any

from airflow_broadcast.operators.job_operator import ReconciledJobOperator
from airflow_broadcast.reconcilers.broadcast_job.options import BroadcastOptions

DEFAULTS = BroadcastOptions()


def broadcast_options(assign_pods_by_scheduler: bool, kruise_compat: bool,
                      cleanup_succeeded_pods: bool = DEFAULTS.cleanup_succeeded_pods) -> BroadcastOptions:
    """The public switch names of the operator and the sensor, as the engine's options."""
    return BroadcastOptions(assign_by_scheduler=assign_pods_by_scheduler, kruise_compat=kruise_compat,
                            cleanup_succeeded_pods=cleanup_succeeded_pods)


def set_broadcast_switches(task: Any, assign_pods_by_scheduler: bool, kruise_compat: bool,
                           cleanup_succeeded_pods: bool = DEFAULTS.cleanup_succeeded_pods) -> None:
    """Keep the switches as the task's own attributes (Airflow shows them) and as the engine's options."""
    task.assign_pods_by_scheduler = assign_pods_by_scheduler
    task.kruise_compat = kruise_compat
    task.cleanup_succeeded_pods = cleanup_succeeded_pods
    task.job_options = broadcast_options(assign_pods_by_scheduler, kruise_compat, cleanup_succeeded_pods)


class BroadcastJobOperator(ReconciledJobOperator):
    """One pod on every eligible node, as OpenKruise's BroadcastJob controller would run it.

    Returns (XCom) name, namespace, uid, phase, desired/active/succeeded/failed, start and
    completion times, conditions, `nodes` (node → pod, phase, exitCode, reason, message,
    restarts) and `ineligibleNodes` (node → why it got no pod). A failed job fails the task.

    :param assign_pods_by_scheduler: pin pods with a node-affinity term (default, like Kruise's
        --assign-bcj-pods-by-scheduler) or, when False, with spec.nodeName.
    :param kruise_compat: reproduce the upstream defects that are fixed by default, and re-run a
        node whose succeeded pod was deleted, as upstream does.
    :param cleanup_succeeded_pods: delete each succeeded pod once the job record holds its result,
        so a 15,000-node broadcast does not leave 15,000 finished pods for PodGC (no effect with kruise_compat).
    """

    kind = "BroadcastJob"

    def __init__(self, *, assign_pods_by_scheduler: bool = DEFAULTS.assign_by_scheduler,
                 kruise_compat: bool = DEFAULTS.kruise_compat,
                 cleanup_succeeded_pods: bool = DEFAULTS.cleanup_succeeded_pods, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        set_broadcast_switches(self, assign_pods_by_scheduler, kruise_compat, cleanup_succeeded_pods)
