"""Forward the engine's counters to Airflow's metrics (StatsD, OpenTelemetry or Datadog, as configured).

Each counter is `airflow_broadcast.<framework>.<metric>`, e.g.
`airflow_broadcast.tensorflow.jobs_successful`, tagged `job_namespace` and `framework`
(training-operator's Prometheus labels). Installed when this provider's hook module is imported,
which every operator, sensor and trigger of the provider does.

Airflow 3.2+ configures a different stats module per component, both behind public modules: the task
runner sets up the Task SDK's (`airflow.sdk.observability.stats`), the triggerer sets up core's
(`airflow.observability.stats`), which its trigger subprocess inherits. Counters go to the worker's
unless the trigger has said that this process is a triggerer. Airflow 3.1 has one `airflow.stats.Stats`.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from typing import Any, Protocol

from airflow_broadcast.cluster import job_metrics
from airflow_broadcast.hooks.off_loop_writer import writer

PREFIX = "airflow_broadcast"
WORKER_STATS = "airflow.sdk.observability.stats"
TRIGGERER_STATS = "airflow.observability.stats"


class StatsClient(Protocol):
    def incr(self, stat: str, count: int | None = None, rate: float | None = None, *,
             tags: dict[str, Any] | None = None) -> None: ...


_in_triggerer = False  # module state on purpose: a process is a triggerer or a worker for its whole life


def running_in_triggerer() -> None:
    """Called by the trigger: this process's counters go to the stats module the triggerer set up."""
    global _in_triggerer  # noqa: PLW0603
    _in_triggerer = True


def airflow_stats() -> StatsClient:
    """The public stats interface this process's Airflow component configured."""
    try:
        stats: StatsClient = importlib.import_module(TRIGGERER_STATS if _in_triggerer else WORKER_STATS)
    except ImportError:  # Airflow 3.1
        from airflow.stats import Stats

        return Stats
    return stats


def stat_name(metric: str, tags: Mapping[str, str]) -> str:
    return f"{PREFIX}.{tags.get('framework', 'job')}.{metric}"


def _incr(metric: str, amount: int, tags: Mapping[str, str]) -> None:
    airflow_stats().incr(stat_name(metric, tags), amount, tags=dict(tags))


def airflow_stats_sink(metric: str, amount: int, tags: Mapping[str, str]) -> None:
    """In the triggerer the count leaves the shared loop: the first one reads Airflow's metrics registry from disk."""
    if _in_triggerer:
        writer.put(functools.partial(_incr, metric, amount, dict(tags)))
    else:
        _incr(metric, amount, tags)


def install_airflow_metrics() -> None:
    job_metrics.add_sink(airflow_stats_sink)
