"""Every shipped RBAC rule is needed: without it, a small job fails (or warns) naming that permission.

Each case grants user `restricted` all the roles of docs/rbac minus one rule, runs one small
job the way a task does (operator checks, submission, the reconcile loop, the task's conclusion)
and looks for the permission in what the user would see: the error, a pre-submit warning,
the job's Events, or the task log.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from support.local_hook import LocalHook
from support.owner_reference_policy import owner_references_enforced
from support.rbac_grants import ROLES, Grants, broadcast_job, rule_resources, tf_job

pytestmark = pytest.mark.cluster

GANG = {"gang_scheduler": "scheduler-plugins", "gang_scheduler_name": "default-scheduler"}
JOB = "rbac-rule"
TASK_LOG = "rbac.task"


@dataclass(frozen=True)
class Case:
    file: str
    kind: str
    resource: str
    where: str  # error | warning | events | log
    job: str  # bcj | bcj-failing | tf | tf-gang | tf-queue
    verb: str = "list"
    finishes: bool = False  # the job itself still runs to its end without the rule
    expect: str = ""  # what names the permission, when not the API server's RBAC message
    patience: float = 60.0

    @property
    def named(self) -> str:
        return self.expect or f'cannot {self.verb} resource "{self.resource}"'


CASES = [
    Case("role.yaml", "Role", "configmaps", "error", "bcj", verb="get"),
    Case("role.yaml", "Role", "configmaps/finalizers", "events", "bcj", verb="update", patience=8.0),
    Case("role.yaml", "Role", "pods", "error", "bcj"),
    Case("role.yaml", "Role", "pods/log", "log", "bcj-failing", verb="get", finishes=True),
    Case("role.yaml", "Role", "services", "error", "tf"),
    Case("role.yaml", "Role", "events", "log", "bcj", verb="create", finishes=True),
    Case("role.yaml", "Role", "leases", "warning", "bcj", verb="get", finishes=True),
    Case("clusterrole.yaml", "ClusterRole", "nodes", "error", "bcj"),
    Case("tfjob-extras.yaml", "Role", "podgroups", "error", "tf-gang", expect="not allowed to list PodGroups"),
    Case("tfjob-extras.yaml", "Role", "localqueues", "warning", "tf-queue", verb="get", finishes=True),
    Case("tfjob-extras.yaml", "ClusterRole", "priorityclasses", "log", "tf-gang", finishes=True),
]


def test_every_shipped_rule_has_a_case() -> None:
    shipped = sorted((file, kind, resource) for file, kind in ROLES for resource in rule_resources(file, kind))
    assert sorted((c.file, c.kind, c.resource) for c in CASES) == shipped


def operator_for(job: str, namespace: str) -> Any:
    from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
    from airflow_broadcast.operators.tf_job import TFJobOperator

    if job.startswith("bcj"):
        result = "Failed" if job == "bcj-failing" else "Succeeded"
        return BroadcastJobOperator(task_id="rbac", manifest=broadcast_job(JOB, namespace, result))
    extra: dict[str, Any] = {"tf_options": GANG} if job == "tf-gang" else {}
    if job == "tf-queue":
        extra["queue_name"] = "team-a"
    return TFJobOperator(task_id="rbac", manifest=tf_job(JOB, namespace), **extra)


@pytest.fixture
def task_as_restricted(cluster: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The task's own cluster calls (its conclusion) go out as `restricted` too."""
    hook = LocalHook(cluster.restricted_kubeconfig, monkeypatch)
    yield
    hook.close_now()


def run_small_job(case: Case, engine: Any, namespace: str) -> dict[str, str]:
    """What the user sees of one job, by channel; `outcome` is how far the reconcile loop got."""
    from airflow_broadcast.cluster.api_errors import ClusterApiError
    from airflow_broadcast.operators.job_runtime import conclude
    from airflow_broadcast.triggers.job_reconcile import JobTriggerArgs

    seen = dict.fromkeys(("error", "warning", "events", "outcome"), "")
    operator = operator_for(case.job, namespace)
    try:
        job = operator.parse(operator.manifest, namespace, namespace)
        seen["warning"] = "\n".join(engine.run_async(lambda kube: operator.before_submit(kube, job)))
        submission = engine.submit(dict(job.manifest))
        options = dataclasses.asdict(operator.job_options)
        outcome = engine.drive(submission, operator.kind, options=options, deadline=time.time() + case.patience,
                               timeout=case.patience + 30)
        seen["outcome"] = outcome.reason
        if outcome.reason == "finished":
            args = JobTriggerArgs(kind=operator.kind, namespace=namespace, record_name=submission.name,
                                  uid=submission.uid, options=operator.job_options)
            conclude(args, outcome.reason, outcome.message, logging.getLogger(TASK_LOG))
    except (ClusterApiError, RuntimeError) as exc:  # JobFailedError and PodGroupApiError are RuntimeErrors
        seen["error"] = str(exc)
    seen["events"] = "\n".join(e.message or "" for e in engine.events(operator.kind, JOB))
    return seen


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.file}:{c.resource}")
def test_without_the_rule_the_job_names_the_missing_permission(
        case: Case, grants: Grants, restricted_engine: Any, node_factory: Any, namespace: str, cluster: Any,
        task_as_restricted: None, caplog: pytest.LogCaptureFixture) -> None:
    node_factory(1, labels={"pool": namespace})
    grants.grant_all(without=(case.file, case.kind, case.resource))
    caplog.set_level(logging.DEBUG, logger="airflow_broadcast")
    caplog.set_level(logging.DEBUG, logger=TASK_LOG)

    if case.resource == "configmaps/finalizers":
        with owner_references_enforced(cluster.kubeconfig, cluster.restricted_kubeconfig, namespace):
            seen = run_small_job(case, restricted_engine, namespace)
    else:
        seen = run_small_job(case, restricted_engine, namespace)
    seen["log"] = caplog.text

    assert case.named in seen[case.where], seen
    assert (seen["outcome"] == "finished") == case.finishes, seen


def test_with_the_finalizers_rule_children_are_admitted_where_owner_references_are_enforced(
        grants: Grants, restricted_engine: Any, node_factory: Any, namespace: str, cluster: Any,
        task_as_restricted: None) -> None:
    """The counterpart of the configmaps/finalizers case: the enforcement blocks nothing the Role grants."""
    node_factory(1, labels={"pool": namespace})
    case = next(c for c in CASES if c.resource == "configmaps/finalizers")
    grants.grant_all(without=(case.file, case.kind, case.resource))

    with owner_references_enforced(cluster.kubeconfig, cluster.restricted_kubeconfig, namespace):
        grants.grant(case.file, case.kind, only=case.resource)  # once the enforcement is seen to deny
        seen = run_small_job(dataclasses.replace(case, patience=60.0), restricted_engine, namespace)

    assert seen["outcome"] == "finished", seen
    assert seen["error"] == "" and "configmaps/finalizers" not in seen["events"], seen
