"""What the corpus cases share: the case record, scripted pod outcomes, and timed actions taken while a job runs.

Each case builds its manifest from the node pool the test made for it (BroadcastJobs select that pool; TFJob
replicas land on any schedulable node). `explained` maps a pattern of a difference line to why it is expected:
an intended fix of this provider (Δ) or a documented deviation. Anything else fails the case.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

SIM = "sim.airflow-broadcast.io"


def fail_until(seconds: float) -> str:
    """An RFC 3339 UTC time `seconds` from now: pods created before it fail, later ones succeed."""
    return datetime.fromtimestamp(math.ceil(time.time() + seconds), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def outcome(result: str | None = "Succeeded", after: str = "1s", **extra: str) -> dict[str, str]:
    """Pod annotations that script the kwok outcome (no result: the pod runs until deleted)."""
    notes = {f"{SIM}/after": after, **{f"{SIM}/{k.replace('_', '-')}": v for k, v in extra.items()}}
    if result is not None:
        notes[f"{SIM}/result"] = result
    return notes


@dataclass
class Stage:
    """What a timed action may touch: the nodes of the case's pool and the job under both engines."""

    core: client.CoreV1Api
    custom: client.CustomObjectsApi
    engine: Any
    kind: str
    name: str
    upstream_namespace: str
    pool: str
    nodes: list[str]
    extra: list[str]
    make_nodes: Callable[..., list[str]]

    def edit_job(self, change: Callable[[dict[str, Any]], None]) -> None:
        """The same spec edit under both engines, as a user would make it with kubectl."""
        from differential_harness import GROUPS

        group, version, plural = GROUPS[self.kind]
        body = self.custom.get_namespaced_custom_object(group, version, self.upstream_namespace, plural, self.name)
        change(body)
        self.custom.replace_namespaced_custom_object(group, version, self.upstream_namespace, plural, self.name, body)
        self.engine.edit_manifest(self.kind, self.name, change)


Action = Callable[[Stage], None]


def add_node(stage: Stage) -> None:
    stage.make_nodes(1, labels={"pool": stage.pool})


def delete_node(index: int) -> Action:
    return lambda stage: stage.core.delete_node(stage.nodes[index])


def patch_node(index: int, body: Mapping[str, Any], extra: bool = False) -> Action:
    """Patch a pool node (or, with `extra`, one of the case's extra nodes)."""
    return lambda stage: stage.core.patch_node((stage.extra if extra else stage.nodes)[index], dict(body))


def set_spec(path: tuple[str, ...], value: Any) -> Action:
    """Set spec.<path> of the job under both engines (pause, unpause, suspend, resume)."""
    def change(body: dict[str, Any]) -> None:
        target = body["spec"]
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = value

    return lambda stage: stage.edit_job(change)


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    build: Callable[[str, list[str]], dict[str, Any]]
    nodes: int = 3
    extra_nodes: tuple[tuple[int, Mapping[str, Any]], ...] = ()  # (count, node_factory options) in the pool
    explained: Mapping[str, str] = field(default_factory=dict)
    source: str = "corpus"
    upstream_timeout: float = 60.0
    hold: float | None = None  # a job meant to stay open (paused, suspended): compare both after this long
    during: tuple[tuple[float, Action], ...] = ()  # (seconds after the start, action) while both engines run
    ttl: bool = False  # the job has a short TTL: wait until both engines have deleted it
    node_labels: Mapping[str, str] = field(default_factory=dict)  # extra labels on the pool's nodes
    # A difference that looks like our engine is wrong, reported for a decision instead of explained away:
    # it counts as unexplained, and the test checks that it is still there (remove the mark once it is fixed).
    issue: str = ""
