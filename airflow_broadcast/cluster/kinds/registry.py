"""Job kinds known to the engine, by kind name."""

from __future__ import annotations

from typing import Any

from airflow_broadcast.cluster.kinds.broadcast_job import BroadcastJobDriver
from airflow_broadcast.cluster.kinds.tf_job import TFJobDriver
from airflow_broadcast.reconcilers.broadcast_job.reconciler import BroadcastOptions
from airflow_broadcast.reconcilers.tf_job.reconciler import TFJobOptions

KINDS = ("BroadcastJob", "TFJob")


def driver_for(kind: str, options: dict[str, Any] | None = None) -> Any:
    """The driver for `kind`; options are the kind's switches (JSON-safe, as triggers carry them)."""
    opts = dict(options or {})
    if kind == "BroadcastJob":
        return BroadcastJobDriver(BroadcastOptions(
            assign_by_scheduler=bool(opts.get("assign_by_scheduler", True)),
            kruise_compat=bool(opts.get("kruise_compat", False)),
        ))
    if kind == "TFJob":
        known = {f for f in TFJobOptions.__dataclass_fields__ if f in opts}
        return TFJobDriver(TFJobOptions(**{k: opts[k] for k in known}))
    raise ValueError(f"unknown job kind {kind!r}; known kinds: {', '.join(KINDS)}")
