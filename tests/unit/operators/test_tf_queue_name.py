"""N8: the queue label and the LocalQueue check's error branch (404/403/200 run on the real cluster)."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_broadcast.cluster import api_errors as e
from airflow_broadcast.cluster.kinds.tf_job import check_local_queue
from airflow_broadcast.exceptions import QueueCheckError
from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.specs.field_errors import InvalidSpecError
from airflow_broadcast.specs.tf_job.spec import QUEUE_NAME_LABEL

MANIFEST = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "mnist", "labels": {"team": "ml"}},
            "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {
                "containers": [{"name": "tensorflow", "image": "tf:2"}]}}}}}}


def test_N8_queue_name_adds_the_kueue_label_and_keeps_the_others() -> None:
    job = TFJobOperator(task_id="t", manifest=MANIFEST, queue_name="team-a").parse(MANIFEST, "ml", "default")
    assert job.manifest["metadata"]["labels"] == {"team": "ml", QUEUE_NAME_LABEL: "team-a"}
    assert QUEUE_NAME_LABEL not in MANIFEST["metadata"]["labels"], "input untouched"
    assert "queue_name" in TFJobOperator.template_fields


def test_N8_an_invalid_queue_name_is_rejected_before_anything_is_created() -> None:
    with pytest.raises(InvalidSpecError) as raised:
        TFJobOperator(task_id="t", manifest=MANIFEST, queue_name="no spaces!").parse(MANIFEST, "ml", "default")
    assert 'queue_name: Invalid value: "no spaces!"' in str(raised.value)


class Failing:
    async def get(self, path: str, **query: Any) -> Any:
        raise e.ServerError(500, "InternalError", "etcd is unhappy", verb="GET", target=path)


async def test_N8_a_server_error_on_the_queue_check_stops_the_submission() -> None:
    with pytest.raises(QueueCheckError) as raised:
        await check_local_queue(Failing(), "ml", "team-a")  # type: ignore[arg-type]
    message = str(raised.value)
    assert "could not check Kueue LocalQueue ml/team-a" in message and "500" in message
    assert "Nothing was created" in message
