"""Gang scheduling for TFJob (tfjob.md §2.8.8, checklist L): the PodGroup, pod decoration, creation gating.

training-operator v1.9 supports two gang schedulers, chosen by its `--gang-scheduler-name`
flag; here the choice is `TFJobOptions.gang_scheduler`. Both get one PodGroup named after
the job, owned by the job record, with the job's annotations:

* Volcano (`scheduling.volcano.sh/v1beta1`): minMember, queue, priorityClassName, minResources;
  pods carry the `scheduling.k8s.io/group-name` and `volcano.sh/task-spec` annotations, and are
  not created while the PodGroup's phase is "" or Pending (Volcano has not admitted the gang).
* scheduler-plugins coscheduling (`scheduling.x-k8s.io/v1alpha1`): minMember, minResources,
  scheduleTimeoutSeconds; pods carry the `scheduling.x-k8s.io/pod-group` label.

Pods without a schedulerName get the gang scheduler's; a replica that names another scheduler
keeps it, with a Warning. The PodGroup is deleted when the job finishes, fails or is suspended.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from airflow_broadcast.reconcilers.observed import RECORD_UID_LABEL, JobRecord, PodGroupInfo
from airflow_broadcast.specs.quantities import QuantityError, parse_quantity
from airflow_broadcast.specs.tf_job.spec import TFJobSpec

VOLCANO = "volcano"
SCHEDULER_PLUGINS = "scheduler-plugins"
GANG_SCHEDULERS = (VOLCANO, SCHEDULER_PLUGINS)
DEFAULT_SCHEDULER_NAME = {VOLCANO: "volcano", SCHEDULER_PLUGINS: "scheduler-plugins-scheduler"}
POD_GROUP_API_VERSION = {VOLCANO: "scheduling.volcano.sh/v1beta1", SCHEDULER_PLUGINS: "scheduling.x-k8s.io/v1alpha1"}
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_TASK_ANNOTATION = "volcano.sh/task-spec"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
DEFAULT_QUEUE = "default"
CUSTOM_SCHEDULER_MESSAGE = ("Another scheduler is specified when gang-scheduling is enabled "
                            "and it will not be overwritten")
TERMINATED_MESSAGE = "Job has been terminated. Deleting PodGroup"
_WAITING_PHASES = ("", "Pending")


@dataclass(frozen=True)
class GangScheduler:
    """Which gang scheduler is in use, and the schedulerName its pods get."""

    kind: str
    scheduler_name: str = ""

    @property
    def name(self) -> str:
        return self.scheduler_name or DEFAULT_SCHEDULER_NAME[self.kind]

    @property
    def api_version(self) -> str:
        return POD_GROUP_API_VERSION[self.kind]


def gang_scheduler(kind: str, scheduler_name: str = "") -> GangScheduler | None:
    """None when gang scheduling is off (""); ValueError for an unknown scheduler."""
    if not kind:
        return None
    if kind not in GANG_SCHEDULERS:
        raise ValueError(f"gang_scheduler must be one of {', '.join(GANG_SCHEDULERS)} (or empty), not {kind!r}")
    return GangScheduler(kind, scheduler_name)


def own_pod_group(pod_groups: Sequence[PodGroupInfo], spec: TFJobSpec, record: JobRecord) -> PodGroupInfo | None:
    return next((g for g in pod_groups if g.name == spec.name and g.owner_uid == record.uid), None)


def pod_group_manifest(spec: TFJobSpec, record: JobRecord, gang: GangScheduler,
                       priorities: Mapping[str, int]) -> dict[str, Any]:
    """The PodGroup upstream's SyncPodGroup creates (L1-L3)."""
    policy = dict(spec.run_policy.scheduling_policy or {})
    min_member = policy.get("minAvailable")
    if min_member is None:
        min_member = spec.total_replicas
    resources = policy.get("minResources")
    if resources is None:
        resources = min_resources(spec, int(min_member), priorities)
    body: dict[str, Any] = {"minMember": int(min_member)}
    if gang.kind == VOLCANO:
        body["queue"] = policy.get("queue") or DEFAULT_QUEUE
        if policy.get("priorityClass"):
            body["priorityClassName"] = policy["priorityClass"]
    elif policy.get("scheduleTimeoutSeconds") is not None:
        body["scheduleTimeoutSeconds"] = int(policy["scheduleTimeoutSeconds"])
    if resources:
        body["minResources"] = dict(resources)
    metadata: dict[str, Any] = {"name": spec.name, "namespace": spec.namespace,
                                "labels": {RECORD_UID_LABEL: record.uid},
                                "ownerReferences": [dict(record.owner_reference)]}
    if spec.annotations:
        metadata["annotations"] = dict(spec.annotations)
    return {"apiVersion": gang.api_version, "kind": "PodGroup", "metadata": metadata, "spec": body}


def min_resources(spec: TFJobSpec, min_member: int, priorities: Mapping[str, int]) -> dict[str, str]:
    """`CalcPGMinResources`: the requests (limits for a container without requests) of the first
    `min_member` pods, taking replica types by PriorityClass value, highest first (L3).

    Upstream iterates a Go map for types of equal priority; here ties keep the spec's replica order.
    A PriorityClass that does not exist counts as 0, as upstream ignores it.
    """
    ordered = sorted(spec.replica_specs.items(),
                     key=lambda item: -priorities.get(str((item[1].template.get("spec") or {})
                                                          .get("priorityClassName") or ""), 0))
    totals: dict[str, Fraction] = {}
    counted = 0
    for _, replica in ordered:
        for _ in range(replica.replicas):
            if counted >= min_member:
                break
            counted += 1
            for container in (replica.template.get("spec") or {}).get("containers") or []:
                _add(totals, container.get("resources") or {})
    return {name: format_quantity(value) for name, value in sorted(totals.items())}


def _add(totals: dict[str, Fraction], resources: Mapping[str, Any]) -> None:
    requests = resources.get("requests")
    chosen = requests if requests is not None else resources.get("limits") or {}
    for name, value in chosen.items():
        try:
            totals[name] = totals.get(name, Fraction(0)) + parse_quantity(value)
        except QuantityError:
            continue  # the API server refuses such a pod anyway; the create reports it


def format_quantity(value: Fraction) -> str:
    """A quantity string: whole units when exact, else milli-units rounded up (as the API server would)."""
    if value.denominator == 1:
        return str(value.numerator)
    milli = value * 1000
    whole = -(-milli.numerator // milli.denominator)
    return f"{whole}m"


def uses_custom_scheduler(spec: TFJobSpec, gang: GangScheduler) -> bool:
    """L6: some replica names a scheduler other than the gang scheduler."""
    return any((r.template.get("spec") or {}).get("schedulerName") not in (None, "", gang.name)
               for r in spec.replica_specs.values())


def decorate_pod(pod: dict[str, Any], spec: TFJobSpec, replica_type: str, gang: GangScheduler) -> None:
    """L5: the gang scheduler's name (unless the template names one) and its group marker."""
    pod_spec = pod.setdefault("spec", {})
    if not pod_spec.get("schedulerName"):
        pod_spec["schedulerName"] = gang.name
    metadata = pod.setdefault("metadata", {})
    if gang.kind == VOLCANO:
        annotations = metadata.setdefault("annotations", {})
        annotations[VOLCANO_GROUP_ANNOTATION] = spec.name
        annotations[VOLCANO_TASK_ANNOTATION] = replica_type.lower()
    else:
        metadata.setdefault("labels", {})[POD_GROUP_LABEL] = spec.name


def delays_pod_creation(gang: GangScheduler, pod_group: PodGroupInfo | None) -> bool:
    """L4: Volcano has not admitted the gang yet (no PodGroup, or its phase is "" or Pending)."""
    return gang.kind == VOLCANO and (pod_group is None or pod_group.phase in _WAITING_PHASES)
