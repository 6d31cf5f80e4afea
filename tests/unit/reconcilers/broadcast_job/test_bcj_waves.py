"""Paced waves, `spec.waves` (checklist E: R16): a wave starts after the last has finished and soaked."""

from __future__ import annotations

from typing import Any

import pytest
from support.bcj_builders import FIXED, BCJCluster, created_nodes, make_nodes, manifest

from airflow_broadcast.reconcilers.broadcast_job.wave_gate import WAVE_ENDED_AT
from airflow_broadcast.reconcilers.handoff import provider_only_fields
from airflow_broadcast.specs.broadcast_job.parsing import parse_broadcast_job, to_manifest
from airflow_broadcast.specs.field_errors import InvalidSpecError
from airflow_broadcast.specs.timestamps import to_rfc3339


def waved(size: int | str, soak: int | None = None, nodes: int = 5, **fields: Any) -> BCJCluster:
    body = manifest(**fields)
    body["spec"]["waves"] = {"size": size} if soak is None else {"size": size, "soakSeconds": soak}
    return BCJCluster(parse_broadcast_job(body), make_nodes(nodes), options=FIXED)


def test_R16_each_wave_starts_after_the_last_has_finished_and_soaked() -> None:
    cluster = waved(2, soak=60)
    assert created_nodes(cluster.step()) == ["node-00", "node-01"]
    cluster.set_phase("Running")
    assert created_nodes(cluster.step()) == [], "the wave runs"
    cluster.set_phase("Succeeded")
    soaking = cluster.step()
    assert created_nodes(soaking) == [] and soaking.requeue_after == pytest.approx(60)
    assert cluster.status[WAVE_ENDED_AT] == to_rfc3339(cluster.now)
    assert created_nodes(cluster.step(advance=59)) == []
    assert created_nodes(cluster.step(advance=1)) == ["node-02", "node-03"]
    assert WAVE_ENDED_AT not in cluster.status
    cluster.set_phase("Succeeded")
    cluster.step()
    assert created_nodes(cluster.step(advance=60)) == ["node-04"]
    cluster.set_phase("Succeeded")
    cluster.step()
    assert cluster.status["phase"] == "completed" and cluster.status["succeeded"] == 5


def test_R16_a_percent_size_and_no_soak_start_the_next_wave_at_once() -> None:
    cluster = waved("40%", nodes=5)  # 40 % of 5, rounded up: 2
    assert created_nodes(cluster.step()) == ["node-00", "node-01"]
    cluster.set_phase("Succeeded")
    assert created_nodes(cluster.step()) == ["node-02", "node-03"]
    assert WAVE_ENDED_AT not in cluster.status


def test_R16_failfast_is_the_health_gate_and_parallelism_still_bounds_a_wave() -> None:
    cluster = waved(3, soak=10, parallelism=2)
    assert created_nodes(cluster.step()) == ["node-00", "node-01"], "parallelism 2 under a wave of 3"
    cluster.set_phase("Failed", ["node-00"])
    cluster.set_phase("Succeeded", ["node-01"])
    stopped = cluster.step()
    assert cluster.status["phase"] == "failed" and created_nodes(stopped) == []


def test_R16_waves_are_validated_stored_and_kept_from_the_cluster_controller() -> None:
    stored = to_manifest(waved("10%", soak=300).spec)
    assert stored["spec"]["waves"] == {"size": "10%", "soakSeconds": 300}
    assert provider_only_fields("BroadcastJob", stored) == ["spec.waves"]
    for waves, path in (({}, "spec.waves.size"), ({"size": 0}, "spec.waves.size"), ({"size": "0%"}, "spec.waves.size"),
                        ({"size": "x"}, "spec.waves.size"), ({"size": 1, "soakSeconds": -1}, "spec.waves.soakSeconds"),
                        ([], "spec.waves")):
        body = manifest()
        body["spec"]["waves"] = waves
        with pytest.raises(InvalidSpecError) as refused:
            parse_broadcast_job(body)
        assert [e.path for e in refused.value.errors] == [path], waves


def test_R16_a_pod_on_a_node_that_left_does_not_hold_the_next_wave() -> None:
    cluster = waved(2, nodes=4)
    cluster.step()
    cluster.set_phase("Succeeded", ["node-00"])  # node-01's pod stays Pending: its node is gone
    del cluster.nodes["node-01"]
    assert created_nodes(cluster.step()) == ["node-02", "node-03"]


def test_R16_a_finished_job_keeps_no_soak_stamp() -> None:
    cluster = waved(1, soak=600, nodes=2, ads=30)
    cluster.step()
    cluster.set_phase("Succeeded")
    cluster.step()
    assert WAVE_ENDED_AT in cluster.status
    cluster.step(advance=40)  # the deadline passes while the wave soaks
    assert cluster.status["phase"] == "failed" and WAVE_ENDED_AT not in cluster.status


def test_R16_a_misspelt_field_is_warned_of() -> None:
    body = manifest()
    body["spec"]["waves"] = {"size": 1, "soakSecond": 900}
    warnings: list[str] = []
    parse_broadcast_job(body, warnings=warnings)
    assert warnings == ['unknown field "spec.waves.soakSecond"']
