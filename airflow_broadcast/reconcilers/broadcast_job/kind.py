"""BroadcastJob as a job kind: parse, reconcile, and read a record's status (finished, settled, result, failure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypedDict, cast

from airflow_broadcast.reconcilers.broadcast_job.job_status import job_finished
from airflow_broadcast.reconcilers.broadcast_job.node_table import FAILED_NAMES, TERMINAL, failed_names, is_sharded
from airflow_broadcast.reconcilers.broadcast_job.options import BroadcastOptions
from airflow_broadcast.reconcilers.broadcast_job.pods import running_progress
from airflow_broadcast.reconcilers.broadcast_job.reconciler import reconcile_broadcast_job
from airflow_broadcast.reconcilers.kind import Condition, JobIdentity, ParsedJob, identity, spec_section
from airflow_broadcast.reconcilers.observed import JobRecord, NodeInfo, PodInfo
from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.reconcilers.spec_memo import SpecMemo
from airflow_broadcast.specs.broadcast_job import (
    API_VERSION,
    BroadcastJobSpec,
    broadcast_job_warnings,
    parse_broadcast_job,
    to_manifest,
)
from airflow_broadcast.specs.broadcast_job.spec import COMPLETION_NEVER
from airflow_broadcast.specs.timestamps import from_rfc3339

MAX_NAMED_FAILURES = 20


class NodeResult(TypedDict, total=False):
    """One node's line of `status.nodes` (and of the XCom)."""

    pod: str
    phase: str
    restarts: int
    attempt: int
    exitCode: int
    reason: str
    message: str
    container: str  # the init container a pod failed in
    template: str  # V18: the hash of the template the pod was built from


class BroadcastJobStatus(TypedDict, total=False):
    """`status` as the BroadcastJob reconciler writes it: upstream's fields plus per-node results."""

    phase: str
    desired: int
    active: int
    succeeded: int
    failed: int
    retrying: int
    waveEndedAt: str
    startTime: str
    completionTime: str
    conditions: list[Condition]
    failureReason: str
    nodes: dict[str, NodeResult]
    ineligibleNodes: dict[str, str]
    ineligibleNodesTotal: int
    nodeParts: int
    nodesTotal: int
    nodesDone: int
    failedNodes: list[str]
    failedNodesTotal: int


class BroadcastJobSummary(JobIdentity):
    """The XCom of BroadcastJobOperator and BroadcastJobSensor."""

    phase: str
    desired: int
    active: int
    succeeded: int
    failed: int
    startTime: str | None
    completionTime: str | None
    conditions: list[Condition]
    nodes: dict[str, NodeResult]
    nodesTotal: int
    nodesTruncated: bool
    failedNodes: list[str]
    failedNodesTotal: int
    ineligibleNodes: dict[str, str]


@dataclass(frozen=True)
class BroadcastObserved:
    """What one pass reads: every node of the cluster, the job's pods, and the node table's parts (if any)."""

    nodes: Sequence[NodeInfo]
    pods: Sequence[PodInfo]
    parts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class BroadcastJobKind:
    """One pod on every eligible node, as OpenKruise's BroadcastJob controller runs it."""

    options: BroadcastOptions = field(default_factory=BroadcastOptions)
    specs: SpecMemo[BroadcastJobSpec] = field(default_factory=SpecMemo, compare=False, repr=False)
    name: ClassVar[Literal["BroadcastJob"]] = "BroadcastJob"
    api_version: ClassVar[str] = API_VERSION

    def parse(self, manifest: Mapping[str, Any] | str, *, namespace: str | None,
              default_namespace: str) -> ParsedJob:
        """Stored defaulted, in upstream's v1beta1 form, with the warnings upstream's webhook would give."""
        warnings: list[str] = []
        spec = parse_broadcast_job(manifest, namespace=namespace, default_namespace=default_namespace,
                                   warnings=warnings)
        stored = to_manifest(spec)
        return ParsedJob(spec.name, spec.namespace, stored, (*warnings, *broadcast_job_warnings(stored)))

    def validate_update(self, name: str, new: Mapping[str, Any], old: Mapping[str, Any], *,
                        namespace: str) -> None:
        parse_broadcast_job(new, namespace=namespace)

    def reconcile(self, record: JobRecord, observed: BroadcastObserved, now: float) -> Plan:
        spec = self.specs.get(record.manifest, record.namespace,
                              lambda: parse_broadcast_job(record.manifest, namespace=record.namespace))
        return reconcile_broadcast_job(spec, record, observed.nodes, observed.pods, now, self.options, observed.parts)

    def is_finished(self, status: Mapping[str, Any]) -> bool:
        return job_finished(status) is not None

    def settled(self, record: JobRecord) -> bool:
        """A `Never` job never finishes: a waiting task returns once every desired node is done."""
        status = cast(BroadcastJobStatus, record.status)
        never = spec_section(record.manifest, "completionPolicy").get("type") == COMPLETION_NEVER
        if not never or status.get("phase") != "running":
            return False
        desired = int(status.get("desired", 0))
        done = status["nodesDone"] if is_sharded(status) else sum(
            1 for n in (status.get("nodes") or {}).values() if n.get("phase") in TERMINAL)
        waiting = int(status.get("active", 0)) + int(status.get("retrying", 0))  # F15: a node to run again
        return desired > 0 and done >= desired and waiting == 0

    def lazy_child_change(self, old: Any, new: Any) -> bool:
        return isinstance(old, PodInfo) and isinstance(new, PodInfo) and running_progress(old, new)

    def forget_parsed(self) -> None:
        self.specs.forget()

    def active_deadline(self, record: JobRecord, now: float) -> float | None:
        """A paused job has not started its clock (validation keeps deadlines off `Never` jobs)."""
        seconds = spec_section(record.manifest, "completionPolicy").get("activeDeadlineSeconds")
        if seconds is None or (record.manifest.get("spec") or {}).get("paused") is True:
            return None
        return (from_rfc3339(record.status.get("startTime")) or now) + int(seconds)

    def summary(self, record: JobRecord) -> BroadcastJobSummary:
        """Bounded whatever the fleet: `nodes` holds at most INLINE_NODES nodes (VIEW_NODES of a table kept in
        parts, failed ones first), `nodesTotal` counts them all and `nodesTruncated` says some are not shown."""
        status = cast(BroadcastJobStatus, record.status)
        nodes = dict(status.get("nodes") or {})
        failed = status["failedNodes"] if is_sharded(status) else failed_names(nodes)
        return {
            **identity(self.name, record),
            "phase": status.get("phase", ""),
            "desired": int(status.get("desired", 0)),
            "active": int(status.get("active", 0)),
            "succeeded": int(status.get("succeeded", 0)),
            "failed": int(status.get("failed", 0)),
            "startTime": status.get("startTime"),
            "completionTime": status.get("completionTime"),
            "conditions": list(status.get("conditions") or []),
            "nodes": nodes,
            "nodesTotal": int(status.get("nodesTotal", len(nodes))),
            "nodesTruncated": int(status.get("nodesTotal", len(nodes))) > len(nodes),
            "failedNodes": list(failed[:FAILED_NAMES]),
            "failedNodesTotal": int(status.get("failedNodesTotal", len(failed))),
            "ineligibleNodes": dict(status.get("ineligibleNodes") or {}),
        }

    def failure(self, summary: BroadcastJobSummary) -> str | None:
        """Why the job failed, naming the failed nodes with exit code and reason; None if it did not."""
        failed = [c for c in summary["conditions"] if c.get("type") == "Failed" and c.get("status") == "True"]
        if not failed:
            return None
        nodes = [(n, r) for n, r in sorted(summary["nodes"].items()) if r.get("phase") == "Failed"]
        shown = ", ".join(
            f"{n} (pod {r.get('pod')}, exit code {r.get('exitCode', '?')}, {r.get('reason') or 'no reason'})"
            for n, r in nodes[:MAX_NAMED_FAILURES])
        hidden = max(len(nodes), summary["failedNodesTotal"]) - min(len(nodes), MAX_NAMED_FAILURES)
        more = f" and {hidden} more" if hidden > 0 else ""
        detail = f" Failed nodes: {shown}{more}." if nodes else ""
        counts = f"{summary['succeeded']} succeeded, {summary['failed']} failed of {summary['desired']} desired"
        return (f"BroadcastJob {summary['namespace']}/{summary['name']} failed: "
                f"{failed[-1].get('message', '')} ({counts}).{detail}")

    def failed_children(self, summary: BroadcastJobSummary) -> list[str]:
        return [r["pod"] for _, r in sorted(summary["nodes"].items()) if r.get("phase") == "Failed" and r.get("pod")]

    def failed_in_other_containers(self, summary: BroadcastJobSummary) -> dict[str, str]:
        return {str(r["pod"]): str(r["container"]) for r in summary["nodes"].values()
                if r.get("phase") == "Failed" and r.get("pod") and r.get("container")}

    def failed_units(self, summary: BroadcastJobSummary) -> dict[str, str]:
        """node → one-line failure description."""
        return {n: f"pod {r.get('pod')} exit code {r.get('exitCode', '?')} {r.get('reason', '')}".strip()
                for n, r in summary["nodes"].items() if r.get("phase") == "Failed"}

    def progress_line(self, summary: BroadcastJobSummary) -> str:
        done = summary["succeeded"] + summary["failed"]
        return (f"BroadcastJob {summary['namespace']}/{summary['name']}: {done}/{summary['desired']} done "
                f"({summary['succeeded']} succeeded, {summary['failed']} failed, {summary['active']} active), "
                f"phase {summary['phase'] or 'pending'}")

    def log_container(self, manifest: Mapping[str, Any]) -> str | None:
        containers = (((manifest.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
        return str(containers[0].get("name")) if containers else None
