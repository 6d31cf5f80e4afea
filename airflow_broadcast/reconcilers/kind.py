"""The contract every job kind implements once: what the loop, the operator, the sensor and the logs need.

Pure, like the rest of this layer: a kind parses manifests, reconciles a record against its
observed children, and reads a record's status (finished? settled? the XCom, the failure, the
progress line). The cluster layer pairs each kind with a driver that says what to watch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypedDict, TypeVar

from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.reconcilers.plan import Plan

KindName = Literal["BroadcastJob", "TFJob"]

ObservedT_contra = TypeVar("ObservedT_contra", contravariant=True)
SummaryT = TypeVar("SummaryT")


class Condition(TypedDict, total=False):
    """One entry of `status.conditions`, as both upstream controllers write it."""

    type: str
    status: str
    reason: str
    message: str
    lastProbeTime: str
    lastUpdateTime: str
    lastTransitionTime: str


class JobIdentity(TypedDict):
    """Which job a task ran: the XCom `job` key, and the first keys of every result."""

    kind: KindName
    name: str
    namespace: str
    uid: str
    record: str


class SubmittedJob(JobIdentity):
    """The result of an operator that does not wait (`wait_for_completion=False`)."""

    phase: Literal["submitted"]


def identity(kind: KindName, record: JobRecord) -> JobIdentity:
    return {"kind": kind, "name": record.job_name, "namespace": record.namespace, "uid": record.uid,
            "record": record.name}


def spec_section(manifest: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """`spec.<key>` of a stored manifest ({} when absent): the policies a status check reads without a parse."""
    section: Mapping[str, Any] = (manifest.get("spec") or {}).get(key) or {}
    return section


@dataclass(frozen=True)
class ParsedJob:
    """A validated manifest: its identity, the manifest to store, and warnings for the task log."""

    name: str
    namespace: str
    manifest: Mapping[str, Any]
    warnings: tuple[str, ...] = ()


class JobKind(Protocol[ObservedT_contra, SummaryT]):
    """One job kind. `ObservedT` is what its driver observes; `SummaryT` is its result (the XCom)."""

    @property
    def name(self) -> KindName: ...

    @property
    def api_version(self) -> str:
        """The upstream apiVersion a job of this kind is presented in."""
        ...

    def parse(self, manifest: Mapping[str, Any] | str, *, namespace: str | None,
              default_namespace: str) -> ParsedJob:
        """Validate (InvalidSpecError lists every problem) and return what to store."""
        ...

    def validate_update(self, name: str, new: Mapping[str, Any], old: Mapping[str, Any], *,
                        namespace: str) -> None:
        """Raise InvalidSpecError when `new` may not replace `old` (an update through the job API)."""
        ...

    def reconcile(self, record: JobRecord, observed: ObservedT_contra, now: float) -> Plan:
        """One pass; ValueError when the stored manifest no longer validates."""
        ...

    def is_finished(self, status: Mapping[str, Any]) -> bool:
        """The job reached its terminal condition (the one finish check of the kind)."""
        ...

    def settled(self, record: JobRecord) -> bool:
        """A waiting task may return although the job never finishes (BroadcastJob `Never`)."""
        ...

    def active_deadline(self, record: JobRecord, now: float) -> float | None:
        """When activeDeadlineSeconds runs out (epoch), or None when no deadline runs now."""
        ...

    def lazy_child_change(self, old: Any, new: Any) -> bool:
        """True when this change of a child (the typed value before and after) can only move counts or a
        shown phase: the loop then runs its pass within a second instead of at once."""
        ...

    def forget_parsed(self) -> None:
        """Drop what the kind keeps between passes (the parsed spec): an idle job keeps only its record."""
        ...

    def summary(self, record: JobRecord) -> SummaryT:
        """The XCom of the operator and the sensor."""
        ...

    def failure(self, summary: SummaryT) -> str | None:
        """Why the job failed, naming the failed children; None if it did not fail."""
        ...

    def failed_children(self, summary: SummaryT) -> list[str]:
        """Pods whose log tails explain the failure."""
        ...

    def failed_in_other_containers(self, summary: SummaryT) -> dict[str, str]:
        """Failed pod → the container whose log explains it, where that is not `log_container` (an init container)."""
        ...

    def failed_units(self, summary: SummaryT) -> dict[str, str]:
        """Unit (node, replica) → one line about its failure, for progress logging."""
        ...

    def progress_line(self, summary: SummaryT) -> str: ...

    def log_container(self, manifest: Mapping[str, Any]) -> str | None:
        """The container whose log explains a failed pod."""
        ...
