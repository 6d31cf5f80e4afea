"""An event fired before the finishing writes, whose writes were lost: the task's resume repeats the pass.

On the real cluster: the loop announces the finished job, and is cancelled right then, as if its
triggerer died between the event and the writes. The record stays behind. `conclude` (what the
resumed task runs) finds it behind, repeats the finishing pass, and returns the job's result.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from support.local_hook import LocalHook
from support.rbac_grants import broadcast_job

from airflow_broadcast.cluster.job_records import EXPIRES_AT, RESULT_READ
from airflow_broadcast.cluster.kinds.registry import driver_for
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.reconcile_loop import LoopOutcome, LoopReason, run_reconcile_loop

pytestmark = pytest.mark.cluster


@pytest.fixture
def task_as_admin(kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    hook = LocalHook(kubeconfig, monkeypatch)
    yield
    hook.close_now()


def test_a_finished_event_whose_writes_were_lost_is_caught_up_by_the_tasks_resume(
        engine: Any, node_factory: Any, namespace: str, task_as_admin: None) -> None:
    from airflow_broadcast.operators.job_runtime import conclude
    from airflow_broadcast.reconcilers.broadcast_job.reconciler import BroadcastOptions
    from airflow_broadcast.triggers.job_reconcile import JobTriggerArgs

    node_factory(2, labels={"pool": namespace})
    submission = engine.submit(broadcast_job("early", namespace))
    driver = driver_for("BroadcastJob")
    announced: list[LoopOutcome] = []

    async def until_announced(kube: KubeClient) -> None:
        died = asyncio.Event()
        send = kube._request_once

        async def request_once(method: str, *args: Any) -> Any:
            if died.is_set() and method != "GET":  # nothing leaves a dead process, however soon it is cancelled
                await asyncio.Event().wait()
            return await send(method, *args)

        kube._request_once = request_once  # type: ignore[method-assign,assignment]

        def cut(outcome: LoopOutcome) -> None:  # the triggerer dies as the event goes out
            announced.append(outcome)
            died.set()
            loop.cancel()

        loop = asyncio.get_running_loop().create_task(run_reconcile_loop(
            kube, driver, namespace, submission.name, submission.uid, resync=1.0, announce=cut))
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(loop, 120)

    engine.run_async(until_announced)
    assert [o.reason for o in announced] == [LoopReason.FINISHED]
    assert driver.kind.is_finished(announced[0].status)
    behind = engine.record("BroadcastJob", "early")
    assert not driver.kind.is_finished(_status(behind))  # the finishing writes never went out
    assert EXPIRES_AT not in (behind.metadata.annotations or {})

    args = JobTriggerArgs(kind="BroadcastJob", namespace=namespace, record_name=submission.name, uid=submission.uid,
                          options=BroadcastOptions())
    result = conclude(args, "finished", "", logging.getLogger("test.early_event"))

    caught_up = engine.record("BroadcastJob", "early")
    assert driver.kind.is_finished(_status(caught_up))
    assert result["name"] == "early" and result["uid"] == submission.uid
    annotations = caught_up.metadata.annotations or {}
    assert EXPIRES_AT in annotations and annotations.get(RESULT_READ) == "true"


def _status(record: Any) -> dict[str, Any]:
    import json

    return dict(json.loads((record.data or {}).get("status") or "{}"))
