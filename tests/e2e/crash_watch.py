"""What the crash tests observe: every pod and job-record event of a namespace, stamped with its arrival time.

The watches run in threads from before the job exists until after it ended, so no pod a
crashed and a restarted trigger create can go unseen, even one deleted again at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

RECORD_SELECTOR = "app.kubernetes.io/managed-by=airflow-broadcast"
NODE_ANNOTATION = "airflow-broadcast.io/node"
REPLICA_TYPE = "training.kubeflow.org/replica-type"
REPLICA_INDEX = "training.kubeflow.org/replica-index"


class Seen(NamedTuple):
    """One watch event: arrival time (epoch), type (ADDED, MODIFIED, DELETED) and the object as JSON."""

    at: float
    type: str
    obj: dict[str, Any]

    @property
    def uid(self) -> str:
        return str(self.obj["metadata"]["uid"])


class Watcher:
    """Watch one resource of one namespace in a thread; `events` grows until `stop()`."""

    def __init__(self, lister: Callable[..., Any], namespace: str, label_selector: str = "") -> None:
        self.lister, self.namespace, self.selector = lister, namespace, label_selector
        self.events: list[Seen] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._known: set[str] = set()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Watcher:
        self._thread.start()
        self._ready.wait(30)
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=15)

    def snapshot(self) -> list[Seen]:
        with self._lock:
            return list(self.events)

    def _note(self, kind: str, obj: dict[str, Any]) -> None:
        uid = obj["metadata"]["uid"]
        if kind == "ADDED" and uid in self._known:
            return  # a re-list repeats what we saw
        self._known.add(uid)
        with self._lock:
            self.events.append(Seen(time.time(), kind, obj))

    def _relist(self) -> str:
        listed = json.loads(self.lister(self.namespace, label_selector=self.selector, _preload_content=False).data)
        for obj in listed["items"]:
            self._note("ADDED", obj)
        return str(listed["metadata"]["resourceVersion"])

    def _run(self) -> None:
        version = self._relist()
        self._ready.set()
        while not self._stopping.is_set():
            try:
                for event in watch.Watch().stream(self.lister, self.namespace, label_selector=self.selector,
                                                  resource_version=version, timeout_seconds=2,
                                                  allow_watch_bookmarks=True):
                    obj = event["raw_object"]
                    version = obj["metadata"].get("resourceVersion", version)
                    if event["type"] != "BOOKMARK":
                        self._note(event["type"], obj)
            except ApiException as exc:
                if exc.status != 410:
                    raise
                version = self._relist()


def pod_key(pod: dict[str, Any]) -> str:
    """The slot a pod fills: its node (BroadcastJob) or `<replica type>-<index>` (TFJob)."""
    meta = pod["metadata"]
    if NODE_ANNOTATION in (meta.get("annotations") or {}):
        return str(meta["annotations"][NODE_ANNOTATION])
    labels = meta.get("labels") or {}
    return f"{labels.get(REPLICA_TYPE, '?')}-{labels.get(REPLICA_INDEX, '?')}"


@dataclass(frozen=True)
class PodCount:
    """Pods created over a whole run: duplicates are pods beyond one per slot, or names reused by another uid."""

    created: int
    slots: int
    duplicate_slots: int
    duplicate_names: int
    missed: tuple[str, ...]


def count_pods(events: list[Seen], expected: set[str]) -> PodCount:
    added = [e.obj for e in events if e.type == "ADDED"]
    uids_per_slot: dict[str, set[str]] = {}
    uids_per_name: dict[str, set[str]] = {}
    for pod in added:
        uids_per_slot.setdefault(pod_key(pod), set()).add(pod["metadata"]["uid"])
        uids_per_name.setdefault(pod["metadata"]["name"], set()).add(pod["metadata"]["uid"])
    return PodCount(
        created=len({p["metadata"]["uid"] for p in added}), slots=len(uids_per_slot),
        duplicate_slots=sum(len(u) - 1 for u in uids_per_slot.values()),
        duplicate_names=sum(len(u) - 1 for u in uids_per_name.values()),
        missed=tuple(sorted(expected - set(uids_per_slot))),
    )


class JobWatch:
    """The pods and the job records of one namespace, watched together."""

    def __init__(self, core: client.CoreV1Api, namespace: str) -> None:
        self.pods = Watcher(core.list_namespaced_pod, namespace)
        self.records = Watcher(core.list_namespaced_config_map, namespace, RECORD_SELECTOR)

    def __enter__(self) -> JobWatch:
        self.pods.start()
        self.records.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.pods.stop()
        self.records.stop()

    def pods_alive(self) -> int:
        """Pods created so far (deleted ones included: a kill point counts creates)."""
        return len({e.uid for e in self.pods.snapshot() if e.type == "ADDED"})

    def last_record(self) -> Seen | None:
        events = self.records.snapshot()
        return events[-1] if events else None

    def status(self) -> dict[str, Any]:
        last = self.last_record()
        if last is None or last.type == "DELETED":
            return {}
        return dict(json.loads((last.obj.get("data") or {}).get("status") or "{}"))

    def first_action_after(self, moment: float) -> float | None:
        """When a trigger next acted (created a pod or wrote the record) after `moment`, or None."""
        acts = [e.at for e in self.pods.snapshot() if e.type == "ADDED" and e.at > moment]
        acts += [e.at for e in self.records.snapshot() if e.type == "MODIFIED" and e.at > moment]
        return min(acts) if acts else None


def counted(status: dict[str, Any]) -> int:
    """Pods the record's status accounts for (active, succeeded, failed), for either kind."""
    if "replicaStatuses" in status:
        return sum(int(r.get(k) or 0) for r in status["replicaStatuses"].values()
                   for k in ("active", "succeeded", "failed"))
    return sum(int(status.get(k) or 0) for k in ("active", "succeeded", "failed"))
