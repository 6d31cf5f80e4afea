"""M2 and M5 on the real cluster: a job whose record is gone stops the loop cleanly; a 409 is re-read."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from kubernetes import client
from tfjob_it_support import KIND, is_true, job_pods, replica, tf_manifest

from airflow_broadcast.cluster.job_records import record_name, record_view
from airflow_broadcast.cluster.kinds.registry import driver_for
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.reconcile_loop import LoopOutcome, record_informer, run_reconcile_loop

pytestmark = pytest.mark.cluster


def test_M2_a_missing_job_record_stops_the_loop_cleanly(engine: Any, namespace: str) -> None:
    ghost = record_view({"metadata": {"name": "tfjob-ghost", "namespace": namespace, "uid": "no-such-uid"}})
    outcome = engine.drive(ghost, "TFJob", timeout=30)
    assert outcome.reason == "gone"
    assert "tfjob-ghost" in outcome.message


def test_M5_a_status_write_conflict_is_retried_after_a_fresh_get(engine: Any, namespace: str,
                                                                 core_api: client.CoreV1Api,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    """Another writer changes the record after the loop last saw it: the real 409 is followed by a GET,
    the pass is recomputed on the fresh version, and the other writer's change survives."""
    submission = engine.submit(tf_manifest("clash", {"Worker": replica(2)}))
    name = record_name(KIND, "clash")

    async def body(kube: KubeClient) -> tuple[LoopOutcome, str, str]:
        records = record_informer(kube, namespace)
        await records.wait_synced()
        stale = records.values[name]
        core_api.patch_namespaced_config_map(name, namespace, {"metadata": {"annotations": {"team": "ml"}}})
        for _ in range(100):
            current = records.values[name]
            if current["metadata"]["resourceVersion"] != stale["metadata"]["resourceVersion"]:
                break
            await asyncio.sleep(0.05)
        newer = records.values[name]["metadata"]["resourceVersion"]
        assert newer != stale["metadata"]["resourceVersion"], "the watch delivered the other writer's change"
        records.values[name] = stale  # a cache that lags behind the other writer
        records._versions[name] = int(stale["metadata"]["resourceVersion"])
        outcome = await run_reconcile_loop(kube, driver_for(KIND), namespace, name, submission.uid,
                                           single_pass=True)
        return outcome, stale["metadata"]["resourceVersion"], newer

    with caplog.at_level(logging.INFO, logger="airflow_broadcast.cluster.reconcile_loop"):
        outcome, stale_version, newer_version = engine.run_async(body)

    assert any("409 on the status write" in r.getMessage() for r in caplog.records), "the write really conflicted"
    assert outcome.reason == "pending"
    assert outcome.record is not None
    assert int(outcome.record.raw["metadata"]["resourceVersion"]) > int(newer_version) > int(stale_version)
    saved = core_api.read_namespaced_config_map(name, namespace)
    assert saved.metadata.annotations.get("team") == "ml", "the other writer's change was kept"
    assert is_true(engine.status(KIND, "clash"), "Created"), "the recomputed status was written"
    assert sorted(job_pods(core_api, namespace, "clash")) == ["clash-worker-0", "clash-worker-1"]
