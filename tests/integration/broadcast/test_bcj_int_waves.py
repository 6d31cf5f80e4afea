"""Paced waves, `spec.waves` (checklist E: R16), on the real cluster."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from bcj_cluster import KIND, bcj, job_pods

pytestmark = pytest.mark.cluster


def test_R16_waves_of_one_pod_start_one_after_another_each_after_its_soak(
        engine: Any, node_factory: Any, namespace: str) -> None:
    nodes = sorted(node_factory(3, labels={"pool": namespace}))
    manifest = bcj("paced", namespace, after="1s", waves={"size": 1, "soakSeconds": 3})

    outcome = engine.drive(engine.submit(manifest), KIND, timeout=90)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "paced")
    assert (status["phase"], status["succeeded"]) == ("completed", 3)
    started = sorted((p.metadata.creation_timestamp, p.metadata.annotations["airflow-broadcast.io/node"])
                     for p in job_pods(engine, "paced"))
    assert [node for _, node in started] == nodes, "one wave per node, in name order"
    gaps = [(b[0] - a[0]).total_seconds() for a, b in itertools.pairwise(started)]
    assert all(gap >= 3 for gap in gaps), f"each wave waited for the last to end (1 s) and soak (3 s): {gaps}"
