"""Wait for cluster state through watches, with a bound on the wait (never a timed assertion)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from kubernetes import client, watch


def wait_for_pod_phase(api: client.CoreV1Api, namespace: str, name: str, phases: Iterable[str],
                       timeout: float = 60.0) -> list[str]:
    """Watch one pod until its phase is in `phases`; return every phase seen, in order."""
    wanted = set(phases)
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = api.list_namespaced_pod(namespace, field_selector=f"metadata.name={name}")
        version = pods.metadata.resource_version
        for pod in pods.items:
            _note(seen, pod.status.phase)
            if pod.status.phase in wanted:
                return seen
        w = watch.Watch()
        remaining = max(1, int(deadline - time.monotonic()))
        for event in w.stream(api.list_namespaced_pod, namespace, field_selector=f"metadata.name={name}",
                              resource_version=version, timeout_seconds=remaining):
            pod = event["object"]
            _note(seen, pod.status.phase)
            if pod.status.phase in wanted:
                w.stop()
                return seen
    raise TimeoutError(f"pod {namespace}/{name} did not reach {sorted(wanted)} in {timeout} s; saw {seen}")


def _note(seen: list[str], phase: str | None) -> None:
    if phase and (not seen or seen[-1] != phase):
        seen.append(phase)


def wait_until(predicate: Callable[[], Any], timeout: float = 60.0, interval: float = 0.2,
               what: str = "condition") -> Any:
    """Poll a cheap predicate until it returns something truthy (test scaffolding only)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not hold within {timeout} s")
        time.sleep(interval)


def _schedulable(node: Any) -> bool:
    ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
    tainted = any(t.key == "node.kubernetes.io/not-ready" for t in node.spec.taints or [])
    return ready and not tainted


def wait_nodes_schedulable(api: client.CoreV1Api, names: Iterable[str], timeout: float = 120.0) -> None:
    """Watch the fake nodes until kwok reports them Ready and the not-ready taint is gone."""
    pending = set(names)
    selector = "sim.airflow-broadcast.io/fake-node=true"
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        nodes = api.list_node(label_selector=selector)
        pending -= {n.metadata.name for n in nodes.items if _schedulable(n)}
        if not pending:
            return
        w = watch.Watch()
        remaining = max(1, int(deadline - time.monotonic()))
        for event in w.stream(api.list_node, label_selector=selector,
                              resource_version=nodes.metadata.resource_version, timeout_seconds=remaining):
            node = event["object"]
            if node.metadata.name in pending and _schedulable(node):
                pending.discard(node.metadata.name)
                if not pending:
                    w.stop()
                    return
    if pending:
        raise TimeoutError(f"{len(pending)} nodes not schedulable after {timeout} s, e.g. {sorted(pending)[:3]}")
