"""Hostile input leaves nothing behind: corpus entries go through the operators' execute() on the real API
server and are refused before the job record (or anything else) exists in the namespace.

A valid manifest through the same path then does create its record, so the empty namespace is
the refusals' doing and not a test that never reached the cluster. The sample leaves out the
Python-object bombs (shared references, deep nesting): Airflow walks a manifest object itself,
without bounds, when the operator is built and when its templates are rendered, before parse() runs.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client
from unit.specs.hostile.corpus import Case, all_cases, bcj_manifest, tf_manifest

from airflow_broadcast.cluster.job_records import MANAGED_BY, MANAGED_BY_LABEL
from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.job_operator import ReconciledJobOperator
from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.specs.field_errors import InvalidSpecError
from airflow_broadcast.specs.manifest_limits import ManifestError

pytestmark = pytest.mark.cluster

SAMPLE = ("yaml-billion-laughs", "yaml-deep-flow-150", "yaml-alias-of-a-big-string", "text-over-1-mib",
          "bcj-env-value-int", "tf-replicas-1e8", "tf-deadline-over-int64", "bcj-name-300k", "tf-replica-type-300k",
          "bcj-cpu-huge-exponent", "tf-b12-null-replica-spec", "dict-nan-replicas")


@pytest.fixture(autouse=True)
def kubernetes_default(monkeypatch: pytest.MonkeyPatch, kubeconfig: str) -> None:
    """The `kubernetes_default` connection, from the environment (no Airflow metadata DB needed)."""
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(
        {"conn_type": "kubernetes", "extra": {"kube_config_path": kubeconfig}}))


def execute(kind: str, manifest: Any, namespace: str) -> Any:
    """The operator's whole worker side, up to its return (it does not wait for the job)."""
    operator_type: type[ReconciledJobOperator] = BroadcastJobOperator if kind == "BroadcastJob" else TFJobOperator
    operator = operator_type(task_id="hostile", manifest=manifest, namespace=namespace, wait_for_completion=False)
    ti = SimpleNamespace(dag_id="hostile", task_id="hostile", run_id="manual__1", map_index=-1,
                         start_date=datetime.now(UTC), xcom_push=lambda key, value: None)
    return operator.execute({"ti": ti})


def records(core_api: client.CoreV1Api, namespace: str) -> list[str]:
    found = core_api.list_namespaced_config_map(namespace, label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY}")
    return [item.metadata.name for item in found.items]


def test_refused_corpus_entries_create_nothing_in_the_cluster(namespace: str, core_api: client.CoreV1Api) -> None:
    cases: dict[str, Case] = {case.name: case for case in all_cases()}
    for name in SAMPLE:
        case = cases[name]
        with pytest.raises((InvalidSpecError, ManifestError)) as refused:
            execute(case.kind, case.build(), namespace)
        assert case.path in str(refused.value), name

    assert records(core_api, namespace) == []
    assert core_api.list_namespaced_pod(namespace).items == []
    assert core_api.list_namespaced_service(namespace).items == []

    execute("BroadcastJob", bcj_manifest(), namespace)
    execute("TFJob", tf_manifest(), namespace)
    assert sorted(records(core_api, namespace)) == ["bcj-hostile", "tfjob-hostile"]
