"""The fake user, auth manager and cluster state the page's app is tested with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class User:
    name: str

    def get_name(self) -> str:
        return self.name

    def get_id(self) -> str:
        return self.name


class AuthManager:
    """outsider may not read DAG `secret`; viewer may read but not edit; admin may do everything."""

    def is_authorized_dag(self, *, method: str, user: User, details: Any = None, access_entity: Any = None) -> bool:
        dag = details.id if details is not None else None
        if user.name == "outsider" and dag in ("secret", None):
            return False
        return method == "GET" or user.name == "admin"


@dataclass
class Cluster:
    """What the fake reads answer; `warned` and `logged` keep what was asked for, `stopped` what was stopped."""

    records: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    pods: list[Any] = field(default_factory=list)
    stopped: list[tuple[str, ...]] = field(default_factory=list)
    warned: list[tuple[str, list[str]]] = field(default_factory=list)
    logged: list[tuple[str, str | None]] = field(default_factory=list)
