"""Wait, through a watch, until one pod reaches a terminal phase."""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_broadcast.cluster.api_errors import ClusterApiError, Gone, TransportError
from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook

TERMINAL_PHASES = ("Succeeded", "Failed")


class PodCompletionTrigger(BaseTrigger):
    """Fire once the pod is Succeeded or Failed, it disappears, or `deadline` (epoch seconds) passes.

    The pod is read through the connection and, when given, the kubeconfig context
    `cluster_context`, so a task can wait on a pod in any cluster its connection reaches.
    Kwargs hold identifiers and timings only, never credentials.
    """

    def __init__(self, pod_name: str, namespace: str, kubernetes_conn_id: str = "kubernetes_default",
                 deadline: float | None = None, cluster_context: str | None = None) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.pod_name = pod_name
        self.namespace = namespace
        self.kubernetes_conn_id = kubernetes_conn_id
        self.deadline = deadline
        self.cluster_context = cluster_context

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "pod_name": self.pod_name,
                "namespace": self.namespace,
                "kubernetes_conn_id": self.kubernetes_conn_id,
                "deadline": self.deadline,
                "cluster_context": self.cluster_context,
            },
        )

    def _event(self, status: str, message: str, **extra: Any) -> TriggerEvent:
        return TriggerEvent({"status": status, "message": message, "name": self.pod_name,
                             "namespace": self.namespace, **extra})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            remaining = None if self.deadline is None else self.deadline - time.time()
            if remaining is not None and remaining <= 0:
                yield self._event("timeout", f"pod {self.namespace}/{self.pod_name} passed its deadline")
                return
            try:
                phase, reason = await asyncio.wait_for(self._wait_terminal(), remaining)
            except TimeoutError:
                yield self._event("timeout", f"pod {self.namespace}/{self.pod_name} passed its deadline")
                return
            if phase is None:
                yield self._event("error", f"pod {self.namespace}/{self.pod_name} was deleted: {reason}")
            else:
                yield self._event("success", f"pod {self.namespace}/{self.pod_name} is {phase}",
                                  phase=phase, reason=reason)
        except ClusterApiError as exc:
            yield self._event("error", exc.describe())
        except Exception as exc:
            yield self._event("error", f"{type(exc).__name__}: {exc}", stack_trace=traceback.format_exc())

    async def _wait_terminal(self) -> tuple[str | None, str]:
        hook = BroadcastKubernetesHook(self.kubernetes_conn_id, cluster_context=self.cluster_context)
        client = await hook.kube_client()
        path = api_path("v1", "pods", namespace=self.namespace)
        selector = f"metadata.name={self.pod_name}"
        while True:
            items, version = await client.list_all(path, fieldSelector=selector)
            if not items:
                return None, "not found"
            phase = items[0].get("status", {}).get("phase", "")
            if phase in TERMINAL_PHASES:
                return phase, _reason(items[0])
            try:
                async for kind, pod in client.watch(path, resource_version=version, fieldSelector=selector):
                    if kind == "DELETED":
                        return None, "deleted while waiting"
                    phase = pod.get("status", {}).get("phase", "")
                    if kind in ("ADDED", "MODIFIED") and phase in TERMINAL_PHASES:
                        return phase, _reason(pod)
            except (Gone, TransportError):
                await asyncio.sleep(0.5)


def _reason(pod: dict[str, Any]) -> str:
    for status in pod.get("status", {}).get("containerStatuses") or []:
        terminated = (status.get("state") or {}).get("terminated")
        if terminated:
            return f"{terminated.get('reason', '')} (exit code {terminated.get('exitCode')})"
    return str(pod.get("status", {}).get("reason", ""))
