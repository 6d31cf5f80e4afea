"""submit_job when the answer to its own create is lost: the retried POST meets the record it made."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from airflow_broadcast.cluster import api_errors as e
from airflow_broadcast.cluster.job_submission import submit_job
from airflow_broadcast.cluster.kinds.registry import kind_for
from airflow_broadcast.exceptions import JobConflictError

MANIFEST = {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": "nightly"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


class _LostAnswer:
    """Stores each create, then answers as a retried POST does after the first answer was lost: 409."""

    def __init__(self, existing: dict[str, Any] | None = None) -> None:
        self.stored: dict[str, dict[str, Any]] = {}
        if existing is not None:
            self.stored[existing["metadata"]["name"]] = existing

    async def get(self, path: str, **query: Any) -> dict[str, Any]:
        name = path.rsplit("/", 1)[-1]
        if name not in self.stored:
            raise e.NotFound(404, "NotFound", "not found")
        return copy.deepcopy(self.stored[name])

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        stored = copy.deepcopy(body)
        stored["metadata"].update(uid="u-1", resourceVersion="1")
        self.stored[stored["metadata"]["name"]] = stored
        raise e.AlreadyExists(409, "AlreadyExists", f'configmaps "{stored["metadata"]["name"]}" already exists')


@pytest.mark.parametrize("reattach", [False, True])
async def test_a_lost_answer_to_our_own_create_is_our_new_record_not_a_conflict(reattach: bool) -> None:
    client = _LostAnswer()
    record, reattached = await submit_job(client, kind_for("BroadcastJob"), "nightly", "ops", MANIFEST,  # type: ignore[arg-type]
                                          submitter="d/t/r/-1", reattach=reattach)
    assert (record.name, record.uid, reattached) == ("bcj-nightly", "u-1", False)


async def test_a_running_record_of_the_same_task_from_an_earlier_try_is_still_a_conflict_without_reattach() -> None:
    first = _LostAnswer()
    await submit_job(first, kind_for("BroadcastJob"), "nightly", "ops", MANIFEST,  # type: ignore[arg-type]
                     submitter="d/t/r/-1", reattach=False)
    again = _LostAnswer(existing=first.stored["bcj-nightly"])
    with pytest.raises(JobConflictError, match="already running"):
        await submit_job(again, kind_for("BroadcastJob"), "nightly", "ops", MANIFEST,  # type: ignore[arg-type]
                         submitter="d/t/r/-1", reattach=False)
