"""The output of a reconcile pass: what to change in the cluster, and what the job now is.

A plan is data, and every decision is in it. The cluster layer executes it (deletes
first, then slow-start creates, then the record write) and treats 404 on delete and
AlreadyExists on create as done, so applying the same plan twice is harmless.

Two things are known only once the executor has run the plan, so the plan states
them as rules the executor applies to what happened, without choosing anything:

* Per-child events. `events` holds the job-level events only; the executor records
  one event per create or delete from its outcome (created, failed, deleted), in the
  kind's wording. A create that fails, or one a stopped slow start never sends, is
  therefore never reported as created.
* Pods created in this pass count as active (upstream increments `active` as it
  creates, R9). `status` counts the observed pods only, and `active_counts` names
  which creates to add: "created" (successes), "attempted" (every create sent, the
  failed ones too, as upstream's missing return does) or "none". `status_after`
  is the arithmetic; the executor only passes it the two counts.
* A create that fails, or is never sent, made no pod, so it was no attempt:
  `create_fallbacks` gives, per pod name, the node and the entry its node had in
  the status's node table before this pass (None: none), and `status_after` puts
  it back for the names the executor reports as not created.

No pass deletes the job. TTL after finished is an annotation the plan writes on the
record (see `reconcilers/expiry.py`), read later by whoever deletes the record.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal

from airflow_broadcast.specs.api_types import JsonDict

ActiveCount = Literal["none", "created", "attempted"]


@dataclass(frozen=True)
class DeleteChild:
    """Delete a child by name; `uid` guards against deleting a newer namesake."""

    kind: str  # "Pod" | "Service" | "PodGroup"
    name: str
    uid: str = ""
    reason: str = ""
    api_version: str = "v1"
    done_event: JobEvent | None = None  # recorded once the delete is done (a repeated delete records nothing)


@dataclass(frozen=True)
class JobEvent:
    """A Kubernetes Event to record against the job (reason and message as upstream writes them)."""

    type: str  # "Normal" | "Warning"
    reason: str
    message: str


@dataclass(frozen=True)
class Plan:
    """Everything one pass decided.

    * `create_pods` / `create_services`: full manifests with deterministic names.
      Pods are created in slow-start batches (1, 2, 4, ...), at most
      `create_limit` of them in this pass (None = all).
    * `create_objects`: other owned objects (a gang-scheduling PodGroup), created before any pod.
    * `deletes`: children to delete (executed before any create).
    * `status`: the job status to persist, or None when unchanged.
    * `record_annotations`: durable flags on the job record (None value = remove).
    * `record_parts`: ConfigMaps owned by the record that hold detail too large for it
      (name → the JSON document it holds, replaced whole), written before the record.
    * `events`: job-level events; per-child events come from the executor's outcomes.
    * `requeue_after`: seconds until a timer-driven pass is needed (deadline,
      backoff), or None when only cluster events can change the outcome.
    * `finished`: the job reached a terminal state in (or before) this pass.
    * `active_counts`: which pod creates of this pass `status["active"]` includes.
    * `create_fallbacks`: pod name → (node, its `status["nodes"]` entry before this pass).
    """

    create_pods: tuple[JsonDict, ...] = ()
    create_services: tuple[JsonDict, ...] = ()
    create_objects: tuple[JsonDict, ...] = ()
    deletes: tuple[DeleteChild, ...] = ()
    create_limit: int | None = None
    status: JsonDict | None = None
    record_annotations: Mapping[str, str | None] = field(default_factory=dict)
    record_parts: Mapping[str, JsonDict] = field(default_factory=dict)
    events: tuple[JobEvent, ...] = ()
    requeue_after: float | None = None
    finished: bool = False
    active_counts: ActiveCount = "none"
    create_fallbacks: Mapping[str, tuple[str, JsonDict | None]] = field(default_factory=dict)

    @property
    def changes_cluster(self) -> bool:
        return bool(self.create_pods or self.create_services or self.create_objects or self.deletes
                    or self.status is not None or self.record_annotations or self.record_parts)

    def status_after(self, created: int, attempted: int, not_created: Collection[str] = ()) -> JsonDict | None:
        """The status to write once the pod creates ran: `created` succeeded out of `attempted` sent,
        and the pods named in `not_created` do not exist (their create failed or was not sent)."""
        if self.status is None:
            return None
        status = self.status
        if self.active_counts != "none":
            added = attempted if self.active_counts == "attempted" else created
            status = {**status, "active": int(status.get("active", 0)) + added}
        table = status.get("nodes")
        undone = [self.create_fallbacks[name] for name in not_created if name in self.create_fallbacks]
        if undone and isinstance(table, Mapping):
            table = dict(table)
            for node, before in undone:
                if node in table:
                    if before is None:
                        del table[node]
                    else:
                        table[node] = before
            status = {**status, "nodes": table}
        return status


def earliest(*delays: float | None) -> float | None:
    """The smallest non-None delay (clamped at 0), or None."""
    present = [max(0.0, d) for d in delays if d is not None]
    return min(present) if present else None
