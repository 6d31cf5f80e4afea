"""One BroadcastJob reconcile pass, in OpenKruise's order of operations (broadcastjob.md §3.2).

Pure: the caller passes the spec, the job record, every node, the job's pods and
`now`; the pass returns a Plan. Upstream defects marked [F] are fixed unless
`kruise_compat` asks for the upstream behaviour.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_broadcast.reconcilers.broadcast_job import node_table as nt
from airflow_broadcast.reconcilers.broadcast_job.job_status import (
    deadline_left,
    finish_condition,
    job_finished,
    settle_waiting,
    ttl_expiry,
)
from airflow_broadcast.reconcilers.broadcast_job.ledger import INLINE_SOURCE
from airflow_broadcast.reconcilers.broadcast_job.ledger_cache import keep_ledger, take_ledger
from airflow_broadcast.reconcilers.broadcast_job.options import BroadcastOptions
from airflow_broadcast.reconcilers.broadcast_job.pods import build_pod, is_owned
from airflow_broadcast.reconcilers.broadcast_job.retries import retry_deletes, rule_failure
from airflow_broadcast.reconcilers.broadcast_job.wave_gate import WAVE_ENDED_AT, wave_room
from airflow_broadcast.reconcilers.expiry import expiry_change
from airflow_broadcast.reconcilers.observed import JobRecord, NodeInfo, PodInfo
from airflow_broadcast.reconcilers.plan import DeleteChild, JobEvent, Plan, earliest
from airflow_broadcast.specs.broadcast_job.spec import BroadcastJobSpec
from airflow_broadcast.specs.field_errors import invalid
from airflow_broadcast.specs.int_or_percent import scaled_value, validate_int_or_percent
from airflow_broadcast.specs.timestamps import to_rfc3339

PAUSED_BY_POLICY = "airflow-broadcast.io/paused-by-failure-policy"
FAILFAST_MESSAGE = "failure policy is FailurePolicyTypeFailFast and failed pod is found"
FAILFAST_REASON = "failed pod is found"
CLEANUP_REASON = "SucceededPodCleanup"
INVALID_PARALLELISM = "InvalidParallelism"
PARALLELISM_RETRY_SECONDS = 10.0  # R13: stands in for upstream's requeue of the error; only an edit fixes the value


class _Pass:
    """Mutable scratch state of one pass; `run()` returns the Plan."""

    def __init__(self, spec: BroadcastJobSpec, record: JobRecord, nodes: Sequence[NodeInfo],
                 pods: Sequence[PodInfo], now: float, options: BroadcastOptions,
                 parts: Mapping[str, Mapping[str, Any]]) -> None:
        self.spec, self.record, self.nodes, self.now, self.options = spec, record, nodes, now, options
        self.parts = nt.by_index(record.name, parts)
        self.all_pods = pods
        self.ledger = take_ledger(spec, record, kruise_compat=options.kruise_compat)
        self.stored = self.ledger.stored  # the node table as last written
        # A pass replaces top-level fields and never edits a nested one in place: a shallow copy suffices
        # (a deep one of a large status, its 1,000 ineligible nodes, cost more than the rest of the pass).
        self.status: dict[str, Any] = dict(record.status)
        self.events: list[JobEvent] = []
        self.deletes: list[DeleteChild] = []
        self.creates: list[dict[str, Any]] = []
        self.fallbacks: dict[str, tuple[str, dict[str, Any] | None]] = {}
        self.annotations: dict[str, str | None] = {}
        self.requeue: float | None = None
        self.finished = False
        self.first_pass = False
        self.left_waiting = 0

    # ---- helpers ---------------------------------------------------------------------
    def _event(self, type_: str, reason: str, message: str) -> None:
        self.events.append(JobEvent(type_, reason, message))

    def _counts_suffix(self) -> str:
        return f": {self.status['succeeded']} pods succeeded, {self.status['failed']} pods failed"

    def _deadline_left(self) -> float | None:
        return deadline_left(self.spec, self.status, self.now, first_pass=self.first_pass)

    def _delete(self, pods: Sequence[PodInfo], reason: str) -> int:
        for pod in pods:
            self.deletes.append(DeleteChild("Pod", pod.name, pod.uid, reason))
        return len(pods)

    def _finish(self, kind: str, message: str) -> None:
        stamp = to_rfc3339(self.now)
        self.status["conditions"] = [*self.status.get("conditions", []), finish_condition(kind, message, self.now)]
        settle_waiting(self.status, self.ledger.waiting_successes)  # F15: no attempt follows a finished job
        self.status.pop(WAVE_ENDED_AT, None)
        self.status["completionTime"] = stamp
        self.finished = True
        # finishJob replaces any pending timer; the TTL needs none: its expiry goes on the record (T2/T3).
        self.requeue = None
        self.annotations.update(expiry_change(self.record.annotations, ttl_expiry(self.spec, self.status)))

    # ---- the pass ----------------------------------------------------------------------
    def run(self) -> Plan:
        if self.spec.completion_policy.type != "Never" and job_finished(self.record.status):
            # RC4: a finished Always job only keeps its TTL expiry stamped (T1-T4, T6, T7).
            expiry = expiry_change(self.record.annotations, ttl_expiry(self.spec, self.record.status))
            if self.options.cleanup_succeeded_pods and not self.options.kruise_compat:
                owner_kind = str(self.record.owner_reference.get("kind") or "") or None
                self._delete([p for p in self.all_pods if p.phase == "Succeeded" and not p.deleting
                              and is_owned(p, self.spec.name, self.record.uid, owner_kind)], CLEANUP_REASON)
            return Plan(finished=True, record_annotations=expiry, deletes=tuple(self.deletes))
        self.first_pass = not self.status.get("startTime")
        if self.first_pass:
            self.status["startTime"] = to_rfc3339(self.now)
        if not self.status.get("phase"):
            self.status["phase"] = "paused" if self.spec.paused else "running"
        deadline_left = self._deadline_left()
        # D8/D9: upstream arms one in-memory timer on the first pass, for literal "Always" only;
        # the fixed mode re-arms it from the persisted startTime on every pass. A deadline that
        # has passed needs no timer: this pass enforces it, or the job is paused (D6) and only
        # an unpause, itself an event, can let it fire.
        if deadline_left is not None and deadline_left > 0 and (
            not self.options.kruise_compat or (self.first_pass and self.spec.completion_policy.type == "Always")
        ):
            self.requeue = earliest(self.requeue, deadline_left)

        ledger = self.ledger
        ledger.advance(self.nodes, self.all_pods, self._sources())
        # L12: a node whose recorded result is Succeeded is done without a pod (`done`), unless kruise_compat.
        self.status.update(ledger.status_counts())
        self.status.pop("ineligibleNodesTotal", None)
        self.status.update(ledger.capped_ineligible())
        self.events.extend(ledger.events())
        try:
            return self._decide()
        finally:
            keep_ledger(self.record.uid, ledger)

    def _sources(self) -> dict[int, Mapping[str, Any]]:
        """Where the stored table is: the record's own `status.nodes` while small, else its parts."""
        if nt.is_sharded(self.record.status):
            return dict(self.parts)
        return {INLINE_SOURCE: self.record.status.get("nodes") or {}}

    def _cleanup_succeeded(self) -> None:
        """Delete succeeded pods whose result the record already holds (L12's optional cleanup)."""
        for pod in self.ledger.owned_pods(self.all_pods, "succeeded"):
            stored = self.stored.get(pod.node or "") or {}
            if not pod.deleting and stored.get("phase") == "Succeeded" and stored.get("pod") == pod.name:
                self._delete([pod], CLEANUP_REASON)

    def _decide(self) -> Plan:
        phase = self.status["phase"]
        if phase == "failed":  # RC13
            return self._plan()
        paused_by_policy = self.record.annotations.get(PAUSED_BY_POLICY) == "true"
        if self.spec.paused and phase in ("running", "paused"):  # RC14
            self.status["phase"] = "paused"
            return self._plan()
        failed, policy, rules = self.status["failed"], self.spec.failure_policy, self.ledger.rules.failures
        over_budget = failed > 0 and not policy.tolerates(len(self.ledger.failed), self.status["desired"])  # F17
        job_failed, message, reason = rule_failure(self.ledger.fail_job.values(), rules)  # F16, even past a pause
        if paused_by_policy and not self.options.kruise_compat:  # F10: a policy pause ends as F11 says, budget or not
            if failed > 0 and policy.type == "Pause" and not job_failed:
                self.status["phase"] = "paused"  # F10 fixed: stay paused, no event flapping
                return self._plan()
            self.annotations[PAUSED_BY_POLICY] = None
        if phase == "paused" and not self.spec.paused:  # RC15
            self.status["phase"] = "running"
            self._event("Normal", "Continue", "continue to process job")

        if over_budget and not job_failed:  # RC16 (upstream: any failed pod; F17 lets maxFailedNodes of them pass)
            if policy.type == "Pause":
                self._event("Warning", "Paused", "job is paused, due to failed pod")
                self.status["phase"] = "paused"
                if not self.options.kruise_compat:
                    self.annotations[PAUSED_BY_POLICY] = "true"
                return self._plan()
            if policy.type == "FailFast":
                job_failed, message, reason = True, FAILFAST_MESSAGE, FAILFAST_REASON
                if self.options.kruise_compat:
                    self._event("Warning", reason, message + self._counts_suffix())
        if not job_failed:  # RC17
            left = self._deadline_left()
            if left is not None and left <= 0:
                job_failed, reason = True, "DeadlineExceeded"
                message = f"Job {self.record.namespace}/{self.spec.name} was active longer than specified deadline"

        if job_failed:  # RC18
            deleted = self._delete(self.ledger.owned_pods(self.all_pods, "active"), reason)
            self._delete(sorted((p for p in self.ledger.retrying.values() if not (p.terminal or p.deleting)),
                                key=lambda p: p.name), reason)  # V18: stuck pods of an earlier template
            self.status["failed"] += deleted
            self.status["active"] -= deleted
            self.status["phase"] = "failed"
            self.status["failureReason"] = "FailedPodFound" if reason == FAILFAST_REASON else reason
            self._finish("Failed", message)
            self._event("Warning", reason, message + self._counts_suffix())
            return self._plan()

        misfits = self.ledger.misfits
        if misfits:
            pods = [misfits[n] for n in sorted(misfits)]
            self.status["failed"] += self._delete(pods, "NodeNoLongerEligible")
            self.left_waiting = sum(self.ledger.bucket(p) == "retrying" for p in pods)  # F15: no longer waits
            self.status["active"] -= len(pods) - self.left_waiting
            self.status["retrying"] -= self.left_waiting
        if self.ledger.retrying:  # F15/F16: delete each retrying pod whose backoff has passed
            deletes, wait = retry_deletes(self.ledger.retrying.values(), self.now, rules, self.ledger.misfits)
            self.deletes, self.requeue = [*self.deletes, *deletes], earliest(self.requeue, wait)
        if self.options.cleanup_succeeded_pods and not self.options.kruise_compat:
            self._cleanup_succeeded()
        create_limit = None
        if not self.record.deleting and self.ledger.rest:
            create_limit = self._plan_creates(self.ledger.rest)
        if self._complete():
            self.status["phase"] = "completed"
            settle_waiting(self.status, self.ledger.waiting_successes)  # only pods on nodes left out can wait
            succeeded, failed_n = self.status["succeeded"], self.status["failed"]
            self._finish("Complete", f"Job completed, {succeeded} pods succeeded, {failed_n} pods failed")
            self._event("Normal", "JobComplete", f"Job {self.record.namespace}/{self.spec.name} is completed, "
                                                 f"{succeeded} pods succeeded, {failed_n} pods failed")
        return self._plan(create_limit)

    def _plan_creates(self, rest: list[str]) -> int | None:
        """reconcilePods (§3.9): up to parallelism - active new pods, in slow-start batches."""
        try:
            parallelism = scaled_value(self.spec.parallelism, self.status["desired"], round_up=True)
        except ValueError as exc:  # R13: validation refuses such a value; a pass that meets one says so and retries
            value = self.spec.parallelism
            error = validate_int_or_percent(value, "spec.parallelism") or invalid("spec.parallelism", value, str(exc))
            self._event("Warning", INVALID_PARALLELISM, f"{error}; no pod is created until it is fixed")
            self.requeue = earliest(self.requeue, PARALLELISM_RETRY_SECONDS)
            return None
        active = int(self.status["active"])
        if active > parallelism:
            self._event("Warning", "TooManyActivePods", "Number of active pods exceed parallelism limit")
            return None
        busy = self.ledger.incomplete - len(rest)  # R16: pods running (or to re-run) on nodes that exist
        diff, wait = wave_room(self.spec.waves, self.status, min(parallelism - active, len(rest)), busy,
                               self.ledger.terminal, self.now)
        self.requeue = earliest(self.requeue, wait)
        previous = self.stored
        for node in rest[:diff]:
            # P12: a node that had a pod before (deleted by hand or by GC) is re-run as the next attempt.
            attempt = int((previous.get(node) or {}).get("attempt", 1)) + 1 if node in previous else 1
            pod = build_pod(self.spec.name, self.record.namespace, self.spec.template, self.record, node,
                            self.options.assign_by_scheduler, attempt, self.ledger.rules.failures.template_id)
            self.creates.append(pod)
            # Recorded at once, so a pod deleted before any pass saw it still counts as an attempt (a
            # create that fails is undone by the plan's fallback); the last finished result is kept (L12).
            self.fallbacks[pod["metadata"]["name"]] = (node, previous.get(node))
            entry: dict[str, Any] = {"pod": pod["metadata"]["name"], "phase": "Pending", "restarts": 0,
                                     "attempt": attempt}
            row = self.ledger.rows.get(node)
            last = (row.entry if row is not None else None) or previous.get(node) or {}
            if last.get("phase") in nt.TERMINAL:
                entry["previous"] = {k: v for k, v in last.items() if k != "previous"}
            self.ledger.set_entry(node, entry)
        return diff

    def _complete(self) -> bool:
        """isJobComplete (§3.8): every desired node has a finished or terminating pod (or a kept success)."""
        if self.spec.completion_policy.type == "Never" or not self.ledger.desired:
            return False
        return self.ledger.incomplete == 0

    def _store_table(self) -> dict[str, dict[str, Any]]:
        """The node table in the record while it is small, else in parts (see node_table); the parts to write."""
        ledger = self.ledger
        if not nt.is_sharded(self.status) and max(len(ledger.entries), ledger.desired) <= nt.INLINE_NODES:
            self.status["nodes"] = ledger.table()
            return {}
        parts = int(self.status.get("nodeParts") or 0) or nt.parts_for(ledger.desired)
        done = self.finished or (ledger.desired > 0 and ledger.terminal == ledger.desired)
        self.status.update(ledger.sharded_fields(parts))
        return {nt.part_name(self.record.name, index): nt.part_document(entries)
                for index, entries in ledger.open_book(parts).writes(ledger.rows, done=done).items()}

    def _plan(self, create_limit: int | None = None) -> Plan:
        waiting = 0 if self.finished else self.ledger.waiting - self.left_waiting  # after this pass's creates
        self.status.update(retrying=waiting) if waiting else self.status.pop("retrying", None)
        record_parts = self._store_table()
        changed = self.status != dict(self.record.status)
        return Plan(
            create_pods=tuple(self.creates),
            deletes=tuple(self.deletes),
            create_limit=create_limit,
            status=self.status if changed or self.creates else None,
            record_annotations=self.annotations,
            record_parts=record_parts,
            events=tuple(self.events),
            requeue_after=self.requeue,
            finished=self.finished,
            active_counts="attempted" if self.options.kruise_compat else "created",  # R9
            create_fallbacks=self.fallbacks,
        )


def reconcile_broadcast_job(spec: BroadcastJobSpec, record: JobRecord, nodes: Sequence[NodeInfo],
                            pods: Sequence[PodInfo], now: float,
                            options: BroadcastOptions | None = None,
                            parts: Mapping[str, Mapping[str, Any]] | None = None) -> Plan:
    """One pass of the BroadcastJob controller over the observed state at `now`.

    `parts` holds the record's parts (name → document): the node table, once it outgrew the record.
    """
    return _Pass(spec, record, nodes, pods, now, options or BroadcastOptions(), parts or {}).run()
