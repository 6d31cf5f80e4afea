"""The page's app against a fake cluster (records, hand-off resources, pods) and a fake auth manager."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from airflow.api_fastapi.core_api.security import get_user
from airflow.sdk.log import mask_secret
from fastapi.testclient import TestClient
from ui_fakes import AuthManager, Cluster, User
from ui_records import NOW, SECRET, pod, record

from airflow_broadcast.ui import access, reads
from airflow_broadcast.ui import app as app_module


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Cluster:
    state = Cluster()
    state.records = [
        record("BroadcastJob", "open", {"phase": "running", "desired": 2, "active": 1, "succeeded": 1,
                                        "nodes": {"n1": {"pod": "p1", "phase": "Failed", "exitCode": 1,
                                                         "message": f"token={SECRET}"}}}, dag="etl"),
        record("TFJob", "hidden", {"conditions": [{"type": "Running", "status": "True"}]}, dag="secret"),
    ]
    state.pods = [pod("p1", "Failed", node="n1", uid="uid-open", exit_code=1)]

    async def client_for(conn: str) -> str:
        return conn

    async def records(client: Any) -> list[dict[str, Any]]:
        return state.records

    async def resources(client: Any) -> list[dict[str, Any]]:
        return state.resources

    async def job_pods(client: Any, namespace: str, uid: str) -> list[Any]:
        return [p for p in state.pods if p.labels.get("airflow-broadcast.io/job-uid") == uid]

    async def resource_pods(client: Any, kind: str, namespace: str, name: str, uid: str) -> list[Any]:
        return [p for p in state.pods if p.owner_uid == uid and p.owner_kind == kind]

    async def warnings(client: Any, namespace: str, uid: str, pods: list[Any]) -> list[dict[str, Any]]:
        state.warned.append((uid, [p.name for p in pods]))
        return [{"object": "Pod/p1", "reason": "BackOff", "message": f"pull with {SECRET}", "count": 2}]

    async def pod_log(client: Any, namespace: str, name: str, container: str | None, lines: int) -> str:
        state.logged.append((name, container))
        return f"line 1\npassword {SECRET}\n"

    async def stop_job(client: Any, kind: str, namespace: str, name: str, rec: str, uid: str, user: str) -> int:
        state.stopped.append((kind, namespace, name, rec, uid, user))
        return 1

    fakes = {"client_for": client_for, "records": records, "resources": resources, "job_pods": job_pods,
             "resource_pods": resource_pods, "warnings": warnings, "pod_log": pod_log, "stop_job": stop_job}
    for name, fake in fakes.items():
        monkeypatch.setattr(reads, name, fake)
    monkeypatch.setattr(access, "get_auth_manager", AuthManager)
    monkeypatch.setattr(app_module.time, "time", lambda: NOW)
    mask_secret(SECRET)
    return state


@pytest.fixture
def as_user() -> Iterator[Any]:
    client = TestClient(app_module.app)

    def login(name: str) -> TestClient:
        app_module.app.dependency_overrides[get_user] = lambda: User(name)
        return client

    yield login
    app_module.app.dependency_overrides.clear()


