"""Run one manifest through the real controller and through our engine, each in its own namespace, and wait
until each has settled; the comparison of what they left behind is in differential_snapshot.py."""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from differential_snapshot import compare, normalise_status, snapshot
from kubernetes import client
from status_history import GROUPS

from airflow_broadcast.cluster.job_records import EXPIRES_AT
from airflow_broadcast.cluster.ttl_sweeper import sweep_expired_records
from airflow_broadcast.specs.timestamps import from_rfc3339

__all__ = ["compare", "create_upstream", "hold_upstream", "run_ours", "snapshot", "wait_upstream"]


def finished(kind: str, status: Mapping[str, Any]) -> bool:
    conditions = {c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"}
    if kind == "BroadcastJob":
        return status.get("phase") in ("completed", "failed") or bool(conditions & {"Complete", "Failed"})
    return bool(conditions & {"Succeeded", "Failed"})


def create_upstream(api: client.ApiClient, kind: str, namespace: str, manifest: Mapping[str, Any]) -> str:
    """Create the custom resource for the real controller; returns its name."""
    group, version, plural = GROUPS[kind]
    body = copy.deepcopy(dict(manifest))
    body["metadata"] = {**body["metadata"], "namespace": namespace}
    client.CustomObjectsApi(api).create_namespaced_custom_object(group, version, namespace, plural, body)
    return str(body["metadata"]["name"])


def hold_upstream(api: client.ApiClient, kind: str, namespace: str, name: str, until: float) -> dict[str, Any]:
    """The status of a job meant to stay open, read at `until` (monotonic)."""
    group, version, plural = GROUPS[kind]
    time.sleep(max(0.0, until - time.monotonic()))
    body = client.CustomObjectsApi(api).get_namespaced_custom_object(group, version, namespace, plural, name)
    return dict(body.get("status") or {})


def _read_status(custom: client.CustomObjectsApi, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The job's status, or None once it is deleted."""
    group, version, plural = GROUPS[kind]
    try:
        return dict(custom.get_namespaced_custom_object(group, version, namespace, plural, name).get("status") or {})
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def wait_upstream(api: client.ApiClient, kind: str, namespace: str, name: str, timeout: float = 60.0,
                  quiet: float = 2.0, gone: bool = False) -> dict[str, Any]:
    """Wait until the controller reports the job finished (with `gone`, until its TTL deleted it) and then until
    its status and pods have not changed for `quiet` seconds (its cleanup and last counts land after the
    condition); returns the status, with `_unfinished: True` when it did not finish within `timeout` seconds,
    or `{"_deleted": True}` once it is deleted."""
    custom = client.CustomObjectsApi(api)
    core = client.CoreV1Api(api)
    deadline = time.monotonic() + timeout
    last: tuple[str, ...] = ()
    quiet_since = 0.0
    while True:
        status = _read_status(custom, kind, namespace, name)
        now = time.monotonic()
        if status is None:
            wait_dependents_gone(core, namespace)
            settle_pods(core, namespace, quiet=quiet)
            return {"_deleted": True}
        if not finished(kind, status) or gone:
            if now > deadline:
                return {**status, "_unfinished": True}
        else:
            pods = core.list_namespaced_pod(namespace).items
            seen = (json.dumps(normalise_status(kind, status), sort_keys=True),
                    *sorted(f"{p.metadata.name}:{p.status.phase}:{p.metadata.deletion_timestamp}" for p in pods))
            if seen != last:
                last, quiet_since = seen, now
            elif now - quiet_since >= quiet:
                return status
        time.sleep(0.3)


def run_ours(engine: Any, kind: str, manifest: Mapping[str, Any], timeout: float = 60.0,
             hold: float | None = None, busy: Callable[[], bool] = lambda: False, gone: bool = False) -> dict[str, Any]:
    """Submit the manifest to our engine and drive its reconcile loop until it finishes (or, for a job that
    is meant to stay open, such as a paused one, for `hold` seconds); returns its status.

    A `Never` job whose nodes are all done settles, and a waiting task would return; while `busy()` (timed
    actions still to come) or the hold lasts, the loop is driven again, as a later task would. With `gone`,
    the job's TTL is waited for and the expired record deleted, as the TTL janitor does once a task has read
    the result."""
    submission = engine.submit(manifest)
    end = None if hold is None else time.time() + hold
    while True:
        outcome = engine.drive(submission, kind, deadline=end, timeout=(hold or 0.0) + timeout)
        if outcome.reason != "settled" or not (busy() or (end is not None and time.time() < end - 0.5)):
            break
        time.sleep(0.5)
    assert outcome.reason in (("finished",) if hold is None else ("timeout", "settled")), outcome
    name = manifest["metadata"]["name"]
    if gone:
        expire_ours(engine, kind, name)
        wait_dependents_gone(engine.core, engine.namespace)
    settle_pods(engine.core, engine.namespace)
    return {"_deleted": True} if gone else dict(engine.status(kind, name))


def expire_ours(engine: Any, kind: str, name: str) -> None:
    """Wait for the record's TTL stamp, then delete it as the janitor does for a result already read."""
    record = engine.record(kind, name)
    assert record is not None
    expires = from_rfc3339((record.metadata.annotations or {}).get(EXPIRES_AT))
    assert expires is not None, f"the finished record {name} has no TTL stamp"
    time.sleep(max(0.0, expires - time.time()))
    deleted = engine.run_async(lambda kube: sweep_expired_records(kube, engine.namespace, unread_grace=0.0))
    assert deleted, f"the expired record {name} was not deleted"


def wait_dependents_gone(core: client.CoreV1Api, namespace: str, timeout: float = 90.0) -> None:
    """Wait until the garbage collector has removed the deleted job's pods (every pod in a TTL case's namespace
    is the job's). Upstream's pods go only once the collector's graph sees its owner's deletion, which can lag
    the deletion by its monitor resync; a pod still there after `timeout` is left for the comparison to report."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(p.metadata.owner_references for p in core.list_namespaced_pod(namespace).items):
            return
        time.sleep(0.5)


def settle_pods(core: client.CoreV1Api, namespace: str, quiet: float = 2.0, timeout: float = 20.0) -> None:
    """Wait until the namespace's pods have not changed phase for `quiet` seconds (scripted pods that outlive
    the job's end finish on their own, under either engine)."""
    deadline = time.monotonic() + timeout
    last: list[str] = []
    since = time.monotonic()
    while time.monotonic() < deadline:
        seen = sorted(f"{p.metadata.name}:{p.status.phase}:{p.metadata.deletion_timestamp}"
                      for p in core.list_namespaced_pod(namespace).items)
        if seen != last:
            last, since = seen, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.3)


def run_actions(actions: list[tuple[float, Callable[[], None]]], start: float,
                errors: list[BaseException]) -> threading.Thread:
    """Take each action at its time (seconds after `start`, monotonic) from a background thread; what an
    action raises goes to `errors` (the test fails on it)."""
    def play() -> None:
        for at, action in sorted(actions, key=lambda item: item[0]):
            time.sleep(max(0.0, start + at - time.monotonic()))
            try:
                action()
            except Exception as exc:  # reported by the test, not lost in the thread
                errors.append(exc)

    thread = threading.Thread(target=play, name="differential-actions", daemon=True)
    thread.start()
    return thread

