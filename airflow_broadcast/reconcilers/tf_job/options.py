"""Provider settings of the TFJob engine, and the switches that restore training-operator v1.9 behaviour."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TFJobOptions:
    """Provider settings and upstream-compat switches (each compat flag restores a v1.9 behaviour).

    `gang_scheduler` turns gang scheduling on, as training-operator's `--gang-scheduler-name`
    does: "volcano" or "scheduler-plugins" ("" = off). `gang_scheduler_name` overrides the
    schedulerName its pods get (default "volcano" / "scheduler-plugins-scheduler").
    """

    cluster_domain: str = ""
    compat_succeeded_then_failed: bool = False  # Q4: Failed may follow Succeeded
    compat_recreate_succeeded: bool = False  # Q3: re-create a succeeded pod that disappeared
    compat_exitcode_ignores_backoff: bool = False  # Q2: controller restarts don't count for backoffLimit
    compat_cleanup_ignores_policy_on_failure: bool = False  # G6: v1.9.3 deletes all on backoff/deadline
    exclude_evaluator_from_cluster: bool = False  # Q7/D7 option
    sparse_ps_empty_list: bool = False  # D12 option: `"ps":[]` instead of `null`
    gang_scheduler: str = ""
    gang_scheduler_name: str = ""
