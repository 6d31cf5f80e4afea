"""What one engine left behind for one job, normalised for namespaces, uids, generated names and timestamps,
and the comparison of two such snapshots.

A snapshot holds the pods per node (BroadcastJob) or per replica (TFJob) with the parts of their spec a
controller decides (labels, affinity, env, TF_CONFIG, ports, restart policy), the services, the final
status counters and conditions, the sequence of stages the status went through (status_history.py), and
the events (reason and normalised message) as a set per kind of object.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

TF_TYPE = "training.kubeflow.org/replica-type"
TF_INDEX = "training.kubeflow.org/replica-index"
# Labels that carry a uid or a hash, or that only one engine's bookkeeping sets, by design.
VOLATILE_LABELS = {"controller-uid", "pod-template-hash", "apps.kruise.io/controller-revision-hash",
                   "airflow-broadcast.io/job-uid", "broadcastjob-controller-uid"}
# The object that owns the children: the custom resource upstream, the job record ConfigMap here.
JOB_OWNERS = {"ConfigMap", "BroadcastJob", "TFJob"}
# Events about the job and its children. Others (an Endpoints update racing a service's deletion) are the
# cluster's own controllers reacting, not a decision of either engine.
EVENT_KINDS = JOB_OWNERS | {"Pod", "Service"}
COUNTERS = {"BroadcastJob": ("phase", "desired", "active", "succeeded", "failed")}


@dataclass
class Snapshot:
    """What one engine left behind for one job, normalised."""

    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    status: dict[str, Any] = field(default_factory=dict)
    sequence: list[str] = field(default_factory=list)
    events: dict[str, set[str]] = field(default_factory=dict)
    event_counts: dict[str, int] = field(default_factory=dict)  # events recorded per kind of object, repeats included


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
    for flag in ("unfinished", "deleted"):
        if status.get(f"_{flag}"):
            out[flag] = True
    return out


def normalise_message(kind: str, message: str, namespace: str, job: str) -> str:
    """An event message without the namespace, the job's name, generated pod names and general nodes' names."""
    text = re.sub(rf"(?<![\w-]){re.escape(namespace)}(?![\w-])", "<ns>", message or "")
    text = re.sub(rf"(?<![\w-]){re.escape(job)}(?!\w)", "<job>", text)
    if kind == "BroadcastJob":  # upstream's generateName suffix, or our node hash
        text = re.sub(r"<job>-(?:[a-z0-9]{5}|[0-9a-f]{10})\b", "<job>-<pod>", text)
    return re.sub(r"\bgeneral-\d+\b", "<node>", text)


def snapshot(core: client.CoreV1Api, kind: str, namespace: str, job: str, status: Mapping[str, Any],
             sequence: list[str] | None = None) -> Snapshot:
    pods = core.list_namespaced_pod(namespace).items
    services = core.list_namespaced_service(namespace).items
    events = core.list_namespaced_event(namespace).items
    snap = Snapshot(status=normalise_status(kind, status), sequence=list(sequence or []))
    for pod in map(_plain, pods):
        snap.pods[pod_key(kind, pod)] = normalise_pod(pod, namespace, job)
    for svc in map(_plain, services):
        snap.services[svc["metadata"]["name"].replace(job, "<job>")] = normalise_service(svc, namespace, job)
    for e in (e for e in events if e.involved_object.kind in EVENT_KINDS):
        text = f"{e.reason}: {normalise_message(kind, e.message, namespace, job)}"
        owner = _owner(e.involved_object.kind)
        snap.events.setdefault(owner, set()).add(text)
        snap.event_counts[owner] = snap.event_counts.get(owner, 0) + (e.count or 1)
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


def diff_events(ours: Mapping[str, set[str]], theirs: Mapping[str, set[str]]) -> list[str]:
    """One line per event (reason: message) only one engine recorded, per kind of object."""
    out = []
    for kind in sorted(set(ours) | set(theirs)):
        mine, upstream = ours.get(kind, set()), theirs.get(kind, set())
        out += [f"events.{kind}: only ours: {e}" for e in sorted(mine - upstream)]
        out += [f"events.{kind}: only upstream: {e}" for e in sorted(upstream - mine)]
    return out


def compare(ours: Snapshot, theirs: Snapshot) -> list[str]:
    return (diff(ours.pods, theirs.pods, "pods") + diff(ours.services, theirs.services, "services")
            + diff(ours.status, theirs.status, "status") + diff(ours.sequence, theirs.sequence, "sequence")
            + diff_events(ours.events, theirs.events))
