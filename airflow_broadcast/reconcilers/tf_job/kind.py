"""TFJob as a job kind: parse, reconcile, and read a record's status (finished, result, failure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, NotRequired, TypedDict, cast

from airflow_broadcast.reconcilers.kind import Condition, JobIdentity, ParsedJob, identity, spec_section
from airflow_broadcast.reconcilers.observed import JobRecord, PodGroupInfo, PodInfo, ServiceInfo
from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.reconcilers.spec_memo import SpecMemo
from airflow_broadcast.reconcilers.tf_job import status as st
from airflow_broadcast.reconcilers.tf_job.options import TFJobOptions
from airflow_broadcast.reconcilers.tf_job.reconciler import reconcile_tf_job
from airflow_broadcast.specs.field_errors import InvalidSpecError
from airflow_broadcast.specs.manifest_text import parse_manifest
from airflow_broadcast.specs.tf_job import API_VERSION, parse_tf_job, validate_tf_job_update
from airflow_broadcast.specs.tf_job.spec import CONTAINER_NAME, TFJobSpec
from airflow_broadcast.specs.timestamps import from_rfc3339


class ReplicaCounts(TypedDict, total=False):
    active: int
    succeeded: int
    failed: int


class FailureCause(TypedDict):
    """`status.failure`: the replica that failed the job, its exit code and why (N10)."""

    replicaType: str | None
    index: int | None
    pod: str | None
    exitCode: int | None
    reason: str
    message: str
    container: NotRequired[str]  # the init container the pod failed in


class TFJobStatus(TypedDict, total=False):
    """`status` as the TFJob reconciler writes it: training-operator's fields plus this provider's keys."""

    conditions: list[Condition]
    replicaStatuses: dict[str, ReplicaCounts]
    startTime: str
    completionTime: str
    lastReconcileTime: str
    failure: FailureCause
    succeededIndexes: dict[str, list[int]]
    controllerRestarts: dict[str, int]
    restartedPods: dict[str, str]
    podWarnings: dict[str, Any]


class TFJobSummary(JobIdentity):
    """The XCom of TFJobOperator and TFJobSensor."""

    phase: str
    conditions: list[Condition]
    replicaStatuses: dict[str, ReplicaCounts]
    startTime: str | None
    completionTime: str | None
    failure: FailureCause | None


@dataclass(frozen=True)
class TFObserved:
    """What one pass reads: the job's pods and services, and with gang scheduling its PodGroups."""

    pods: Sequence[PodInfo]
    services: Sequence[ServiceInfo]
    pod_groups: Sequence[PodGroupInfo] = ()
    priorities: Mapping[str, int] = field(default_factory=dict)


def _counts(counts: ReplicaCounts) -> ReplicaCounts:
    """Every count present, 0 when upstream's omitempty left it out."""
    return {"active": int(counts.get("active", 0)), "succeeded": int(counts.get("succeeded", 0)),
            "failed": int(counts.get("failed", 0))}


@dataclass(frozen=True)
class TFJobKind:
    """Distributed TensorFlow, as Kubeflow's training-operator runs it."""

    name: ClassVar[Literal["TFJob"]] = "TFJob"
    api_version: ClassVar[str] = API_VERSION
    options: TFJobOptions = field(default_factory=TFJobOptions)
    specs: SpecMemo[TFJobSpec] = field(default_factory=SpecMemo, compare=False, repr=False)

    def parse(self, manifest: Mapping[str, Any] | str, *, namespace: str | None,
              default_namespace: str) -> ParsedJob:
        """Stored as written, in the resolved namespace: defaults are applied in memory only (A8)."""
        warnings: list[str] = []
        stored = parse_manifest(manifest, what="TFJob manifest", warnings=warnings)
        spec = parse_tf_job(stored, namespace=namespace, default_namespace=default_namespace, warnings=warnings)
        stored.setdefault("metadata", {})["namespace"] = spec.namespace
        stored.pop("status", None)
        return ParsedJob(spec.name, spec.namespace, stored, tuple(warnings))

    def validate_update(self, name: str, new: Mapping[str, Any], old: Mapping[str, Any], *,
                        namespace: str) -> None:
        errors = validate_tf_job_update(new, old, namespace=namespace)
        if errors:
            raise InvalidSpecError(self.name, name, errors)
        parse_tf_job(new, namespace=namespace)

    def reconcile(self, record: JobRecord, observed: TFObserved, now: float) -> Plan:
        spec = self.specs.get(record.manifest, record.namespace,
                              lambda: parse_tf_job(record.manifest, namespace=record.namespace))
        return reconcile_tf_job(spec, record, observed.pods, observed.services, now, self.options,
                                pod_groups=observed.pod_groups, priorities=observed.priorities)

    def is_finished(self, status: Mapping[str, Any]) -> bool:
        return st.is_finished(status)

    def settled(self, record: JobRecord) -> bool:
        return False

    def lazy_child_change(self, old: Any, new: Any) -> bool:
        """A replica that starts running may set the Running condition: every change is acted on at once."""
        return False

    def forget_parsed(self) -> None:
        self.specs.forget()

    def active_deadline(self, record: JobRecord, now: float) -> float | None:
        """A suspended job has no clock running: resuming resets startTime."""
        policy = spec_section(record.manifest, "runPolicy")
        seconds = policy.get("activeDeadlineSeconds")
        if seconds is None or policy.get("suspend") is True:
            return None
        return (from_rfc3339(record.status.get("startTime")) or now) + int(seconds)

    def summary(self, record: JobRecord) -> TFJobSummary:
        status = cast(TFJobStatus, record.status)
        conditions = list(status.get("conditions") or [])
        true = [c for c in conditions if c.get("status") == "True"]
        phase = "Failed" if any(c.get("type") == "Failed" for c in true) else (
            true[-1].get("type", "") if true else "Created")
        return {
            **identity(self.name, record),
            "phase": phase,
            "conditions": conditions,
            "replicaStatuses": {t: _counts(c) for t, c in (status.get("replicaStatuses") or {}).items()},
            "startTime": status.get("startTime"),
            "completionTime": status.get("completionTime"),
            "failure": status.get("failure"),
        }

    def failure(self, summary: TFJobSummary) -> str | None:
        failed = [c for c in summary["conditions"] if c.get("type") == "Failed" and c.get("status") == "True"]
        if not failed:
            return None
        cause = summary["failure"]
        detail = ""
        if cause:
            detail = (f" Failing replica: {cause.get('replicaType')} {cause.get('index')} (pod {cause.get('pod')}, "
                      f"exit code {cause.get('exitCode', '?')}, {cause.get('reason') or 'no reason'}"
                      f"{': ' + cause['message'] if cause.get('message') else ''}).")
        message = str(failed[-1].get("message", "")).rstrip(".")
        return f"TFJob {summary['namespace']}/{summary['name']} failed: {message}.{detail}"

    def failed_children(self, summary: TFJobSummary) -> list[str]:
        pod = summary["failure"]["pod"] if summary["failure"] else None
        return [pod] if pod else []

    def failed_in_other_containers(self, summary: TFJobSummary) -> dict[str, str]:
        cause = summary["failure"]
        if not cause or not cause.get("pod") or not cause.get("container"):
            return {}
        return {str(cause["pod"]): str(cause["container"])}

    def failed_units(self, summary: TFJobSummary) -> dict[str, str]:
        """replica → one-line failure description."""
        cause = summary["failure"]
        if not cause:
            return {}
        return {f"{cause.get('replicaType')}-{cause.get('index')}":
                f"pod {cause.get('pod')} exit code {cause.get('exitCode', '?')} {cause.get('reason', '')}".strip()}

    def progress_line(self, summary: TFJobSummary) -> str:
        counts = ", ".join(f"{t}: {s.get('active', 0)} active/{s.get('succeeded', 0)} succeeded/{s.get('failed', 0)} "
                           f"failed" for t, s in sorted(summary["replicaStatuses"].items()))
        return f"TFJob {summary['namespace']}/{summary['name']}: {summary['phase']} ({counts or 'no replicas yet'})"

    def log_container(self, manifest: Mapping[str, Any]) -> str | None:
        return CONTAINER_NAME
