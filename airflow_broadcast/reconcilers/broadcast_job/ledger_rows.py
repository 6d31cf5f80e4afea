"""One node's line of a BroadcastJob pass: where it stands (getNodesToRunPod, §3.6) and its result (S11, L12).

A row is a pure function of the node, the pod on it, the node's stored result and the job's fixed
inputs, so a pass recomputes only the rows whose inputs changed (see ledger).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from airflow_broadcast.reconcilers.broadcast_job.memo import MAX_ENTRIES, IdentityMemo
from airflow_broadcast.reconcilers.broadcast_job.node_affinity import required_terms
from airflow_broadcast.reconcilers.broadcast_job.node_eligibility import FitnessCheck, compile_fitness
from airflow_broadcast.reconcilers.broadcast_job.node_table import TERMINAL, durable
from airflow_broadcast.reconcilers.broadcast_job.pods import (
    UNSCHEDULABLE_REASON,
    attempt_of,
    node_result,
    unschedulable_detail,
)
from airflow_broadcast.reconcilers.broadcast_job.retries import FailureHandling
from airflow_broadcast.reconcilers.observed import NodeInfo, PodInfo
from airflow_broadcast.reconcilers.plan import JobEvent

_results: IdentityMemo[PodInfo, None, dict[str, Any]] = IdentityMemo()
_fits: dict[str, tuple[Mapping[str, Any], FitnessCheck, NodeInfo, str | None]] = {}
SHARED_PARTS = ("nodeSelector", "tolerations", "resources", "overhead", "initContainers", "containers")
_templates: dict[tuple[int, ...], tuple[tuple[Any, ...], FitnessCheck]] = {}


def pod_fits(pod: PodInfo, node: NodeInfo) -> str | None:
    """N13 for one pod: why its node no longer fits it, or None; once per pod spec and node version.

    A pod's spec hardly ever changes while its status does, and each status update is a new PodInfo:
    the spec is compared by value (a few small fields), the node by identity. A new node version
    reuses the pod's compiled check.
    """
    key = pod.uid or pod.name
    hit = _fits.get(key)
    if hit is not None and (hit[0] is pod.spec or hit[0] == pod.spec):
        if hit[2] is node:
            return hit[3]
        check = hit[1]
    else:
        check = _compiled(pod.spec)
    reason = check(node)
    if len(_fits) >= MAX_ENTRIES:
        _fits.clear()
    _fits[key] = (pod.spec, check, node, reason)
    return reason


def _compiled(spec: Mapping[str, Any]) -> FitnessCheck:
    """The pod's check, its template part compiled once per template.

    The watch keeps one copy of each placement value that pods share (their template's selector,
    tolerations and requests), so a pod whose shared values are the very objects of an earlier pod
    reuses that pod's parsed requests and tolerations; only its nodeName and affinity are its own.
    """
    parts = tuple(spec.get(key) for key in SHARED_PARTS)
    key = tuple(map(id, parts))
    hit = _templates.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], parts, strict=True)):
        base = hit[1]
    else:
        base = compile_fitness({k: v for k, v in zip(SHARED_PARTS, parts, strict=True) if v is not None})
        if len(_templates) >= MAX_ENTRIES:
            _templates.clear()
        _templates[key] = (parts, base)  # holding the parts keeps their ids from being reused
    return replace(base, node_name=str(spec.get("nodeName") or ""), terms=required_terms(spec))


def _result(pod: PodInfo, _: None) -> dict[str, Any]:
    return node_result(pod)


@dataclass(frozen=True)
class RowRules:
    """What every row of one job shares: the template's fitness check and the [F] switches."""

    template_fits: Callable[[NodeInfo], str | None]
    warn_unschedulable: bool
    keep_successes: bool
    failures: FailureHandling = field(default_factory=FailureHandling)


@dataclass(frozen=True)
class Row:
    """`pod` is set for a desired node with a pod; `rest` for a desired node that still needs one; `done` for one
    whose recorded success stands without a pod (L12); `misfit` for a pod whose node no longer fits it (N13)."""

    desired: bool = False
    pod: PodInfo | None = None
    rest: bool = False
    done: bool = False
    misfit: PodInfo | None = None
    retrying: bool = False
    ineligible: str | None = None
    entry: Mapping[str, Any] | None = None
    warning: JobEvent | None = None

    @property
    def complete(self) -> bool:
        """isJobComplete's test of one desired node (§3.8): a finished or terminating pod, or a kept success."""
        if self.pod is None:
            return self.done
        return not self.retrying and (self.pod.terminal or self.pod.deleting)

    @property
    def phase(self) -> str:
        return str((self.entry or {}).get("phase") or "")

    @cached_property
    def durable(self) -> dict[str, Any] | None:
        return None if self.entry is None else durable(self.entry)


EMPTY = Row()


def compute_row(name: str, node: NodeInfo | None, pod: PodInfo | None, before: Mapping[str, Any],
                rules: RowRules) -> Row:
    """The row of node `name`; `before` is its result as last stored ({} when none)."""
    if node is None:
        return EMPTY
    if pod is not None:
        reason = pod_fits(pod, node)
        if reason is not None and not pod.deleting:  # V18: a pod to re-run goes as such, its node then left out
            return Row(ineligible=reason) if rules.failures.stale(pod) else Row(misfit=pod, ineligible=reason)
        return Row(desired=True, pod=pod, entry=dict(_results(pod.uid or pod.name, pod, None, _result)),
                   retrying=rules.failures.retrying(pod),
                   warning=_unschedulable_warning(name, pod, before) if rules.warn_unschedulable else None)
    reason = rules.template_fits(node)
    if reason is not None:
        return Row(ineligible=reason)
    entry = before if before.get("phase") in TERMINAL else None
    done = (rules.keep_successes and entry is not None and entry.get("phase") == "Succeeded"
            and not rules.failures.stale_entry(entry))
    return Row(desired=True, rest=not done, done=done, entry=entry)


def _unschedulable_warning(name: str, pod: PodInfo, before: Mapping[str, Any]) -> JobEvent | None:
    """L11 fixed: a Warning when a node's pod turns unschedulable, not again once its result says so."""
    detail = unschedulable_detail(pod)
    if detail is None or (before.get("pod"), before.get("reason"), before.get("attempt", 1)) == (
            pod.name, UNSCHEDULABLE_REASON, attempt_of(pod)):
        return None
    return JobEvent("Warning", "PodUnschedulable", f"Pod {pod.name} for node {name} cannot be scheduled: {detail}")
