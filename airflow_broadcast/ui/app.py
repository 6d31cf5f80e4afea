"""The plugin's FastAPI app, mounted in the Airflow api-server at /broadcast-jobs: the page and its JSON API.

Every answer is filtered by the auth manager (the DAG that submitted a job) and passed through
Airflow's secrets masker; the page never sees a manifest or a connection, only what the rows show.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Query
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.job_records import record_view
from airflow_broadcast.cluster.kinds.registry import kind_for
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.reconcilers.handoff import resource_view
from airflow_broadcast.reconcilers.observed import PodInfo
from airflow_broadcast.triggers.task_output import shown_log_tail, shown_result
from airflow_broadcast.ui import reads
from airflow_broadcast.ui.access import Method, UserDep, may, readable
from airflow_broadcast.ui.handoff_view import parse_resource_id, resource_detail, resource_summary
from airflow_broadcast.ui.job_view import PAGE_SIZE, job_detail, job_summary, matches, page_of
from airflow_broadcast.ui.settings import ui_connections

STATIC = Path(__file__).parent / "static"
FILTERS = (("phase", "phase"), ("kind", "kind"), ("namespace", "namespace"), ("dag", "dagId"),
           ("controller", "controller"))
LOG_LINES = 100
LOG_BYTES = 65536

app = FastAPI(title="Broadcast jobs", docs_url=None, redoc_url=None, openapi_url=None)
app.mount("/static", StaticFiles(directory=STATIC), name="static")


@app.get("/", include_in_schema=False)
async def index() -> FileResponse:
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})


def _connection(conn: str) -> str:
    if conn not in ui_connections():
        raise HTTPException(404, f"connection {conn!r} is not shown on this page")
    return conn


async def _summaries(conn: str, now: float) -> list[dict[str, Any]]:
    """Job records (Airflow runs them) and the custom resources Airflow handed to the cluster's controller."""
    client = await reads.client_for(conn)
    lines = [job_summary(raw, now) for raw in await reads.records(client)]
    lines += [resource_summary(raw, now) for raw in await reads.resources(client)]
    return [{**line, "conn": conn} for line in lines]


@app.get("/api/jobs")
async def list_jobs(user: UserDep, phase: str | None = None, kind: str | None = None, namespace: str | None = None,
                    dag: str | None = None, controller: str | None = None) -> dict[str, Any]:
    """The jobs the user may see, newest first, with the filters applied."""
    now = time.time()
    jobs: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    for conn in ui_connections():
        try:
            jobs += await _summaries(conn, now)
        except (ClusterApiError, TimeoutError) as exc:
            errors[conn] = str(exc)
    allowed = readable(user, (job["dagId"] for job in jobs))
    shown = [job for job in jobs if job["dagId"] in allowed]
    filters = {"phase": phase, "kind": kind, "namespace": namespace, "dag": dag, "controller": controller}
    return shown_result({
        "jobs": sorted((j for j in shown if matches(j, filters)), key=lambda j: j["age"] or 0.0),
        "choices": {key: sorted({str(j[field]) for j in shown if j[field]}) for key, field in FILTERS},
        "errors": errors,
    })


async def _record(user: Any, conn: str, namespace: str, record: str, method: Method = "GET"
                  ) -> tuple[KubeClient, dict[str, Any], dict[str, Any]]:
    """The job a page URL names (a job record, or a custom resource by its `~plural.name` id), the client that
    reads it and its summary; 404 when gone, 403 when the user may not see it (or stop it, for PUT)."""
    client = await reads.client_for(_connection(conn))
    now = time.time()
    resource = parse_resource_id(record)
    if resource is None:
        raw = next((r for r in await reads.records(client) if (r.get("metadata") or {}).get("namespace") == namespace
                    and r["metadata"].get("name") == record), None)
        summary = None if raw is None else job_summary(raw, now)
    else:
        raw = next((r for r in await reads.resources(client) if (r["kind"], r["metadata"].get("name")) == resource
                    and r["metadata"].get("namespace") == namespace), None)
        summary = None if raw is None else resource_summary(raw, now)
    if raw is None or summary is None:
        raise HTTPException(404, f"no job {namespace}/{record}")
    if not may(user, summary["dagId"], "GET") or (method == "PUT" and not may(user, summary["dagId"], "PUT")):
        raise HTTPException(403, "you may not " + ("see" if method == "GET" else "stop") + " this job")
    return client, raw, summary


async def _pods(client: KubeClient, summary: dict[str, Any]) -> list[PodInfo]:
    if summary["controller"] == "cluster":
        return await reads.resource_pods(client, summary["kind"], summary["namespace"], summary["name"],
                                         summary["uid"])
    return await reads.job_pods(client, summary["namespace"], summary["uid"])


@app.get("/api/jobs/{conn}/{namespace}/{record}")
async def get_job(user: UserDep, conn: str, namespace: str, record: str, page: int = 0,
                  size: int = Query(PAGE_SIZE, ge=1, le=1000), sort: str = "", desc: bool = False
                  ) -> dict[str, Any]:
    """The job page: summary, one sorted page of node or replica rows, conditions, warnings."""
    client, raw, summary = await _record(user, conn, namespace, record)
    pods = await _pods(client, summary)
    if summary["controller"] == "cluster":
        detail = resource_detail(raw, pods, time.time())
    else:
        detail = job_detail(raw, pods, time.time(), await reads.node_table(client, raw))
    rows = detail.pop("allRows")
    detail["table"] = page_of(rows, sort=sort, descending=desc, page=page, size=size, columns=detail["columns"])
    detail["warnings"] = await reads.warnings(client, namespace, summary["uid"], pods)
    detail["conn"] = conn
    detail["canStop"] = summary["controller"] == "airflow" and may(user, detail["dagId"], "PUT")
    return shown_result(detail)


@app.get("/api/jobs/{conn}/{namespace}/{record}/logs/{pod}")
async def get_log(user: UserDep, conn: str, namespace: str, record: str, pod: str) -> dict[str, str]:
    """The log tail of one of the job's pods, masked as the task log masks it."""
    client, raw, summary = await _record(user, conn, namespace, record)
    if pod not in {p.name for p in await _pods(client, summary)}:
        raise HTTPException(404, f"{pod} is not a pod of this job")
    manifest = (resource_view(raw) if summary["controller"] == "cluster" else record_view(raw)).manifest
    text = await reads.pod_log(client, namespace, pod, kind_for(summary["kind"]).log_container(manifest), LOG_LINES)
    return {"pod": pod, "text": shown_log_tail(text, LOG_LINES, LOG_BYTES)}


@app.post("/api/jobs/{conn}/{namespace}/{record}/stop")
async def stop(user: UserDep, conn: str, namespace: str, record: str) -> dict[str, Any]:
    """Stop a running job: only for users who may edit the DAG that submitted it, and only a job Airflow runs."""
    client, raw, summary = await _record(user, conn, namespace, record, "PUT")
    if summary["controller"] == "cluster":
        raise HTTPException(409, "the job is run by the cluster's controller; the page does not stop it")
    if kind_for(summary["kind"]).is_finished(record_view(raw).status):
        raise HTTPException(409, "the job has already finished")
    deleted = await reads.stop_job(client, summary["kind"], namespace, summary["name"], record, summary["uid"],
                                   user.get_name())
    return {"stopped": True, "deletedPods": deleted}


@app.get("/api/find")
async def find(user: UserDep, dag_id: str = "", run_id: str = "", task_id: str = "", map_index: int = -1,
               kind: str = "", name: str = "", namespace: str = "") -> dict[str, Any]:
    """The jobs a task instance submitted, or a job by kind, name and (optional) namespace: where links land."""
    now = time.time()
    found = []
    for conn in ui_connections():
        for job in await _summaries(conn, now):
            by_task = dag_id and (job["dagId"], job["runId"], job["taskId"], job["mapIndex"]) == (
                dag_id, run_id, task_id, map_index)
            by_name = name and (job["kind"], job["name"]) == (kind, name) and namespace in ("", job["namespace"])
            if by_task or by_name:
                found.append(job)
    allowed = readable(user, (job["dagId"] for job in found))
    if found and not any(job["dagId"] in allowed for job in found):
        raise HTTPException(403, "you may not see this job")
    return shown_result({"jobs": [job for job in found if job["dagId"] in allowed]})
