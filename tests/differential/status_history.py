"""Each engine's job status at every change it makes, from a watch on the object that holds it: the custom
resource under the real controller, the job record ConfigMap under ours.

The comparison keeps only the stages a job passes through, not every counter step: for a BroadcastJob its
phase (with its conditions), for a TFJob the condition types that are True, in the order of the list. The
sequence is the ordered list of distinct stages, so a state one engine writes twice, or flaps through, reads
the same as one written once.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from airflow_broadcast.cluster.job_records import record_name

GROUPS = {"BroadcastJob": ("apps.kruise.io", "v1beta1", "broadcastjobs"), "TFJob": ("kubeflow.org", "v1", "tfjobs")}


class StatusHistory:
    """Watches one job's status from a background thread; `states` holds each distinct consecutive status."""

    def __init__(self, api: client.ApiClient, kind: str, namespace: str, name: str, *, ours: bool) -> None:
        self.kind, self.namespace, self.ours = kind, namespace, ours
        self.object_name = record_name(kind, name) if ours else name
        self.api = api
        self.states: list[dict[str, Any]] = []
        self.deleted = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"history-{self.object_name}", daemon=True)

    def __enter__(self) -> StatusHistory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    @property
    def last(self) -> dict[str, Any]:
        return self.states[-1] if self.states else {}

    def _list(self, **kwargs: Any) -> Any:
        if self.ours:
            return client.CoreV1Api(self.api).list_namespaced_config_map(self.namespace, **kwargs)
        group, version, plural = GROUPS[self.kind]
        return client.CustomObjectsApi(self.api).list_namespaced_custom_object(group, version, self.namespace,
                                                                               plural, **kwargs)

    def _run(self) -> None:
        version: str | None = None
        while not self._stop.is_set():
            try:
                stream = watch.Watch().stream(self._list, field_selector=f"metadata.name={self.object_name}",
                                              resource_version=version, timeout_seconds=1)
                for event in stream:
                    obj = event["object"]
                    obj = obj if isinstance(obj, dict) else self.api.sanitize_for_serialization(obj)
                    version = obj["metadata"].get("resourceVersion", version)
                    if event["type"] == "DELETED":
                        self.deleted = True
                    else:
                        self._record(obj)
            except ApiException as exc:
                version = None if exc.status == 410 else version
                time.sleep(0.1)
            except Exception:  # a dropped connection: watch again from the last version seen
                time.sleep(0.1)

    def _record(self, obj: Mapping[str, Any]) -> None:
        if self.ours:
            status = json.loads((obj.get("data") or {}).get("status") or "{}")
        else:
            status = dict(obj.get("status") or {})
        if status and (not self.states or self.states[-1] != status):
            self.states.append(status)


def stage(kind: str, status: Mapping[str, Any]) -> str:
    """The part of a status the sequence compares."""
    true = [str(c.get("type")) for c in status.get("conditions") or [] if c.get("status") == "True"]
    if kind == "BroadcastJob":
        return f"{status.get('phase')}" + (f"[{','.join(true)}]" if true else "")
    return "+".join(true) or "(none)"


def sequence(kind: str, states: Sequence[Mapping[str, Any]], deleted: bool = False) -> list[str]:
    """The ordered list of distinct stages (a stage seen again later is not repeated), then `deleted`."""
    out: list[str] = []
    for status in states:
        current = stage(kind, status)
        if current not in out:
            out.append(current)
    return [*out, "deleted"] if deleted else out
