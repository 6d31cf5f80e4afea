"""wait_for_conditions against a stand-in API: the watch's own object, deletion, and a watch that breaks (N5)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import pytest

from airflow_broadcast.cluster import job_wait
from airflow_broadcast.cluster.api_errors import Forbidden, ServerError
from airflow_broadcast.cluster.job_api import JobNotFound
from airflow_broadcast.cluster.job_records import new_record
from airflow_broadcast.exceptions import JobFailedError

MANIFEST = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tf"}]}}}}}}


def record(version: int, *conditions: str) -> dict[str, Any]:
    raw = new_record("TFJob", "w", "ns", MANIFEST, {"conditions": [
        {"type": c, "status": "True", "reason": c, "message": f"{c} now"} for c in conditions]}, {})
    raw["metadata"].update(uid="u", resourceVersion=str(version))
    return raw


class Api:
    """GET answers `gets` in turn; each WATCH yields the next scripted batch (an exception is raised)."""

    def __init__(self, gets: list[dict[str, Any]], watches: list[list[tuple[str, dict[str, Any]]] | Exception]):
        self.gets, self.watches, self.get_count, self.watch_versions = gets, watches, 0, []

    async def get(self, path: str, **query: Any) -> dict[str, Any]:
        self.get_count += 1
        return self.gets.pop(0)

    async def watch(self, path: str, *, resource_version: str, timeout_seconds: int,
                    **query: Any) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
        self.watch_versions.append(resource_version)
        assert query == {"fieldSelector": "metadata.name=tfjob-w"}
        batch = self.watches.pop(0)
        if isinstance(batch, Exception):
            raise batch
        for event in batch:
            yield event


async def test_N5_a_change_is_judged_from_the_watch_and_a_job_deleted_when_done_still_answers() -> None:
    api = Api([record(1, "Created")], [[("BOOKMARK", {"metadata": {"resourceVersion": "2"}}),
                                        ("MODIFIED", record(3, "Created", "Running"))],
                                       [("DELETED", record(4, "Created", "Succeeded"))]])
    seen: list[str] = []
    job = await job_wait.wait_for_conditions(api, "TFJob", "ns", "w", callback=lambda j: seen.append(  # type: ignore[arg-type]
        j["metadata"]["resourceVersion"]))
    assert job["metadata"]["resourceVersion"] == "4" and api.get_count == 1, "one GET: the rest came on the watch"
    assert api.watch_versions == ["1", "3"] and seen == ["1", "3", "4"]


async def test_N5_a_job_deleted_before_its_condition_is_not_found() -> None:
    api = Api([record(1, "Created")], [[("DELETED", record(2, "Created", "Running"))]])
    with pytest.raises(JobNotFound):
        await job_wait.wait_for_conditions(api, "TFJob", "ns", "w")  # type: ignore[arg-type]


async def test_N5_a_watch_that_breaks_waits_out_its_interval_and_reads_again() -> None:
    error = ServerError(503, "ServiceUnavailable", "try later", verb="WATCH", target="/api/v1/configmaps")
    api = Api([record(1, "Created"), record(2, "Created", "Failed")], [error])
    with pytest.raises(JobFailedError, match="TFJob ns/w is Failed: Failed: Failed now"):
        await job_wait.wait_for_conditions(api, "TFJob", "ns", "w", polling_interval=0.05)  # type: ignore[arg-type]
    assert api.get_count == 2
    refused = Api([record(1, "Created")], [Forbidden(403, "Forbidden", "no watch", verb="WATCH", target="/x")])
    with pytest.raises(Forbidden):
        await job_wait.wait_for_conditions(refused, "TFJob", "ns", "w")  # type: ignore[arg-type]
