"""Run one manifest through the real controller and through our engine, each in its own namespace, and compare
what each left behind, normalised for namespaces, uids, generated names and timestamps.

A snapshot holds the pods per node (BroadcastJob) or per replica (TFJob) with the parts of their spec a
controller decides (labels, affinity, env, TF_CONFIG, ports, restart policy), the services, the final
status counters and conditions, and the event reasons.
"""

from __future__ import annotations

import copy
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

GROUPS = {"BroadcastJob": ("apps.kruise.io", "v1beta1", "broadcastjobs"), "TFJob": ("kubeflow.org", "v1", "tfjobs")}
TF_TYPE = "training.kubeflow.org/replica-type"
TF_INDEX = "training.kubeflow.org/replica-index"
# Labels that carry a uid or a hash, or that only one engine's bookkeeping sets, by design.
VOLATILE_LABELS = {"controller-uid", "pod-template-hash", "apps.kruise.io/controller-revision-hash",
                   "airflow-broadcast.io/job-uid", "broadcastjob-controller-uid"}
# The object that owns the children: the custom resource upstream, the job record ConfigMap here.
JOB_OWNERS = {"ConfigMap", "BroadcastJob", "TFJob"}
COUNTERS = {"BroadcastJob": ("phase", "desired", "active", "succeeded", "failed")}


@dataclass
class Snapshot:
    """What one engine left behind for one job, normalised."""

    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    status: dict[str, Any] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)


def _plain(obj: Any) -> Any:
    return client.ApiClient().sanitize_for_serialization(obj)


def _scrub(value: Any, namespace: str, job: str) -> Any:
    """Replace the namespace (in DNS names, TF_CONFIG, ...) so both runs compare equal where they agree."""
    text = json.dumps(value, sort_keys=True).replace(f".{namespace}.", ".<ns>.").replace(f'"{namespace}"', '"<ns>"')
    return json.loads(re.sub(rf"(?<![\w-]){re.escape(job)}(?=[-.\"])", "<job>", text))


def pod_key(kind: str, pod: Mapping[str, Any]) -> str:
    labels = pod["metadata"].get("labels") or {}
    if kind == "TFJob":
        return f"{labels.get(TF_TYPE, '?')}-{labels.get(TF_INDEX, '?')}"
    spec = pod["spec"]
    return str(spec.get("nodeName") or _pinned_node(spec) or pod["metadata"]["name"])


def _pinned_node(spec: Mapping[str, Any]) -> str | None:
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        for field_ in term.get("matchFields") or []:
            if field_.get("key") == "metadata.name":
                return str(field_["values"][0])
    return None


def normalise_pod(pod: Mapping[str, Any], namespace: str, job: str) -> dict[str, Any]:
    spec = pod["spec"]
    containers = []
    for c in spec.get("containers") or []:
        env = {e["name"]: e.get("value") for e in c.get("env") or []}
        if env.get("TF_CONFIG"):
            env["TF_CONFIG"] = json.loads(env["TF_CONFIG"])
        containers.append({"name": c["name"], "env": env, "ports": c.get("ports") or []})
    labels = {k: v for k, v in (pod["metadata"].get("labels") or {}).items() if k not in VOLATILE_LABELS}
    body = {"labels": labels, "affinity": spec.get("affinity"), "restartPolicy": spec.get("restartPolicy"),
            "containers": containers, "phase": (pod.get("status") or {}).get("phase"),
            "owner": [_owner(o["kind"]) for o in pod["metadata"].get("ownerReferences") or []]}
    return dict(_scrub(body, namespace, job))


def _owner(kind: str) -> str:
    return "<job>" if kind in JOB_OWNERS else kind


def normalise_service(svc: Mapping[str, Any], namespace: str, job: str) -> dict[str, Any]:
    spec = svc["spec"]
    labels = {k: v for k, v in (svc["metadata"].get("labels") or {}).items() if k not in VOLATILE_LABELS}
    body = {"labels": labels, "selector": spec.get("selector"), "clusterIP": spec.get("clusterIP"),
            "ports": [{k: p.get(k) for k in ("name", "port", "targetPort", "protocol")} for p in spec.get("ports", [])]}
    return dict(_scrub(body, namespace, job))


def normalise_status(kind: str, status: Mapping[str, Any]) -> dict[str, Any]:
    """The counters and the conditions' (type, status, reason), in order; times dropped."""
    out: dict[str, Any] = {}
    if kind == "BroadcastJob":
        out = {k: status.get(k) for k in COUNTERS[kind]}
    else:
        out["replicaStatuses"] = {rtype: {k: v for k, v in counts.items() if k in ("active", "succeeded", "failed")}
                                  for rtype, counts in (status.get("replicaStatuses") or {}).items()}
    out["conditions"] = [(c.get("type"), c.get("status"), c.get("reason")) for c in status.get("conditions") or []]
    if status.get("_unfinished"):
        out["unfinished"] = True
    return out


def snapshot(core: client.CoreV1Api, kind: str, namespace: str, job: str, status: Mapping[str, Any]) -> Snapshot:
    pods = core.list_namespaced_pod(namespace).items
    services = core.list_namespaced_service(namespace).items
    events = core.list_namespaced_event(namespace).items
    snap = Snapshot(status=normalise_status(kind, status))
    for pod in map(_plain, pods):
        snap.pods[pod_key(kind, pod)] = normalise_pod(pod, namespace, job)
    for svc in map(_plain, services):
        snap.services[svc["metadata"]["name"].replace(job, "<job>")] = normalise_service(svc, namespace, job)
    snap.events = sorted({f"{_owner(e.involved_object.kind)}/{e.reason}" for e in events})
    return snap


def diff(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Every place the two differ, as `path: ours != theirs` lines."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = []
        for key in sorted(set(ours) | set(theirs), key=str):
            out += diff(ours.get(key), theirs.get(key), f"{path}.{key}" if path else str(key))
        return out
    if ours != theirs:
        return [f"{path}: ours={ours!r} upstream={theirs!r}"]
    return []


def compare(ours: Snapshot, theirs: Snapshot) -> list[str]:
    return (diff(ours.pods, theirs.pods, "pods") + diff(ours.services, theirs.services, "services")
            + diff(ours.status, theirs.status, "status") + diff(ours.events, theirs.events, "events"))


# ---- the real controller ---------------------------------------------------------------------
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


def wait_upstream(api: client.ApiClient, kind: str, namespace: str, name: str, timeout: float = 60.0,
                  quiet: float = 2.0) -> dict[str, Any]:
    """Wait until the controller reports the job finished and then until its status and pods have not changed
    for `quiet` seconds (its cleanup and last counts land after the condition); returns the status, with
    `_unfinished: True` when it did not finish within `timeout` seconds."""
    group, version, plural = GROUPS[kind]
    custom = client.CustomObjectsApi(api)
    core = client.CoreV1Api(api)
    deadline = time.monotonic() + timeout
    last: tuple[str, ...] = ()
    quiet_since = 0.0
    while True:
        status = custom.get_namespaced_custom_object(group, version, namespace, plural, name).get("status") or {}
        now = time.monotonic()
        if not finished(kind, status):
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
             hold: float | None = None) -> dict[str, Any]:
    """Submit the manifest to our engine and drive its reconcile loop until it finishes (or, for a job that
    is meant to stay open, such as a paused one, for `hold` seconds); returns its status."""
    submission = engine.submit(manifest)
    if hold is None:
        outcome = engine.drive(submission, kind, timeout=timeout)
        assert outcome.reason == "finished", outcome
    else:
        outcome = engine.drive(submission, kind, deadline=time.time() + hold, timeout=hold + timeout)
        assert outcome.reason in ("timeout", "settled"), outcome
    settle_pods(engine.core, engine.namespace)
    return dict(engine.status(kind, manifest["metadata"]["name"]))


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
