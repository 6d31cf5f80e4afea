"""Forward the engine's counters to Airflow's metrics (StatsD, OpenTelemetry or Datadog, as configured).

Each counter is `airflow_broadcast.<framework>.<metric>`, e.g.
`airflow_broadcast.tensorflow.jobs_successful`, tagged `job_namespace` and `framework`
(training-operator's Prometheus labels). Installed when this provider's hook module is imported,
which every operator, sensor and trigger of the provider does.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from types import ModuleType

from airflow_broadcast.cluster import job_metrics

PREFIX = "airflow_broadcast"
# Airflow 3.2+ ships two copies of its stats module: the task runner configures the Task SDK's,
# the triggerer (whose trigger subprocess inherits it) configures core's, and either may also hold
# a no-op set up at import. Counters go to the one with a real backend, else to the Task SDK's.
_STATS_MODULES = ("airflow.sdk._shared.observability.metrics.stats", "airflow._shared.observability.metrics.stats")


@functools.cache
def _stats_modules() -> tuple[ModuleType, ...]:
    """Imported once: counters are sent from the reconcile loop, once per pod created or deleted."""
    found = []
    for name in _STATS_MODULES:
        try:
            found.append(importlib.import_module(name))
        except ImportError:
            continue
    return tuple(found)


def _configured_stats() -> ModuleType | None:
    """The first stats module set up with a real backend (an unset or NoStatsLogger factory sends nothing)."""
    modules = _stats_modules()
    for module in modules:
        factory = getattr(module, "_factory", None)
        if factory is not None and getattr(factory, "__name__", "") != "NoStatsLogger":
            return module
    return modules[0] if modules else None


def stat_name(metric: str, tags: Mapping[str, str]) -> str:
    return f"{PREFIX}.{tags.get('framework', 'job')}.{metric}"


def airflow_stats_sink(metric: str, amount: int, tags: Mapping[str, str]) -> None:
    stats = _configured_stats()
    if stats is not None:
        stats.incr(stat_name(metric, tags), amount, tags=dict(tags))
        return
    from airflow.stats import Stats  # Airflow < 3.2

    Stats.incr(stat_name(metric, tags), amount, tags=dict(tags))


def install_airflow_metrics() -> None:
    job_metrics.add_sink(airflow_stats_sink)
