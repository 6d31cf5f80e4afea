"""Fixtures of the RBAC tests: the documented roles granted to user `restricted`, and the engine acting as it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from support.rbac_grants import Grants, granted_roles


@pytest.fixture
def grants(kubeconfig: str, namespace: str) -> Iterator[Grants]:
    yield from granted_roles(kubeconfig, namespace)


@pytest.fixture
def restricted_engine(cluster: Any, namespace: str, core_api: client.CoreV1Api) -> Any:
    """The real engine acting as user `restricted` (the admin `core_api` only reads results)."""
    from support.engine import Engine

    return Engine(cluster.restricted_kubeconfig, namespace, core_api)
