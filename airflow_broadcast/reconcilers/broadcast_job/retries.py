"""What a failed pod means for its node and its job: per-node retries (F15) and podFailurePolicy (F16).

With `failurePolicy.backoffLimitPerNode: n` a node gets n + 1 attempts. A failed pod with attempts left
is `retrying`: it counts neither as failed (so FailFast, Pause and the budget wait) nor as done (so the
job does not complete), and once its backoff has passed the pass deletes it; the node, now without a
pod, gets the next attempt (P12). The backoff doubles from 10 s up to 6 minutes, as the Kubernetes Job
controller's, and runs from the moment the pod's containers ended. A podFailurePolicy rule that matches
the pod comes first: `Ignore` re-runs the node at once without counting the failure, `FailNode` counts
it with no retry, `FailJob` fails the job, `Count` leaves it to the above.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_broadcast.reconcilers.broadcast_job.pods import (
    TEMPLATE_ANNOTATION,
    attempt_of,
    restart_failed,
    unschedulable_detail,
)
from airflow_broadcast.reconcilers.observed import STUCK_WAITING_REASONS, PodInfo
from airflow_broadcast.reconcilers.plan import DeleteChild, JobEvent
from airflow_broadcast.specs.broadcast_job.pod_failure_policy import FailureRule

BACKOFF_BASE_SECONDS = 10.0
BACKOFF_MAX_SECONDS = 360.0
RETRY_REASON = "NodeRetry"
RULE_REASON = "PodFailurePolicy"
TEMPLATE_REASON = "TemplateChanged"


@dataclass(frozen=True)
class FailureHandling:
    """The job's retry limit and podFailurePolicy rules, as one pass applies them to its failed pods."""

    backoff_limit: int = 0
    rules: tuple[FailureRule, ...] = ()
    template_id: str | None = None  # V18: set with spec.rerunOnTemplateChange, the hash of the current template
    restart_limit: int = 0

    def stale(self, pod: PodInfo) -> bool:
        """A pod of another template (or of none known) whose node runs again (V18): it has finished, it is
        going, or it never will finish by itself (past the restart limit, a container stuck waiting,
        unschedulable)."""
        if self.template_id is None or pod.annotations.get(TEMPLATE_ANNOTATION) == self.template_id:
            return False
        return pod.terminal or pod.deleting or stuck(pod, self.restart_limit)

    def stale_entry(self, entry: Mapping[str, Any]) -> bool:
        """A stored result, its pod gone, that another template produced."""
        return self.template_id is not None and entry.get("template") != self.template_id

    def rule_of(self, pod: PodInfo) -> tuple[int, FailureRule, str] | None:
        """The first rule that matches a failed pod: its index, the rule, and what matched."""
        for index, rule in enumerate(self.rules):
            if (matched := _match(rule, pod)) is not None:
                return index, rule, matched
        return None

    def action(self, pod: PodInfo) -> str:
        matched = self.rule_of(pod) if self.rules and pod.phase == "Failed" and not self.stale(pod) else None
        return "Count" if matched is None else matched[1].action

    def retrying(self, pod: PodInfo) -> bool:
        """A finished pod whose node runs again: it ran another template, its failure is ignored, or the node
        has attempts left."""
        if self.stale(pod):
            return True
        if pod.phase != "Failed" or not (self.rules or self.backoff_limit):
            return False
        action = self.action(pod)
        return action == "Ignore" or (action == "Count" and attempt_of(pod) <= self.backoff_limit)

    def fails_job(self, pod: PodInfo) -> bool:
        return bool(self.rules) and pod.phase == "Failed" and not self.stale(pod) and self.action(pod) == "FailJob"

    def delay(self, pod: PodInfo) -> float:
        return 0.0 if self.stale(pod) or self.action(pod) == "Ignore" else backoff_seconds(attempt_of(pod))


def stuck(pod: PodInfo, restart_limit: int) -> bool:
    """A live pod that will not finish by itself: restart-failed, a container stuck waiting, or unschedulable."""
    waiting = pod.waiting.reason if pod.waiting is not None else ""
    return (restart_failed(pod, restart_limit) or unschedulable_detail(pod) is not None
            or bool({pod.waiting_reason, waiting, pod.init_waiting_reason} & STUCK_WAITING_REASONS))


def _match(rule: FailureRule, pod: PodInfo) -> str | None:
    """As the Job controller: a listed condition the pod has, or an exit code (0 excluded) the operator admits."""
    if rule.conditions:
        hit = next((c for c in rule.conditions if c in pod.conditions), None)
        return None if hit is None else f"condition {hit[0]}={hit[1]}"
    codes = [e.exit_code for e in pod.all_exits if e.exit_code != 0 and rule.container in (None, e.container)]
    code = next((c for c in codes if (c in rule.values) == (rule.operator == "In")), None)
    return None if code is None else f"exit code {code}"


def backoff_seconds(attempt: int) -> float:
    """The wait after a node's `attempt`-th failure: 10 s, 20 s, 40 s, ... at most 6 minutes."""
    return min(BACKOFF_BASE_SECONDS * (1 << min(max(attempt, 1) - 1, 16)), BACKOFF_MAX_SECONDS)


def failed_at(pod: PodInfo) -> float:
    """When the pod's last container ended; its creation when none says (an evicted pod)."""
    return max((e.finished_at for e in pod.all_exits), default=0.0) or pod.created_at


def due_retries(pods: Iterable[PodInfo], now: float,
                handling: FailureHandling) -> tuple[list[PodInfo], float | None]:
    """The retrying pods whose backoff has passed (to delete now), and the seconds until the next one is due."""
    due: list[PodInfo] = []
    wait: float | None = None
    for pod in pods:
        if pod.deleting:
            continue  # deleted already: the node is re-run once the pod is gone
        left = failed_at(pod) + handling.delay(pod) - now
        if left <= 0:
            due.append(pod)
        else:
            wait = left if wait is None else min(wait, left)
    return due, wait


def retry_deletes(pods: Iterable[PodInfo], now: float, handling: FailureHandling,
                  misfits: Mapping[str, PodInfo]) -> tuple[list[DeleteChild], float | None]:
    """The deletes that re-run nodes now (not a pod whose node no longer fits: that one goes as a misfit)."""
    due, wait = due_retries(pods, now, handling)
    return [_rerun(pod, handling.stale(pod)) for pod in sorted(due, key=lambda p: p.node)
            if misfits.get(pod.node) is not pod], wait


def _rerun(pod: PodInfo, stale: bool) -> DeleteChild:
    earlier = "ran" if pod.terminal else "runs"
    reason, why = (TEMPLATE_REASON, f"{earlier} an earlier template") if stale else (RETRY_REASON, "failed")
    return DeleteChild("Pod", pod.name, pod.uid, reason, done_event=JobEvent(
        "Normal", reason, f"Pod {pod.name} on node {pod.node} {why}; the node runs again"))


def rule_failure(pods: Iterable[PodInfo], handling: FailureHandling) -> tuple[bool, str, str]:
    """(True, condition message, reason) when a failed pod matches a FailJob rule (the first by node), else no."""
    for pod in sorted(pods, key=lambda p: p.node):
        matched = handling.rule_of(pod)
        if matched is not None:
            return True, (f"Pod {pod.name} on node {pod.node} failed with {matched[2]}, matching "
                          f"podFailurePolicy.rules[{matched[0]}] (FailJob)"), RULE_REASON
    return False, "", ""
