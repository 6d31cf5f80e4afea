"""Kill and timeout cleanup delete only pods the job record controls, not every pod wearing its label."""

from __future__ import annotations

from typing import Any

from airflow_broadcast.cluster.job_control import owned_by_record, stop_active_children
from airflow_broadcast.reconcilers.observed import RECORD_UID_LABEL

UID = "record-uid"
RECORD = "bcj-job"


def pod(name: str, *, phase: str = "Running", owner: dict[str, Any] | None = None) -> dict[str, Any]:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": RECORD, "uid": UID, "controller": True}
    return {"metadata": {"name": name, "uid": f"uid-{name}", "labels": {RECORD_UID_LABEL: UID},
                         "ownerReferences": [owner if owner is not None else ref]},
            "status": {"phase": phase}}


class PodApi:
    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods
        self.selectors: list[str] = []
        self.deleted: list[tuple[str, str | None]] = []

    async def list_all(self, path: str, **query: Any) -> tuple[list[dict[str, Any]], str]:
        assert path == "/api/v1/namespaces/ns/pods"
        self.selectors.append(query["labelSelector"])
        return self.pods, "1"

    async def delete(self, path: str, **kwargs: Any) -> dict[str, Any]:
        self.deleted.append((path, kwargs.get("preconditions_uid")))
        return {}


async def test_a_labelled_pod_controlled_by_something_else_is_not_deleted() -> None:
    impostor = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-uid", "controller": True}
    api = PodApi([pod("job-a"), pod("web-1", owner=impostor)])

    stopped = await stop_active_children(api, "ns", RECORD, UID)  # type: ignore[arg-type]

    assert stopped == 1
    assert api.selectors == [f"{RECORD_UID_LABEL}={UID}"]
    assert api.deleted == [("/api/v1/namespaces/ns/pods/job-a", "uid-job-a")]


def test_ownership_needs_the_record_as_controller_by_kind_name_and_uid() -> None:
    same = {"apiVersion": "v1", "kind": "ConfigMap", "name": RECORD, "uid": UID}
    assert owned_by_record(pod("a"), RECORD, UID)
    assert not owned_by_record(pod("a", owner={**same, "controller": False}), RECORD, UID)
    assert not owned_by_record(pod("a", owner={**same, "controller": True, "uid": "other"}), RECORD, UID)
    assert not owned_by_record(pod("a", owner={**same, "controller": True, "kind": "Secret"}), RECORD, UID)
    assert not owned_by_record(pod("a", owner={**same, "controller": True, "name": "bcj-other"}), RECORD, UID)
    assert not owned_by_record({"metadata": {"name": "a"}}, RECORD, UID)
    assert not owned_by_record(pod("a"), RECORD, "")


async def test_finished_and_terminating_pods_of_the_job_stay() -> None:
    terminating = pod("job-c")
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    api = PodApi([pod("job-a", phase="Succeeded"), pod("job-b", phase="Failed"), terminating,
                  pod("job-d", phase="Pending")])

    assert await stop_active_children(api, "ns", RECORD, UID) == 1  # type: ignore[arg-type]
    assert [path for path, _ in api.deleted] == ["/api/v1/namespaces/ns/pods/job-d"]
