"""JobTriggerArgs: the trigger's kwargs survive Airflow's real storage and come back as the same typed args."""

from __future__ import annotations

import json
from typing import Any

import pytest
from airflow.models.trigger import Trigger
from airflow.sdk import serde
from airflow.serialization.serialized_objects import BaseSerialization

from airflow_broadcast.reconcilers.broadcast_job.reconciler import BroadcastOptions
from airflow_broadcast.reconcilers.tf_job.options import TFJobOptions
from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger, JobTriggerArgs

ARGS = [
    JobTriggerArgs(kind="BroadcastJob", namespace="ops", record_name="bcj-prune", uid="u-1",
                   options=BroadcastOptions(assign_by_scheduler=False, kruise_compat=True), deadline=1800000000.5,
                   task_key={"dag_id": "d", "task_id": "t", "run_id": "r"}),
    JobTriggerArgs(kind="TFJob", namespace="ml", record_name="tfjob-mnist", uid="u-2", cluster_context="prod",
                   options=TFJobOptions(cluster_domain="tf.example", gang_scheduler="volcano",
                                        compat_recreate_succeeded=True),
                   resync_seconds=5.0, on_kill_action="keep"),
]


def _through_the_database(kwargs: dict[str, Any]) -> dict[str, Any]:
    """What the triggerer reads back: the Trigger row's encrypted kwargs (Trigger.kwargs setter and getter)."""
    result: dict[str, Any] = Trigger._decrypt_kwargs(Trigger.encrypt_kwargs(kwargs))
    return result


def _through_the_defer_message(kwargs: dict[str, Any]) -> dict[str, Any]:
    """What the task runner sends when a task defers (serde), as JSON on the wire."""
    result: dict[str, Any] = serde.deserialize(json.loads(json.dumps(serde.serialize(kwargs))))
    return result


def _through_base_serialization(kwargs: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = BaseSerialization.deserialize(json.loads(json.dumps(BaseSerialization.serialize(kwargs))))
    return result


@pytest.mark.parametrize("store", [_through_the_database, _through_the_defer_message, _through_base_serialization])
@pytest.mark.parametrize("args", ARGS, ids=["BroadcastJob", "TFJob"])
def test_kwargs_survive_airflows_storage_and_rebuild_the_options_dataclass(args: JobTriggerArgs, store: Any) -> None:
    classpath, kwargs = JobReconcileTrigger(args).serialize()
    assert classpath == "airflow_broadcast.triggers.job_reconcile.JobReconcileTrigger"
    rebuilt = JobReconcileTrigger(**store(kwargs)).args
    assert rebuilt == args
    assert type(rebuilt.options) is type(args.options)


def test_a_dataclass_itself_would_not_survive_so_options_are_stored_as_plain_fields() -> None:
    stored = _through_base_serialization({"options": BroadcastOptions()})
    assert isinstance(stored["options"], str)
    _, kwargs = JobReconcileTrigger(ARGS[0]).serialize()
    assert kwargs["options"] == {"assign_by_scheduler": False, "kruise_compat": True, "cleanup_succeeded_pods": False}


def test_kwargs_of_an_earlier_version_still_load() -> None:
    """Options with only some switches, no task key written as {}, and no options at all."""
    partial = JobReconcileTrigger(kind="TFJob", namespace="ml", record_name="tfjob-a", uid="u",
                                  options={"cluster_domain": "c"}, task_key={}).args
    assert partial.options == TFJobOptions(cluster_domain="c")
    assert partial.task_key is None
    bare = JobReconcileTrigger(kind="BroadcastJob", namespace="ns", record_name="bcj-a", uid="u").args
    assert bare.options == BroadcastOptions()
    assert (bare.kubernetes_conn_id, bare.on_kill_action, bare.resync_seconds) == (
        "kubernetes_default", "delete_active_pods", 30.0)


@pytest.mark.parametrize(("change", "error"), [
    ({"kind": "PyTorchJob"}, "unknown job kind 'PyTorchJob'"),
    ({"options": {"assign_pods_by_scheduler": False}}, "unknown BroadcastOptions switch"),
    ({"on_kill_action": "delete"}, "on_kill_action must be"),
])
def test_bad_kwargs_fail_loudly(change: dict[str, Any], error: str) -> None:
    kwargs = {"kind": "BroadcastJob", "namespace": "ns", "record_name": "bcj-a", "uid": "u", **change}
    with pytest.raises(ValueError, match=error):
        JobReconcileTrigger(**kwargs)
