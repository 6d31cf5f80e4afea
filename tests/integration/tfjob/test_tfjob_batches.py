"""A 305-replica TFJob on the real cluster: created over several batched passes, each pod once, TF_CONFIG exact."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest
import tfjob_it_support as it
from kubernetes import client

from airflow_broadcast.reconcilers.tf_job.cluster_config import tf_config_json
from airflow_broadcast.reconcilers.tf_job.pass_state import CREATE_BATCH
from airflow_broadcast.specs.tf_job import parse_tf_job

pytestmark = pytest.mark.cluster
WORKERS = 300


def test_M_batches_a_305_replica_job_gets_every_pod_once_with_the_exact_tf_config(
        engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    manifest = it.tf_manifest("wide", {"Chief": it.replica(1, annotations=it.succeed("20s")), "PS": it.replica(4),
                                       "Worker": it.replica(WORKERS)})
    assert 1 + 4 + WORKERS > CREATE_BATCH, "more than one batch"
    started = time.monotonic()
    outcome = engine.drive(engine.submit(manifest), it.KIND, timeout=240)
    assert outcome.reason == "finished", outcome.message
    assert it.is_true(engine.status(it.KIND, "wide"), "Succeeded")
    pods = it.job_pods(core_api, namespace, "wide")
    assert len(pods) == len(it.job_services(core_api, namespace, "wide")) == 305
    spec = parse_tf_job(manifest, namespace=namespace)
    for replica_type, replica_spec in spec.replica_specs.items():
        for index in range(replica_spec.replicas):
            name = f"wide-{replica_type.lower()}-{index}"
            assert it.tf_config_of(pods[name]) == [f"tensorflow={tf_config_json(spec, replica_type, index)}"], name
    creates = ("SuccessfulCreatePod", "SuccessfulCreateService")
    created = Counter(e for e in it.event_pairs(engine, "wide") if e[0] in creates)
    assert created and set(created.values()) == {1}, "no child is reported created twice"
    print(f"305 pods created and the job finished in {time.monotonic() - started:.1f} s")
