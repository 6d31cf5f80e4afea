"""TF_CONFIG for one replica, byte for byte as training-operator v1.9 writes it (tfjob.md §2.5).

Go's `encoding/json` writes compact output, map keys sorted and struct fields in
declaration order (`cluster, task, environment`); the strings here are built to
match. The cluster domain is a parameter (upstream reads the operator's
`CUSTOM_CLUSTER_DOMAIN` environment variable). The dense cluster is the same
for every pod of a job, so `TFConfigRenderer` encodes it once per pass.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.specs.tf_job.spec import (
    CONTAINER_NAME,
    DEFAULT_PORT,
    DEFAULT_PORT_NAME,
    EVALUATOR,
    PS,
    REPLICA_TYPES,
    WORKER,
    TFJobSpec,
)

_COMPACT = (",", ":")


def is_distributed(spec: TFJobSpec) -> bool:
    """Σ replicas over the five known types ≠ 1 (unknown types do not count, §2.4 step 2)."""
    return sum(r.replicas for t, r in spec.replica_specs.items() if t in REPLICA_TYPES) != 1


def replica_port(template: Mapping[str, Any]) -> int:
    """`containerPort` of the `tfjob-port` port of the `tensorflow` container, else 2222."""
    for container in (template.get("spec") or {}).get("containers") or []:
        if container.get("name") != CONTAINER_NAME:
            continue
        for port in container.get("ports") or []:
            if port.get("name") == DEFAULT_PORT_NAME:
                return int(port["containerPort"])
    return DEFAULT_PORT


def _host_parts(spec: TFJobSpec, replica_type: str, cluster_domain: str) -> tuple[str, str]:
    domain = f".{cluster_domain}" if cluster_domain else ""
    port = replica_port(spec.replica_specs[replica_type].template)
    return f"{spec.name}-{replica_type.lower()}-".replace("/", "-"), f".{spec.namespace}.svc{domain}:{port}"


def replica_host(spec: TFJobSpec, replica_type: str, index: int, cluster_domain: str = "") -> str:
    """`<job>-<t>-<i>.<ns>.svc[.<domain>]:<port>`: the headless Service of one replica (D5, D6)."""
    prefix, suffix = _host_parts(spec, replica_type, cluster_domain)
    return f"{prefix}{index}{suffix}"


def replica_hosts(spec: TFJobSpec, replica_type: str, cluster_domain: str = "") -> list[str]:
    prefix, suffix = _host_parts(spec, replica_type, cluster_domain)
    return [f"{prefix}{i}{suffix}" for i in range(max(spec.replica_specs[replica_type].replicas, 0))]


class TFConfigRenderer:
    """Renders TF_CONFIG for any replica of one job; the dense cluster is encoded once.

    `exclude_evaluator` drops the evaluator from the dense cluster (v0.x/v1.0 behaviour,
    Q7 option); `sparse_ps_empty_list` writes `"ps":[]` instead of upstream's `"ps":null`
    when a sparse-mode job has no PS (D12 option).
    """

    def __init__(self, spec: TFJobSpec, cluster_domain: str = "", *, exclude_evaluator: bool = False,
                 sparse_ps_empty_list: bool = False) -> None:
        self.spec = spec
        self.cluster_domain = cluster_domain
        self.distributed = is_distributed(spec)
        self.sparse = spec.enable_dynamic_worker
        self.sparse_ps_empty_list = sparse_ps_empty_list
        self._types = {t.lower(): t for t in spec.replica_specs}
        self._cluster: dict[str, list[str]] = {}
        for replica_type in spec.replica_specs:
            if exclude_evaluator and replica_type == EVALUATOR:
                continue
            self._cluster[replica_type.lower()] = replica_hosts(spec, replica_type, cluster_domain)
        self._cluster = dict(sorted(self._cluster.items()))
        self._dense_cluster = json.dumps(self._cluster, separators=_COMPACT)

    def size_bound(self) -> int:
        """About the longest TF_CONFIG this renderer writes, in characters (0 when not distributed)."""
        if not self.distributed:
            return 0
        if not self.sparse:
            return len(self._dense_cluster) + 64
        return len(json.dumps(self._cluster.get(PS.lower()), separators=_COMPACT)) + 256

    def render(self, replica_type: str, index: int) -> str | None:
        """TF_CONFIG of replica (`replica_type`, `index`), or None when the job is not distributed."""
        if not self.distributed:
            return None
        task_type = replica_type.lower()
        task = '{"type":' + json.dumps(task_type) + ',"index":' + str(int(index)) + "}"
        if not self.sparse:
            return '{"cluster":' + self._dense_cluster + ',"task":' + task + ',"environment":"cloud"}'
        return '{"cluster":' + self._sparse_cluster(task_type, index) + ',"task":' + task + "}"

    def _sparse_cluster(self, task_type: str, index: int) -> str:
        """`SparseClusterSpec{worker map[int32]string, ps []string}` (Q8 quirks kept)."""
        worker: dict[str, str] = {}
        ps: list[str] | None = []
        own = self._own_host(task_type, index)
        if task_type == PS.lower():
            ps = [own]
        elif task_type == WORKER.lower():
            worker = {str(index): own}
            ps = self._cluster.get(PS.lower())
            if ps is None and self.sparse_ps_empty_list:
                ps = []
        return '{"worker":' + json.dumps(worker, separators=_COMPACT) + ',"ps":' + json.dumps(
            ps, separators=_COMPACT) + "}"

    def _own_host(self, task_type: str, index: int) -> str:
        hosts = self._cluster.get(task_type)
        if hosts is not None and 0 <= index < len(hosts):
            return hosts[index]
        return replica_host(self.spec, self._types[task_type], index, self.cluster_domain)


def tf_config_json(spec: TFJobSpec, replica_type: str, index: int, cluster_domain: str = "", *,
                   exclude_evaluator: bool = False, sparse_ps_empty_list: bool = False) -> str | None:
    """The TF_CONFIG value of one replica, or None when the job is not distributed (D1-D14)."""
    renderer = TFConfigRenderer(spec, cluster_domain, exclude_evaluator=exclude_evaluator,
                                sparse_ps_empty_list=sparse_ps_empty_list)
    return renderer.render(replica_type, index)
