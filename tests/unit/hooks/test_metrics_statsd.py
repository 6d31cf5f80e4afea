"""Counters reach a real StatsD server through the stats module the current Airflow component configured."""

from __future__ import annotations

import pytest
from support.airflow_stats import statsd_configured_as

from airflow_broadcast.cluster import job_metrics
from airflow_broadcast.hooks.metrics import install_airflow_metrics


@pytest.mark.parametrize("component", ["triggerer", "task runner"])
def test_counters_reach_statsd_as_each_component_configures_it(component: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    install_airflow_metrics()
    with statsd_configured_as(component, monkeypatch) as listener:
        job_metrics.count(job_metrics.JOBS_CREATED, "TFJob", "ml")
        job_metrics.count(job_metrics.CREATED_PODS, "BroadcastJob", "ops", 4)
    assert listener.counters["airflow.airflow_broadcast.tensorflow.jobs_created"] == 1
    assert listener.counters["airflow.airflow_broadcast.broadcastjob.created_pods"] == 4
