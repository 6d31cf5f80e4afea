"""Fixtures of the differential tests: the real OpenKruise and training-operator controllers on the test cluster.

These tests need the controllers' Go builds, so they are collected only when asked for by marker
(`pytest -m differential`, as `make differential` does); a plain `pytest` run never builds or starts them.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from devcluster.control_plane import ClusterInfo, ControlPlane
from devcluster.upstream import CONTROLLERS, UpstreamControllers, UpstreamInfo, UpstreamStartError

SELECTED = re.compile(r"(?<!not )\bdifferential\b")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave this directory out unless the mark expression selects `differential`."""
    if SELECTED.search(config.option.markexpr or ""):
        return None
    return True


@pytest.fixture(scope="session")
def upstream(cluster: ClusterInfo) -> Iterator[UpstreamInfo]:
    """The real controllers beside the test cluster: reused when running, else started and stopped after."""
    controllers = UpstreamControllers(ControlPlane(Path(cluster.directory)))
    reused = controllers.running()
    if reused is not None and not set(CONTROLLERS) <= set(reused.pids):
        reused = None  # only one of them runs: start() restarts both, and they are stopped after the run
    info = reused or _start(controllers)
    try:
        yield info
    finally:
        if reused is None:
            controllers.stop()


def _start(controllers: UpstreamControllers) -> UpstreamInfo:
    """Start them, or fail every differential test with the reason and the controller's log tail."""
    try:
        started = controllers.start()
    except UpstreamStartError as exc:
        pytest.fail(f"the upstream controllers did not start: {exc}", pytrace=False)
    print(f"\nupstream controllers ready in {started.ready_seconds} s")
    return started


@pytest.fixture
def upstream_namespace(upstream: UpstreamInfo, core_api: client.CoreV1Api) -> Iterator[str]:
    """A fresh namespace for the real controller's run (the engine's is `namespace`), deleted after the test."""
    body = {"metadata": {"generateName": "u-", "labels": {"airflow-broadcast.io/test": "true"}}}
    created = core_api.create_namespace(body).metadata.name
    try:
        yield created
    finally:
        core_api.delete_namespace(created, propagation_policy="Background")


@pytest.fixture(scope="session")
def api_client(kubeconfig: str) -> client.ApiClient:
    from kubernetes import config

    return config.new_client_from_config(config_file=kubeconfig)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """DIFFERENTIAL_SAMPLE=N keeps N corpus cases per kind, drawn with DIFFERENTIAL_SEED (CI's subset)."""
    sample = int(os.environ.get("DIFFERENTIAL_SAMPLE", "0") or 0)
    if sample <= 0:
        return
    seed = os.environ.get("DIFFERENTIAL_SEED", "0")
    by_kind: dict[str, list[pytest.Item]] = {}
    for item in items:
        case = getattr(item, "callspec", None) and item.callspec.params.get("case")
        if case is not None:
            by_kind.setdefault(case.kind, []).append(item)
    chosen = {id(item) for kind in sorted(by_kind)
              for item in random.Random(f"{seed}/{kind}").sample(by_kind[kind], min(sample, len(by_kind[kind])))}
    dropped = [item for group in by_kind.values() for item in group if id(item) not in chosen]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if id(item) not in {id(d) for d in dropped}]
    print(f"\ndifferential corpus: {sample} case(s) per kind with seed {seed!r}: "
          + ", ".join(i.callspec.params["case"].id for i in items if id(i) in chosen))
