"""TFJob per-child events come from what the executor did, not from what the pass planned (C12, G8).

The reconciler plans the creates and deletes; the executor runs them against a scripted API
and records `SuccessfulCreatePod`, `FailedCreatePod`, `SuccessfulDeletePod`, ... per outcome,
in upstream's wording. A create that fails, or one a stopped slow start never sends, is
never reported as created, and a child that was already gone is not reported as deleted.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.fake_api import FakeApi, apply
from support.tf_builders import NOW, UID, make_pod, make_record, make_service, make_spec

from airflow_broadcast.cluster import api_errors as e
from airflow_broadcast.cluster import job_events
from airflow_broadcast.cluster.kinds.tf_job import TF_STYLE
from airflow_broadcast.reconcilers.plan import Plan
from airflow_broadcast.reconcilers.tf_job.reconciler import reconcile_tf_job

RECORD = {"metadata": {"name": "tfjob-mnist", "namespace": "kubeflow", "uid": UID, "resourceVersion": "1"},
          "data": {}}
QUOTA = e.Forbidden(403, "Forbidden", "exceeded quota: pods")


@pytest.fixture(autouse=True)
def fresh_spam_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_events, "_spam", job_events._SpamFilter())


def first_pass(workers: int) -> Plan:
    spec = make_spec(replicas={"Worker": workers})
    return reconcile_tf_job(spec, make_record(spec), [], [], NOW)


async def executed(plan: Plan, **api: Any) -> list[tuple[str, str]]:
    fake = FakeApi(**api)
    await apply(fake, plan, style=TF_STYLE, record=RECORD)
    return fake.events


def about(events: list[tuple[str, str]], kind: str) -> list[tuple[str, str]]:
    return [(reason, message) for reason, message in events if reason.endswith(kind)]


async def test_C12_each_created_child_is_reported_once_in_upstream_wording() -> None:
    events = await executed(first_pass(2))
    assert sorted(about(events, "Pod")) == [("SuccessfulCreatePod", "Created pod: mnist-worker-0"),
                                            ("SuccessfulCreatePod", "Created pod: mnist-worker-1")]
    assert sorted(about(events, "Service")) == [("SuccessfulCreateService", "Created service: mnist-worker-0"),
                                                ("SuccessfulCreateService", "Created service: mnist-worker-1")]


async def test_C12_a_failed_pod_create_is_reported_as_failed_and_never_as_created() -> None:
    events = await executed(first_pass(3), fail={"mnist-worker-0": QUOTA})
    pods = about(events, "Pod")
    assert [reason for reason, _ in pods] == ["FailedCreatePod"], "worker-1 and -2 were never sent"
    assert pods[0][1].startswith("Error creating: ") and "exceeded quota: pods" in pods[0][1]
    assert len(about(events, "Service")) == 3, "the services were created"


async def test_C12_creates_the_slow_start_never_sends_are_not_reported() -> None:
    """Batches of 1, 2, 1: worker-1 fails in the second batch, so worker-3 is never sent."""
    events = await executed(first_pass(4), fail={"mnist-worker-1": QUOTA})
    pods = about(events, "Pod")
    assert sorted(m for r, m in pods if r == "SuccessfulCreatePod") == ["Created pod: mnist-worker-0",
                                                                         "Created pod: mnist-worker-2"]
    assert [r for r, _ in pods].count("FailedCreatePod") == 1
    assert not [m for _, m in pods if "mnist-worker-3" in m]


async def test_G8_a_delete_is_reported_only_when_it_happened() -> None:
    """The finishing pass deletes every child (cleanPodPolicy All); worker-1's pod was already gone."""
    spec = make_spec(replicas={"Worker": 2}, run_policy={"cleanPodPolicy": "All"})
    pods = [make_pod("mnist", "Worker", i, "Succeeded", exit_code=0) for i in range(2)]
    services = [make_service("mnist", "Worker", i) for i in range(2)]
    plan = reconcile_tf_job(spec, make_record(spec), pods, services, NOW)
    assert plan.finished and len(plan.deletes) == 4

    events = await executed(plan, gone={"pods/mnist-worker-1"})
    assert about(events, "Pod") == [("SuccessfulDeletePod", "Deleted pod: mnist-worker-0")]
    assert sorted(about(events, "Service")) == [("SuccessfulDeleteService", "Deleted service: mnist-worker-0"),
                                                ("SuccessfulDeleteService", "Deleted service: mnist-worker-1")]


async def test_C11_a_child_that_already_exists_and_is_ours_counts_as_created() -> None:
    """A pass repeated after a lost answer (or by a second trigger) meets its own pod and Service: success."""
    ours = {"metadata": {"name": "mnist-worker-0", "ownerReferences": [{"uid": UID, "controller": True}]}}
    exists = e.AlreadyExists(409, "AlreadyExists", 'pods "mnist-worker-0" already exists')
    fake = FakeApi(fail={"mnist-worker-0": exists}, existing={"mnist-worker-0": ours})
    result = await apply(fake, first_pass(2), style=TF_STYLE, record=RECORD)
    assert result.create_errors == []
    assert not [r for r, _ in fake.events if r.startswith("Failed")]
    assert sorted(m for _, m in fake.events) == ["Created pod: mnist-worker-1", "Created service: mnist-worker-1"]
