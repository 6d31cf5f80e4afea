"""Hand-off mode, the pure part: which controller runs a job, and what an upstream custom resource's status means.

In `cluster` mode the real controller (OpenKruise, training-operator) owns the job; the provider only reads the
custom resource. Its status is presented as a JobRecord so that each kind's own `summary()` and `failure()` give
the same XCom shape and the same failure semantics as in `airflow` mode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from airflow_broadcast.reconcilers.kind import KindName, spec_section
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.specs.broadcast_job.spec import COMPLETION_NEVER
from airflow_broadcast.specs.tf_job.spec import MANAGED_BY_TRAINING_OPERATOR

Controller = Literal["airflow", "cluster", "auto"]
CONTROLLERS: tuple[Controller, ...] = ("airflow", "cluster", "auto")
DEFAULT_PROBE_SECONDS = 30.0
RESOURCES: dict[KindName, tuple[str, str]] = {  # kind → (apiVersion, plural) of the upstream custom resource
    "BroadcastJob": ("apps.kruise.io/v1beta1", "broadcastjobs"),
    "TFJob": ("kubeflow.org/v1", "tfjobs"),
}


def check_controller(value: str) -> Controller:
    """`value` as a controller mode; ValueError naming the modes otherwise."""
    for known in CONTROLLERS:
        if value == known:
            return known
    raise ValueError(f"controller must be one of {', '.join(repr(c) for c in CONTROLLERS)}, not {value!r}")


def check_probe_seconds(value: float) -> float:
    if value <= 0:
        raise ValueError(f"handoff_probe_seconds must be > 0, not {value!r}")
    return float(value)


def resource_view(resource: Mapping[str, Any]) -> JobRecord:
    """A custom resource as the record view a kind reads: its name, uid, spec (the manifest) and status."""
    meta = resource.get("metadata") or {}
    manifest = {k: v for k, v in resource.items() if k != "status"}
    return JobRecord(name=str(meta.get("name", "")), namespace=str(meta.get("namespace", "")),
                     uid=str(meta.get("uid", "")), owner_reference={}, status=dict(resource.get("status") or {}),
                     annotations=dict(meta.get("annotations") or {}), deleting=bool(meta.get("deletionTimestamp")),
                     job_name=str(meta.get("name", "")), manifest=manifest, raw=resource)


def controller_acting(kind: KindName, status: Mapping[str, Any]) -> bool:
    """The controller wrote the resource's status: Kruise sets counters or a phase at its first pass, and
    training-operator the `Created` condition."""
    if kind == "TFJob":
        return bool(status.get("conditions"))
    return any(status.get(key) for key in ("phase", "conditions", "startTime", "desired"))


def settled_upstream(kind: KindName, record: JobRecord) -> bool:
    """A Kruise `Never` job never finishes: a waiting task returns once every desired pod is done."""
    if kind != "BroadcastJob" or spec_section(record.manifest, "completionPolicy").get("type") != COMPLETION_NEVER:
        return False
    status = record.status
    desired = int(status.get("desired", 0) or 0)
    done = int(status.get("succeeded", 0) or 0) + int(status.get("failed", 0) or 0)
    return desired > 0 and done >= desired and int(status.get("active", 0) or 0) == 0


def foreign_manager(kind: KindName, manifest: Mapping[str, Any]) -> str | None:
    """The `runPolicy.managedBy` of a TFJob left to another controller (e.g. MultiKueue), else None."""
    if kind != "TFJob":
        return None
    managed_by = spec_section(manifest, "runPolicy").get("managedBy")
    return str(managed_by) if managed_by not in (None, MANAGED_BY_TRAINING_OPERATOR) else None


def provider_only_fields(kind: KindName, manifest: Mapping[str, Any]) -> list[str]:
    """Fields set in the manifest that only this provider runs: the upstream CRD would prune them unseen."""
    if kind != "BroadcastJob":
        return []
    spec = manifest.get("spec") or {}
    fields = [f"spec.{key}" for key in ("nodeNames", "excludeNodeNames", "nodeSelector", "podFailurePolicy", "waves")
              if spec.get(key) is not None]
    fields += ["spec.rerunOnTemplateChange"] if spec.get("rerunOnTemplateChange") is True else []
    failure = spec_section(manifest, "failurePolicy")
    fields += [f"spec.failurePolicy.{key}" for key in ("maxFailedNodes", "backoffLimitPerNode")
               if failure.get(key) not in (None, 0, "0%")]
    return fields


@dataclass(frozen=True)
class Decision:
    """Which controller runs the job, and the line that says why in the task log."""

    controller: Literal["airflow", "cluster"]
    reason: str


def decide(requested: Controller, kind: KindName, *, crd_served: bool | None = None,
           acting: bool | None = None, manager: str | None = None, extensions: Sequence[str] = ()) -> Decision:
    """The mode for a job: `airflow` and `cluster` are taken as asked; `auto` takes `cluster` only when the
    CRD is served and its controller was seen acting on the job (or another manager is named by managedBy,
    which acts on the custom resource only), else `airflow`."""
    if requested != "auto":
        return Decision(requested, f"controller={requested!r} was asked for")
    if extensions:
        return Decision("airflow", f"the manifest sets {', '.join(extensions)}, which only Airflow as the "
                                   f"controller runs (the {kind} CRD would drop it)")
    api_version = RESOURCES[kind][0]
    if manager is not None:
        return Decision("cluster", f"runPolicy.managedBy names {manager}, which only acts on the {kind} resource")
    if not crd_served:
        return Decision("airflow", f"the {kind} CRD ({api_version}) is not served by this cluster")
    if not acting:
        return Decision("airflow", f"no controller wrote the {kind} resource's status in time; it was deleted")
    return Decision("cluster", f"the {kind} CRD is served and its controller acts on the job")
