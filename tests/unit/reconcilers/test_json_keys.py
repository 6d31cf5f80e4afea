"""Keys shared across parsed documents: 1,000 idle jobs hold one copy of each key, not 1,000."""

from __future__ import annotations

import json

from airflow_broadcast.cluster.job_records import cached_record
from airflow_broadcast.cluster.observation import pod_info
from airflow_broadcast.reconcilers.json_keys import shared_keys

STATUS = {"phase": "running", "conditions": [{"type": "Complete", "lastTransitionTime": "2026-12-02T00:00:00Z"}],
          "nodes": {"node-1": {"phase": "Running", "restarts": 0}}, "active": 1}


def record(status: dict[str, object]) -> dict[str, object]:
    return {"metadata": {"name": "bcj-a", "labels": {"airflow-broadcast.io/job-name": "a"},
                         "managedFields": [{"manager": "x"}]},
            "data": {"status": json.dumps(status)}}


def key_objects(value: object) -> list[str]:
    if isinstance(value, dict):
        return [k for k, v in value.items() for k in (k, *key_objects(v))]
    if isinstance(value, list):
        return [k for item in value for k in key_objects(item)]
    return []


def test_cached_records_and_pods_share_their_metadata_keys() -> None:
    first = cached_record(json.loads(json.dumps(record(STATUS))))
    second = cached_record(json.loads(json.dumps(record(STATUS))))
    pods = [pod_info(json.loads(json.dumps({"metadata": {"name": "p", "labels": {"airflow-broadcast.io/job-uid": "u"},
                                                          "annotations": {"example.com/a": "b"}}})))
            for _ in range(2)]

    assert "managedFields" not in first["metadata"]
    assert first == second
    assert all(a is b for a, b in zip(key_objects(first), key_objects(second), strict=True)), "every key is shared"
    assert first["data"]["status"] is not second["data"]["status"], "values are left alone"
    (label_a, label_b), (note_a, note_b) = ([next(iter(getattr(p, field))) for p in pods]
                                            for field in ("labels", "annotations"))
    assert label_a is label_b and note_a is note_b
    assert shared_keys([{"k": 1}]) == [{"k": 1}]
