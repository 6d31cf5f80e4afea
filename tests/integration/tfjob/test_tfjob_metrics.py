"""M8 on the real cluster: training-operator's job and pod counters, counted once per real transition."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from support.sim_time import fail_until
from tfjob_it_support import KIND, RESULT_READ, fail, is_true, replica, succeed, tf_manifest

from airflow_broadcast.cluster import job_metrics
from airflow_broadcast.cluster.job_records import record_name
from airflow_broadcast.cluster.ttl_sweeper import sweep_expired_records

pytestmark = pytest.mark.cluster


class Counts:
    """A sink that sums every counter of one namespace."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.totals: Counter[str] = Counter()
        self.frameworks: set[str] = set()

    def __call__(self, metric: str, amount: int, tags: Mapping[str, str]) -> None:
        if tags["job_namespace"] == self.namespace:
            self.totals[metric] += amount
            self.frameworks.add(tags["framework"])


@pytest.fixture
def counts(namespace: str) -> Iterator[Counts]:
    sink = Counts(namespace)
    job_metrics.add_sink(sink)
    try:
        yield sink
    finally:
        job_metrics.remove_sink(sink)


def test_M8_a_restarted_then_successful_job_counts_each_transition_once(engine: Any, namespace: str,
                                                                        counts: Counts) -> None:
    annotations = succeed("4s", exit_code="137", reason="OOMKilled", fail_until=fail_until(3))
    manifest = tf_manifest("counted", {"Chief": replica(1, annotations=succeed("6s")),
                                       "Worker": replica(1, "ExitCode", annotations=annotations)})
    outcome = engine.drive(engine.submit(manifest), KIND, timeout=90)

    assert outcome.reason == "finished" and is_true(engine.status(KIND, "counted"), "Succeeded")
    assert counts.frameworks == {"tensorflow"}
    assert counts.totals[job_metrics.JOBS_CREATED] == 1
    assert counts.totals[job_metrics.JOBS_RESTARTED] == 1
    assert counts.totals[job_metrics.JOBS_SUCCESSFUL] == 1
    assert counts.totals[job_metrics.JOBS_FAILED] == 0
    assert counts.totals[job_metrics.CREATED_PODS] == 3, "chief, worker, and the worker re-created once"
    assert counts.totals[job_metrics.DELETED_PODS] == 1, "the failed worker pod"
    assert counts.totals[job_metrics.SERVICE_CREATED] == 2
    assert counts.totals[job_metrics.SERVICE_FAILED] == 0


def test_M8_a_failed_job_and_its_ttl_deletion_are_counted(engine: Any, namespace: str, counts: Counts,
                                                          core_api: Any) -> None:
    manifest = tf_manifest("doomed", {"Worker": replica(2, "Never", annotations=fail(1))},
                           run_policy={"ttlSecondsAfterFinished": 0})
    submission = engine.submit(manifest)
    assert engine.drive(submission, KIND, timeout=60).reason == "finished"
    assert engine.drive(submission, KIND, single_pass=True).reason == "finished", "a second look counts nothing"

    assert is_true(engine.status(KIND, "doomed"), "Failed")
    assert (counts.totals[job_metrics.JOBS_FAILED], counts.totals[job_metrics.JOBS_SUCCESSFUL]) == (1, 0)
    assert counts.totals[job_metrics.JOBS_DELETED] == 0
    core_api.patch_namespaced_config_map(record_name(KIND, "doomed"), namespace,
                                         {"metadata": {"annotations": {RESULT_READ: "true"}}})
    swept = engine.run_async(lambda kube: sweep_expired_records(kube, namespace))
    assert swept == [record_name(KIND, "doomed")]
    assert counts.totals[job_metrics.JOBS_DELETED] == 1


@pytest.mark.parametrize("process", ["triggerer", "task runner"])
def test_M8_counters_reach_statsd_through_airflows_own_metrics_client(
        engine: Any, namespace: str, process: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Airflow's metrics set up as the triggerer (core stats) or the task runner (Task SDK stats) does."""
    from support.airflow_stats import statsd_configured_as

    from airflow_broadcast.hooks.metrics import install_airflow_metrics

    with statsd_configured_as(process, monkeypatch) as listener:
        install_airflow_metrics()
        manifest = tf_manifest("reported", {"Worker": replica(2, annotations=succeed("1s"))})
        assert engine.drive(engine.submit(manifest), KIND, timeout=60).reason == "finished"
    received = listener.counters
    assert received["airflow.airflow_broadcast.tensorflow.jobs_created"] >= 1
    assert received["airflow.airflow_broadcast.tensorflow.jobs_successful"] >= 1
    assert received["airflow.airflow_broadcast.tensorflow.created_pods"] >= 2
