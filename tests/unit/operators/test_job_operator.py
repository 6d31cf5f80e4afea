"""Operator contract without a cluster: templated fields, validation before submission, deadlines."""

from __future__ import annotations

import time
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_broadcast.operators import job_operator
from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.job_runtime import defer_timeout, execution_deadline
from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.specs.field_errors import InvalidSpecError


def test_provider_conventions() -> None:
    for cls in (BroadcastJobOperator, TFJobOperator):
        assert {"manifest", "namespace", "kubernetes_conn_id"} <= set(cls.template_fields)
        assert not cls.template_ext  # a manifest path is resolved by the operator, nested strings never
        assert cls.template_fields_renderers["manifest"] == "yaml"
        op = cls(task_id="t", manifest={})
        assert op.kubernetes_conn_id == "kubernetes_default"
        assert callable(op.execute_complete)


def test_bad_manifest_raises_before_any_cluster_call(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_submit(self: Any, job: Any, submitter: str) -> Any:
        raise AssertionError("submission must not happen for an invalid manifest")

    monkeypatch.setattr(job_operator.ReconciledJobOperator, "_submit", no_submit)
    op = BroadcastJobOperator(task_id="t", namespace="ns", manifest="""
apiVersion: apps.kruise.io/v1beta1
kind: BroadcastJob
metadata: {name: Bad_Name}
spec:
  template:
    spec:
      containers: [{name: c, image: busybox}]
      restartPolicy: Always
""")
    ti = SimpleNamespace(dag_id="d", task_id="t", run_id="r", map_index=-1, try_number=1)
    with pytest.raises(InvalidSpecError) as caught:
        op.execute({"ti": ti})
    text = str(caught.value)
    assert "metadata.name" in text and "spec.template.spec.restartPolicy" in text


def test_execution_deadline_is_absolute_from_the_task_start() -> None:
    started = time.time() - 100
    ti = SimpleNamespace(start_date=SimpleNamespace(timestamp=lambda: started))
    assert execution_deadline({"ti": ti}, timedelta(seconds=600)) == pytest.approx(started + 600)
    assert execution_deadline({"ti": ti}, None) is None


def test_defer_timeout_pads_the_earliest_deadline_as_a_backstop() -> None:
    soon = time.time() + 120
    padded = defer_timeout([None, soon, soon + 1000], resync=30)
    assert padded is not None and 120 + 60 - 2 <= padded <= 120 + 60 + 1
    assert defer_timeout([None, None], resync=30) is None
