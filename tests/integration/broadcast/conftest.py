"""Fixtures for the BroadcastJob checklist integration tests: background loops, finalizer cleanup."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from bcj_cluster import BackgroundLoop
from kubernetes import client
from support.engine import Engine

from airflow_broadcast.reconcilers.observed import JobRecord


@pytest.fixture
def loops(engine: Engine) -> Iterator[Callable[..., BackgroundLoop]]:
    """`loops(submission, options=..., resync=...)` starts a background reconcile loop; all stop after the test."""
    started: list[BackgroundLoop] = []

    def start(submission: JobRecord, options: Mapping[str, Any] | None = None,
              resync: float = 5.0) -> BackgroundLoop:
        loop = BackgroundLoop(engine, submission, options, resync=resync)
        started.append(loop)
        return loop

    yield start
    for loop in started:
        loop.stop()


@pytest.fixture
def release_finalizers(core_api: client.CoreV1Api, namespace: str) -> Iterator[Callable[[str], None]]:
    """`release(pod)` drops the test finalizer from a pod; every held pod is released after the test."""
    def release(name: str) -> None:
        try:
            core_api.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": None}})
        except client.ApiException as exc:
            if exc.status != 404:
                raise

    yield release
    for pod in core_api.list_namespaced_pod(namespace).items:
        if pod.metadata.finalizers:
            release(pod.metadata.name)

