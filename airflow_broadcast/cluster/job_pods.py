"""A job's pods, their logs and its Events, as the Kubeflow SDK's get_job_pods and get_job_logs give them (N6, N7).

Pods are found by the labels the SDK selects on (TFJob: job-name, job-role, replica-type,
replica-index; BroadcastJob: `broadcastjob-name`), so a job's pods are found the same way
whoever created them.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from airflow_broadcast.cluster.api_errors import ClusterApiError
from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.cluster.kinds.registry import check_kind
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.cluster.pod_logs import log_path
from airflow_broadcast.specs.broadcast_job.spec import JOB_NAME_LABEL as BROADCAST_JOB_NAME_LABEL
from airflow_broadcast.specs.tf_job import spec as tf

FOLLOW_READ_TIMEOUT = 24 * 3600.0  # a followed pod may be silent for long; its end closes the stream
MAX_LINE_BYTES = 1 << 20
MAX_LOG_REQUESTS = 16  # logs read (or followed) at once, as kubectl's --max-log-requests bounds them
MAX_LOG_PODS = 500  # a BroadcastJob has a pod per node: reading thousands of logs at once is refused
FOLLOW_KEEP_LINES = 10000  # per pod: what a followed log returns (every line goes to the sink as it comes)
LogSink = Callable[[str], None]


@dataclass(frozen=True)
class PodSelection:
    """Which of a job's pods: all, or (TFJob) the master, one replica type, one replica index."""

    is_master: bool = False
    replica_type: str | None = None
    replica_index: int | None = None

    def selector(self, kind: str, name: str) -> str:
        return pod_selector(kind, name, is_master=self.is_master, replica_type=self.replica_type,
                            replica_index=self.replica_index)


def pod_selector(kind: str, name: str, *, is_master: bool = False, replica_type: str | None = None,
                 replica_index: int | None = None) -> str:
    """The label selector of a job's pods; ValueError for a filter the kind has no label for."""
    if check_kind(kind) == "BroadcastJob":
        if is_master or replica_type is not None or replica_index is not None:
            raise ValueError("a BroadcastJob's pods have no master, replica type or replica index to select on")
        return f"{BROADCAST_JOB_NAME_LABEL}={name}"
    parts = [f"{tf.LABEL_JOB_NAME}={name}"]
    if is_master:
        parts.append(f"{tf.LABEL_JOB_ROLE}=master")
    if replica_type is not None:
        known = {t.lower() for t in tf.REPLICA_TYPES}
        if replica_type.lower() not in known:
            raise ValueError(f"replica_type must be one of {', '.join(tf.REPLICA_TYPES)} (any case), "
                             f"not {replica_type!r}")
        parts.append(f"{tf.LABEL_REPLICA_TYPE}={replica_type.lower()}")
    if replica_index is not None:
        if isinstance(replica_index, bool) or not isinstance(replica_index, int) or replica_index < 0:
            raise ValueError(f"replica_index must be an integer >= 0, not {replica_index!r}")
        parts.append(f"{tf.LABEL_REPLICA_INDEX}={replica_index}")
    return ",".join(parts)


async def list_job_pods(client: KubeClient, kind: str, namespace: str, name: str,
                        selection: PodSelection = PodSelection()) -> list[JsonDict]:
    """The job's pods, sorted by name."""
    selector = selection.selector(kind, name)
    items, _ = await client.list_all(api_path("v1", "pods", namespace=namespace), labelSelector=selector)
    return sorted(items, key=lambda pod: str(pod["metadata"]["name"]))


def log_container(kind: str, pod: Mapping[str, Any], container: str | None) -> str:
    """The container whose log is read: the one asked for, TFJob's `tensorflow`, or the pod's first."""
    if container:
        return container
    if check_kind(kind) == "TFJob":
        return tf.CONTAINER_NAME
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return str(containers[0].get("name") or "")


async def job_logs(client: KubeClient, kind: str, namespace: str, name: str, selection: PodSelection = PodSelection(),
                   *, container: str | None = None, follow: bool = False, sink: LogSink = print,
                   tail_lines: int | None = None, max_pods: int = MAX_LOG_PODS,
                   listed: list[JsonDict] | None = None) -> dict[str, str]:
    """`{pod name: log}` of the job's pods that have started (Pending ones have no log yet).

    With `follow`, every pod's log is streamed until its container ends, each line also given
    to `sink` as `[Pod <name>]: <line>`, as the SDK prints it; the answer keeps the last
    FOLLOW_KEEP_LINES lines of each, and a stream that breaks is said on the sink, not raised.
    At most MAX_LOG_REQUESTS logs are read at once; more than `max_pods` pods is a ValueError.
    `listed` is the job's pods when the caller has listed them already.
    """
    if listed is None:
        listed = await list_job_pods(client, kind, namespace, name, selection)
    pods = [pod for pod in listed if (pod.get("status") or {}).get("phase") != "Pending"]
    if len(pods) > max_pods:
        raise ValueError(f"{len(pods)} pods of {kind} {namespace}/{name} have logs, more than max_pods={max_pods}; "
                         "select fewer (is_master, replica_type, replica_index) or raise max_pods")
    names = [str(pod["metadata"]["name"]) for pod in pods]
    containers = [log_container(kind, pod, container) for pod in pods]
    gate = asyncio.Semaphore(MAX_LOG_REQUESTS)
    query: dict[str, Any] = {} if tail_lines is None else {"tailLines": tail_lines}

    async def read(pod: str, container_name: str) -> str:
        async with gate:
            path = log_path(namespace, pod)
            return await client.request_text("GET", path, query={**query, "container": container_name})

    if not follow:
        texts = await asyncio.gather(*(read(pod, c) for pod, c in zip(names, containers, strict=True)))
        return dict(zip(names, texts, strict=True))
    logs: dict[str, deque[str]] = {pod: deque(maxlen=FOLLOW_KEEP_LINES) for pod in names}

    async def stream(pod: str, container_name: str) -> None:
        async with gate:
            lines = client.stream_lines(log_path(namespace, pod), read_timeout=FOLLOW_READ_TIMEOUT,
                                        query={**query, "container": container_name, "follow": "true"},
                                        max_line_bytes=MAX_LINE_BYTES)
            try:
                async with aclosing(lines):
                    async for raw in lines:
                        line = raw.decode(errors="replace")
                        logs[pod].append(line)
                        sink(f"[Pod {pod}]: {line}")
            except ClusterApiError as exc:
                sink(f"[Pod {pod}]: <log stream ended: {exc.describe()}>")

    await asyncio.gather(*(stream(pod, c) for pod, c in zip(names, containers, strict=True)))
    return {pod: "".join(f"{line}\n" for line in lines) for pod, lines in logs.items()}


def _event_line(event: Mapping[str, Any]) -> str:
    stamp = event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or ""
    return f"{stamp} {event.get('type', '')} {event.get('reason', '')}: {event.get('message', '')}".strip()


async def object_events(client: KubeClient, namespace: str, uid: str) -> list[str]:
    """The Events of one object, oldest first, one line each: `<time> <type> <reason>: <message>`."""
    items, _ = await client.list_all(api_path("v1", "events", namespace=namespace),
                                     fieldSelector=f"involvedObject.uid={uid}")
    items.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp") or ""))
    return [_event_line(event) for event in items]


async def job_events(client: KubeClient, kind: str, namespace: str, job: Mapping[str, Any],
                     pods: list[JsonDict]) -> dict[str, list[str]]:
    """`{"<Kind> <name>": [...], "Pod <name>": [...]}`: the job's Events (on its record) and each pod's."""
    name = str(job["metadata"]["name"])
    keys = [f"{check_kind(kind)} {name}"] + [f"Pod {pod['metadata']['name']}" for pod in pods]
    uids = [str(job["metadata"].get("uid") or "")] + [str(pod["metadata"].get("uid") or "") for pod in pods]
    gate = asyncio.Semaphore(MAX_LOG_REQUESTS)

    async def events_of(uid: str) -> list[str]:
        async with gate:
            return await object_events(client, namespace, uid)

    lines = await asyncio.gather(*(events_of(uid) for uid in uids))
    return dict(zip(keys, lines, strict=True))

