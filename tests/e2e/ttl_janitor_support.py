"""What the TTL janitor end-to-end tests share: a job's timeline as the cluster shows it, and the janitor's traces."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from airflow_broadcast.specs.timestamps import from_rfc3339
from devcluster.airflow_env import AirflowEnv, DagRunResult
from devcluster.airflow_stack import AirflowStack

EXPIRES_AT = "airflow-broadcast.io/expires-at"
RESULT_READ = "airflow-broadcast.io/result-read"
LEASE = "airflow-broadcast-ttl-janitor"
JANITOR_DAG = "airflow_broadcast_ttl_janitor"


def janitor_dag_file(namespaces: list[str]) -> str:
    """The DAG file the README tells users to add, for `namespaces`."""
    return ("from airflow_broadcast.janitor import ttl_janitor_dag\n\n"
            f"dag = ttl_janitor_dag(namespaces={json.dumps(namespaces)})\n")


@dataclass
class Timeline:
    """When things happened to one job, as polled from the cluster (epoch seconds)."""

    uid: str = ""
    expires: float | None = None
    result_read: bool = False
    task_ended_at: float | None = None
    record_gone_at: float | None = None
    children_gone_at: float | None = None
    result: DagRunResult | None = None
    seen: list[str] = field(default_factory=list)

    @property
    def gone_at(self) -> float:
        assert self.record_gone_at is not None and self.children_gone_at is not None, self.seen
        return max(self.record_gone_at, self.children_gone_at)


class RecordWatch:
    """Every version of the job's record, from a watch begun before the job is submitted.

    A poll can miss a version: with TTL 0 the task deletes the record a few milliseconds after it
    writes the expiry, so the expiry and the deletion are read from the watch's events instead.
    """

    def __init__(self, core: client.CoreV1Api, namespace: str, selector: str, timeline: Timeline) -> None:
        self.core, self.namespace, self.selector, self.timeline = core, namespace, selector, timeline
        self.version = core.list_namespaced_config_map(namespace, label_selector=selector).metadata.resource_version
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"record-watch-{selector}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for event in watch.Watch().stream(self.core.list_namespaced_config_map, self.namespace,
                                                  label_selector=self.selector, resource_version=self.version,
                                                  timeout_seconds=1):
                    self._seen(event["type"], event["object"].metadata)
            except ApiException as exc:
                if exc.status == 410:  # shows in the timeline the test fails with
                    self.timeline.seen.append("the watch lost its place (410): versions after it are unknown")
                    return
                time.sleep(0.1)
            except Exception:  # a dropped connection: watch again from the last version seen
                time.sleep(0.1)

    def _seen(self, kind: str, meta: Any) -> None:
        now, timeline = time.time(), self.timeline
        self.version = meta.resource_version or self.version
        timeline.seen.append(f"{kind} {meta.resource_version}")
        timeline.uid = meta.uid
        annotations = meta.annotations or {}
        timeline.expires = from_rfc3339(annotations.get(EXPIRES_AT)) or timeline.expires
        timeline.result_read = timeline.result_read or annotations.get(RESULT_READ) == "true"
        if kind == "DELETED" and timeline.record_gone_at is None:
            timeline.record_gone_at = now


def run_and_watch(env: AirflowEnv, dag_id: str, namespace: str, manifest: dict[str, Any], kind: str,
                  core: client.CoreV1Api, *, on_task_end: Callable[[], None] | None = None,
                  timeout: float = 180.0) -> Timeline:
    """Run `dag_id` through `airflow dags test` in a thread, watch the job's record and poll its children until
    the record and every child are gone and the run has ended; `on_task_end` runs once, right after the run ended."""
    timeline = Timeline()
    runner = threading.Thread(target=lambda: setattr(timeline, "result", env.dags_test(
        dag_id, conf={"namespace": namespace, "manifest": manifest})), daemon=True)
    selector = f"airflow-broadcast.io/kind={kind},airflow-broadcast.io/job-name={manifest['metadata']['name']}"
    record = RecordWatch(core, namespace, selector, timeline)
    runner.start()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            now = time.time()
            if timeline.record_gone_at is not None and timeline.children_gone_at is None \
                    and not children(core, namespace, timeline.uid):
                timeline.children_gone_at = now
            if not runner.is_alive() and timeline.task_ended_at is None:
                timeline.task_ended_at = now
                if on_task_end is not None:
                    on_task_end()
            if timeline.task_ended_at is not None and timeline.record_gone_at and timeline.children_gone_at:
                return timeline
            time.sleep(0.1)
    finally:
        record.stop()
    raise AssertionError(f"{kind} {namespace}/{manifest['metadata']['name']} not cleaned up within {timeout} s: "
                         f"{timeline}")


def children(core: client.CoreV1Api, namespace: str, uid: str) -> list[str]:
    selector = f"airflow-broadcast.io/job-uid={uid}"
    pods = core.list_namespaced_pod(namespace, label_selector=selector).items
    services = core.list_namespaced_service(namespace, label_selector=selector).items
    return [f"pod/{p.metadata.name}" for p in pods] + [f"service/{s.metadata.name}" for s in services]


def lease_holder(coordination: client.CoordinationV1Api, namespace: str) -> str:
    """The janitor lease's holder while it is fresh, else ''."""
    lease = read_lease(coordination, namespace)
    if lease is None:
        return ""
    renewed = lease.spec.renew_time.timestamp() if lease.spec.renew_time else 0.0
    return str(lease.spec.holder_identity) if time.time() < renewed + lease.spec.lease_duration_seconds else ""


def lease_overdue(coordination: client.CoordinationV1Api, namespace: str) -> float:
    """Seconds since the janitor lease ran out (0 while fresh): a janitor only late to renew stays near 0."""
    lease = read_lease(coordination, namespace)
    if lease is None or lease.spec.renew_time is None:
        return 0.0
    return max(0.0, time.time() - lease.spec.renew_time.timestamp() - lease.spec.lease_duration_seconds)


def read_lease(coordination: client.CoordinationV1Api, namespace: str) -> Any:
    try:
        return coordination.read_namespaced_lease(LEASE, namespace)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def janitor_cleanups(stack: AirflowStack) -> list[dict[str, Any]]:
    """The cleanups the UI shows: payloads of the janitor asset's events, from the REST API.

    Airflow 3.3.2 answers 500 while a DAG run the event created has no start date yet (its response model
    requires one); that passes once the run starts, so it reads as "not yet" to the caller's poll.
    """
    try:
        events = stack.api("GET", "/api/v2/assets/events?limit=100")
    except urllib.error.HTTPError as exc:
        if exc.code != 500:
            raise
        return []
    return [e["extra"]["payload"] for e in events.get("asset_events", [])
            if e.get("name") == f"{JANITOR_DAG}.cleanups" and (e.get("extra") or {}).get("payload")]


def reported_cleanups(stack: AirflowStack) -> list[str]:
    """What the janitor DAG's successful runs returned: `<namespace>/<record>` per cleanup."""
    runs = stack.api("GET", f"/api/v2/dags/{JANITOR_DAG}/dagRuns?limit=100").get("dag_runs", [])
    reported: list[str] = []
    for run in runs:
        if run["state"] != "success":
            continue
        xcom = stack.api("GET", f"/api/v2/dags/{JANITOR_DAG}/dagRuns/{run['dag_run_id']}/taskInstances/"
                                "report_cleanups/xcomEntries/return_value")
        reported += xcom.get("value") or []
    return reported


def within(stack: AirflowStack, check: Callable[[], Any], timeout: float, what: str) -> Any:
    """Wait (bounded) for `check()`; on timeout fail with the Airflow components' log tails."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s\n{stack.log_tails()}")
        time.sleep(0.2)
    return value
