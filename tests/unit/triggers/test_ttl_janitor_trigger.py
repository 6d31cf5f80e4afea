"""TTLJanitorTrigger: names only in its kwargs, one Airflow trigger per namespace set, and it never stops."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from airflow.models.trigger import Trigger
from airflow.serialization.decoders import smart_decode_trigger_kwargs
from airflow.serialization.encoders import encode_trigger
from airflow.triggers.base import BaseEventTrigger, TriggerEvent
from support.fake_cluster import FakeCluster

from airflow_broadcast.cluster.informers import stop_informers
from airflow_broadcast.cluster.job_records import EXPIRES_AT, RESULT_READ, new_record, records_path
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
from airflow_broadcast.specs.timestamps import to_rfc3339
from airflow_broadcast.triggers.ttl_janitor import TTLJanitorTrigger

CLASSPATH = "airflow_broadcast.triggers.ttl_janitor.TTLJanitorTrigger"


def stored(trigger: TTLJanitorTrigger) -> tuple[str, dict[str, Any]]:
    """What the triggerer builds the trigger from: the dag-processor's encoding, through the Trigger row."""
    encoded = encode_trigger(trigger)
    kwargs = Trigger._decrypt_kwargs(Trigger.encrypt_kwargs(encoded["kwargs"]))
    return encoded["classpath"], {k: smart_decode_trigger_kwargs(v) for k, v in kwargs.items()}


def test_kwargs_hold_names_only_and_survive_the_trigger_table() -> None:
    trigger = TTLJanitorTrigger(["ops", "ml", "ops"], kubernetes_conn_id="k8s", cluster_context="prod")
    classpath, kwargs = stored(trigger)
    assert classpath == CLASSPATH
    assert kwargs == {"namespaces": ["ml", "ops"], "kubernetes_conn_id": "k8s", "cluster_context": "prod"}
    assert TTLJanitorTrigger(**kwargs).serialize() == trigger.serialize()
    assert isinstance(trigger, BaseEventTrigger)
    text = json.dumps(kwargs).lower()
    assert not any(secret in text for secret in ("token", "kube_config", "password", "certificate"))


def test_the_same_namespaces_in_any_order_are_one_airflow_trigger() -> None:
    """Airflow identifies an asset-watcher trigger by the hash of its kwargs: a reordered list must not start a
    second janitor (nor restart the first) when the DAG file is parsed again."""
    one, other = TTLJanitorTrigger(["a", "b"]).serialize(), TTLJanitorTrigger(["b", "a", "a"]).serialize()
    assert BaseEventTrigger.hash(*one) == BaseEventTrigger.hash(*other)
    assert BaseEventTrigger.hash(*one) != BaseEventTrigger.hash(*TTLJanitorTrigger(["a"]).serialize())


@pytest.mark.parametrize("namespaces", [[], "ops"])
def test_namespaces_must_be_a_non_empty_list(namespaces: Any) -> None:
    with pytest.raises(ValueError, match="non-empty list"):
        TTLJanitorTrigger(namespaces)


def test_the_lease_holder_names_the_triggerer_job_when_airflow_set_it() -> None:
    trigger = TTLJanitorTrigger(["ops"])
    assert trigger.holder().endswith(f"(pid {os.getpid()})") and "triggerer job" not in trigger.holder()
    trigger.triggerer_job_id = 42
    assert trigger.holder().startswith("triggerer job 42 on ")


@pytest.fixture
async def fake_cluster(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeCluster]:
    """The hook hands out a client of the in-memory cluster; the first `failures` calls raise instead."""
    fake = FakeCluster(apis=["coordination.k8s.io/v1"])
    client = KubeClient(fake, qps=0, max_retries=0)
    calls: list[int] = []

    async def kube_client(self: BroadcastKubernetesHook) -> KubeClient:
        calls.append(1)
        if len(calls) <= getattr(fake, "failures", 0):
            raise RuntimeError("The conn_id `kubernetes_default` isn't defined")
        return client

    monkeypatch.setattr(BroadcastKubernetesHook, "kube_client", kube_client)
    yield fake
    await stop_informers()
    await client.close()


async def first_event(trigger: TTLJanitorTrigger) -> TriggerEvent:
    events = trigger.run()
    try:
        return await asyncio.wait_for(anext(events), 10)
    finally:
        await events.aclose()


async def test_run_yields_one_event_per_deleted_record(fake_cluster: FakeCluster) -> None:
    expired = to_rfc3339(time.time() - 1)
    created = fake_cluster.create(records_path("ops"), new_record(
        "TFJob", "mnist", "ops", {}, {}, {EXPIRES_AT: expired, RESULT_READ: "true"}))
    event = await first_event(TTLJanitorTrigger(["ops"]))
    assert event.payload == {"kind": "TFJob", "namespace": "ops", "record": "tfjob-mnist", "job_name": "mnist",
                             "uid": created["metadata"]["uid"], "expired_at": expired, "result_read": True,
                             "deleted_at": event.payload["deleted_at"]}
    assert fake_cluster.objects(records_path("ops")) == []


async def test_an_error_restarts_the_janitor_instead_of_ending_the_trigger(fake_cluster: FakeCluster,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    fake_cluster.failures = 1  # type: ignore[attr-defined]
    fake_cluster.create(records_path("ops"), new_record(
        "BroadcastJob", "late", "ops", {}, {}, {EXPIRES_AT: to_rfc3339(time.time() - 1), RESULT_READ: "true"}))
    trigger = TTLJanitorTrigger(["ops"])
    trigger._log = logging.getLogger("ttl-janitor-trigger")  # a stdlib logger, which caplog sees
    event = await first_event(trigger)
    assert event.payload["record"] == "bcj-late"
    assert "TTL janitor of ops stopped (RuntimeError: The conn_id `kubernetes_default` isn't defined); " \
           "starting again in 1 s" in caplog.text
