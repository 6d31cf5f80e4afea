"""ttl_janitor_dag: the two-line DAG file users add gives an active DAG whose asset's watcher is the janitor."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.dag_processing.dagbag import DagBag
from airflow.serialization.serialized_objects import DagSerialization

from airflow_broadcast.janitor import report_cleanups, ttl_janitor_dag
from airflow_broadcast.triggers.ttl_janitor import TTLJanitorTrigger

SETUP = 'from airflow_broadcast.janitor import ttl_janitor_dag\n\ndag = ttl_janitor_dag(namespaces=["ops", "ml"])\n'


def watchers(dag: Any) -> list[Any]:
    return [w for asset in dag.timetable.asset_condition.objects for w in asset.watchers]


def test_the_documented_dag_file_parses_into_an_active_dag_watched_by_the_janitor(tmp_path: Path) -> None:
    (tmp_path / "ttl_janitor.py").write_text(SETUP)
    bag = DagBag(dag_folder=tmp_path)
    assert bag.import_errors == {}
    dag = bag.dags["airflow_broadcast_ttl_janitor"]
    assert dag.is_paused_upon_creation is False, "an asset watcher only runs while its DAG is active"
    assert (dag.catchup, dag.max_active_runs) == (False, 1)
    assert [t.task_id for t in dag.tasks] == ["report_cleanups"]
    (asset,) = dag.timetable.asset_condition.objects
    assert asset.name == "airflow_broadcast_ttl_janitor.cleanups"
    (watcher,) = asset.watchers
    assert watcher.name == "airflow_broadcast_ttl_janitor.janitor"
    assert isinstance(watcher.trigger, TTLJanitorTrigger)
    assert watcher.trigger.serialize()[1] == {"namespaces": ["ml", "ops"], "kubernetes_conn_id": "kubernetes_default",
                                              "cluster_context": None}
    assert "kubectl get lease airflow-broadcast-ttl-janitor" in (dag.doc_md or "")


def test_the_serialized_dag_names_the_trigger_the_triggerer_will_import() -> None:
    stored = json.dumps(DagSerialization.to_dict(ttl_janitor_dag(["ops"], dag_id="janitor_ser")))
    assert ('"trigger": {"classpath": "airflow_broadcast.triggers.ttl_janitor.TTLJanitorTrigger", "kwargs": '
            '{"namespaces": ["ops"], "kubernetes_conn_id": "kubernetes_default", "cluster_context": null}}') in stored


def test_two_janitor_dags_have_their_own_asset_and_watcher() -> None:
    first = ttl_janitor_dag(["ops"], dag_id="janitor_ops", kubernetes_conn_id="k8s_ops")
    second = ttl_janitor_dag(["ml"], dag_id="janitor_ml", cluster_context="gpu", tags=["ml"])
    names = [(w.name, w.trigger.serialize()[1]) for dag in (first, second) for w in watchers(dag)]
    assert names == [
        ("janitor_ops.janitor", {"namespaces": ["ops"], "kubernetes_conn_id": "k8s_ops", "cluster_context": None}),
        ("janitor_ml.janitor", {"namespaces": ["ml"], "kubernetes_conn_id": "kubernetes_default",
                                "cluster_context": "gpu"}),
    ]
    assert second.tags == {"ml"}, "DAG arguments given to the factory win"


def test_the_task_lists_and_logs_the_cleanups_of_its_run(caplog: pytest.LogCaptureFixture) -> None:
    cleanup = {"kind": "TFJob", "namespace": "ml", "record": "tfjob-mnist", "job_name": "mnist", "uid": "u-1",
               "expired_at": "2026-12-01T09:00:00Z", "result_read": True, "deleted_at": 1796115600.3}
    events = {"asset": [SimpleNamespace(extra={"from_trigger": True, "payload": cleanup}),
                        SimpleNamespace(extra={"from_trigger": True, "payload": {**cleanup, "record": "tfjob-b",
                                                                                   "result_read": False}}),
                        SimpleNamespace(extra={})]}  # an event someone posted by hand: nothing to report
    with caplog.at_level(logging.INFO, logger="airflow.task"):
        assert report_cleanups.function(triggering_asset_events=events) == ["ml/tfjob-mnist", "ml/tfjob-b"]
    assert ("TTL janitor deleted TFJob ml/mnist (record tfjob-mnist, uid u-1): expired at 2026-12-01T09:00:00Z, "
            "result read") in caplog.text
    assert "(record tfjob-b, uid u-1): expired at 2026-12-01T09:00:00Z, result never read" in caplog.text
