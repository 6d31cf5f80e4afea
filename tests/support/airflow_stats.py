"""Airflow's metrics set up the way one of its components does, sending StatsD to a local listener."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from airflow_broadcast.hooks import metrics
from support.statsd_listener import StatsdListener

# The public stats module each component initializes, and the factory it initializes it with.
COMPONENTS = {
    "triggerer": (metrics.TRIGGERER_STATS, "airflow.observability.metrics.stats_utils"),
    "task runner": (metrics.WORKER_STATS, "airflow.sdk.observability.metrics.stats_utils"),
}


@contextmanager
def statsd_configured_as(component: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[StatsdListener]:
    """Initialize the component's stats for StatsD on a listener; afterwards it is initialized with no backend."""
    module, utils = COMPONENTS[component]
    stats = importlib.import_module(module)
    factory = importlib.import_module(utils).get_stats_factory
    monkeypatch.setattr(metrics, "_in_triggerer", component == "triggerer")
    listener = StatsdListener()
    listener.start()
    with monkeypatch.context() as env:
        for key, value in {"STATSD_ON": "True", "STATSD_HOST": "127.0.0.1", "STATSD_PORT": str(listener.port),
                           "STATSD_PREFIX": "airflow"}.items():
            env.setenv(f"AIRFLOW__METRICS__{key}", value)
        stats.initialize(factory=factory(), export_legacy_names=False)
        try:
            yield listener
        finally:
            listener.stop()
    stats.initialize(factory=factory(), export_legacy_names=False)  # statsd off again: a no-op backend
