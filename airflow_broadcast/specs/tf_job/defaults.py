"""TFJob defaulting: upstream's `SetDefaults_TFJob`, applied to a copy.

Upstream applies it in memory at every reconcile and never persists it (tfjob.md §1.4, A8).
`default_tf_job` does the same on a copy, so the caller's manifest is never changed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.specs.tf_job.spec import (
    CLEAN_POD_NONE,
    CONTAINER_NAME,
    DEFAULT_PORT,
    DEFAULT_PORT_NAME,
    RESTART_NEVER,
    SUCCESS_POLICY_DEFAULT,
    normalize_replica_type,
)


def default_tf_job(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """`SetDefaults_TFJob` on a deep copy; tolerates malformed input (it only fills what it can)."""
    job: dict[str, Any] = copy.deepcopy(dict(manifest))
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return job
    if spec.get("runPolicy") is None:
        spec["runPolicy"] = {}
    run_policy = spec["runPolicy"]
    if isinstance(run_policy, dict) and run_policy.get("cleanPodPolicy") is None:
        run_policy["cleanPodPolicy"] = CLEAN_POD_NONE
    if spec.get("successPolicy") is None:
        spec["successPolicy"] = SUCCESS_POLICY_DEFAULT
    replica_specs = spec.get("tfReplicaSpecs")
    if isinstance(replica_specs, dict):
        normalised: dict[str, Any] = {}
        for key, replica in replica_specs.items():
            if isinstance(replica, dict):
                _default_replica(replica)
            normalised[normalize_replica_type(str(key))] = replica
        spec["tfReplicaSpecs"] = normalised
    return job


def _default_replica(replica: dict[str, Any]) -> None:
    if replica.get("replicas") is None:
        replica["replicas"] = 1
    if not replica.get("restartPolicy"):
        replica["restartPolicy"] = RESTART_NEVER
    template = replica.get("template")
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    containers = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
    if not isinstance(containers, list) or not containers:
        return
    target = next((c for c in containers if isinstance(c, dict) and c.get("name") == CONTAINER_NAME),
                  containers[0])
    if not isinstance(target, dict):
        return
    ports = target.get("ports")
    if ports is None:
        ports = target["ports"] = []
    if isinstance(ports, list) and not any(
            isinstance(p, dict) and p.get("name") == DEFAULT_PORT_NAME for p in ports):
        ports.append({"name": DEFAULT_PORT_NAME, "containerPort": DEFAULT_PORT})
