"""Checklist E (R1-R16): parallelism, slow start and failed creates, on the real cluster."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from bcj_cluster import KIND, bcj, events, job_pods, pods_by_node, reasons, wait_status
from kubernetes import client
from support.waits import wait_until

pytestmark = pytest.mark.cluster


def quota(core_api: client.CoreV1Api, namespace: str, pods: int) -> None:
    """Limit the namespace to `pods` non-terminal pods, and wait until the API server itself enforces it.

    The API server admits against its own cached copy of the quota, which can lag the status the
    controller wrote: the quota starts at 0 pods until a dry-run pod is refused (the API server sees the
    quota), then is raised to `pods` until a dry-run pod is admitted (it sees the new limit)."""
    core_api.create_namespaced_resource_quota(namespace, {"metadata": {"name": "pods"},
                                                          "spec": {"hard": {"pods": "0"}}})
    wait_until(lambda: not _admitted(core_api, namespace), timeout=30, what="the quota of 0 pods enforced")
    core_api.patch_namespaced_resource_quota("pods", namespace, {"spec": {"hard": {"pods": str(pods)}}})
    wait_until(lambda: _admitted(core_api, namespace), timeout=30, what=f"the quota of {pods} pods enforced")


def _admitted(core_api: client.CoreV1Api, namespace: str) -> bool:
    """Whether the API server would admit one more pod now (a dry run: nothing is created)."""
    probe = {"metadata": {"name": "quota-probe"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    try:
        core_api.create_namespaced_pod(namespace, probe, dry_run="All")
    except client.ApiException as exc:
        if exc.status == 403 and "exceeded quota" in str(exc.body):
            return False
        raise
    return True


@pytest.fixture
def held_record(core_api: client.CoreV1Api, namespace: str) -> Iterator[list[str]]:
    """Record names given a finalizer by the test; the finalizer is removed afterwards."""
    names: list[str] = []
    yield names
    for name in names:
        try:
            core_api.patch_namespaced_config_map(name, namespace, {"metadata": {"finalizers": None}})
        except client.ApiException as exc:
            if exc.status != 404:
                raise


def test_R1_int_parallelism_caps_creations_per_pass_and_the_rest_follow(
        engine: Any, node_factory: Any, namespace: str) -> None:
    nodes = node_factory(4, labels={"pool": namespace})
    submission = engine.submit(bcj("r1", namespace, after="1s", parallelism=2))

    engine.drive(submission, KIND, single_pass=True)
    first = engine.status(KIND, "r1")
    # R16: creation order is deterministic (by node name)
    assert sorted(pods_by_node(engine, "r1")) == sorted(nodes)[:2]
    assert (first["active"], first["desired"]) == (2, 4)

    outcome = engine.drive(submission, KIND)
    assert outcome.reason == "finished"
    assert outcome.status["succeeded"] == 4
    assert sorted(pods_by_node(engine, "r1")) == sorted(nodes)


def test_R2_percent_parallelism_is_rounded_up_from_desired(engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(4, labels={"pool": namespace})
    submission = engine.submit(bcj("r2", namespace, result=None, parallelism="30%"))

    engine.drive(submission, KIND, single_pass=True)
    engine.drive(submission, KIND, single_pass=True)

    # ceil(30% of 4 desired) = 2, and the second pass adds none while 2 are active
    assert len(job_pods(engine, "r2")) == 2
    status = engine.status(KIND, "r2")
    assert (status["active"], status["desired"]) == (2, 4)


def test_R3_S5_absent_parallelism_creates_on_every_eligible_node_in_one_pass_counted_active(
        engine: Any, node_factory: Any, namespace: str) -> None:
    nodes = node_factory(4, labels={"pool": namespace})
    submission = engine.submit(bcj("r3", namespace, result=None))

    engine.drive(submission, KIND, single_pass=True)

    assert sorted(pods_by_node(engine, "r3")) == sorted(nodes)
    assert engine.status(KIND, "r3")["active"] == 4


def test_R4_zero_parallelism_holds_the_job_until_raised(engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(2, labels={"pool": namespace})
    submission = engine.submit(bcj("r4", namespace, result=None, parallelism=0))

    engine.drive(submission, KIND, single_pass=True)
    engine.drive(submission, KIND, single_pass=True)

    status = engine.status(KIND, "r4")
    assert job_pods(engine, "r4") == []
    assert (status["phase"], status["desired"], status["active"]) == ("running", 2, 0)
    assert events(engine, "r4") == []

    engine.edit_manifest(KIND, "r4", lambda m: m["spec"].update(parallelism=1))
    engine.drive(submission, KIND, single_pass=True)
    assert len(job_pods(engine, "r4")) == 1


def test_R5_active_above_parallelism_warns_and_deletes_nothing(
        engine: Any, node_factory: Any, namespace: str) -> None:
    node_factory(3, labels={"pool": namespace})
    submission = engine.submit(bcj("r5", namespace, result=None, parallelism=2))
    engine.drive(submission, KIND, single_pass=True)
    assert len(job_pods(engine, "r5")) == 2

    engine.edit_manifest(KIND, "r5", lambda m: m["spec"].update(parallelism=1))
    engine.drive(submission, KIND, single_pass=True)

    assert ("Warning", "TooManyActivePods", "Number of active pods exceed parallelism limit") in events(engine, "r5")
    assert "SuccessfulDelete" not in reasons(engine, "r5")
    pods = job_pods(engine, "r5")
    assert len(pods) == 2
    assert not any(p.metadata.deletion_timestamp for p in pods)


@pytest.mark.parametrize("compat", [
    pytest.param(False, id="fixed"),
    pytest.param(True, id="compat"),
])
def test_R6_R7_R9_slow_start_batches_stop_after_a_failed_batch(
        engine: Any, node_factory: Any, namespace: str, core_api: client.CoreV1Api, compat: bool) -> None:
    """8 nodes and room for 3 pods: batches 1 and 2 succeed, the batch of 4 fails, the last 1 is skipped."""
    node_factory(8, labels={"pool": namespace})
    quota(core_api, namespace, 3)
    submission = engine.submit(bcj("r6", namespace, result=None))

    engine.drive(submission, KIND, options={"kruise_compat": compat}, single_pass=True)

    seen = events(engine, "r6")
    created = [m for _, r, m in seen if r == "SuccessfulCreate"]
    failed = [(t, m) for t, r, m in seen if r == "FailedCreate"]
    assert len(created) == 3
    assert len(failed) == 4  # the whole batch of 4 was attempted; the 8th node never was (R7)
    assert all(t == "Warning" and m.startswith("Error creating: ") and "exceeded quota" in m for t, m in failed)
    assert len(job_pods(engine, "r6")) == 3
    status = engine.status(KIND, "r6")
    assert status["desired"] == 8
    # R9: fixed mode counts only successful creates; upstream (compat) counts every attempted create
    assert status["active"] == (3 + 4 if compat else 3)


def test_R10_E2_a_quota_refusal_is_not_reported_as_missing_rbac(
        engine: Any, node_factory: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    node_factory(2, labels={"pool": namespace})
    quota(core_api, namespace, 1)
    submission = engine.submit(bcj("r10", namespace, result=None))

    engine.drive(submission, KIND, single_pass=True)

    (message,) = [m for _, r, m in events(engine, "r10") if r == "FailedCreate"]
    assert "exceeded quota" in message
    assert "lacks this permission" not in message


def test_R7_creates_skipped_after_a_failed_batch_are_retried(
        engine: Any, node_factory: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    nodes = node_factory(5, labels={"pool": namespace})
    quota(core_api, namespace, 2)  # terminal pods leave the quota, so the rest fit later
    submission = engine.submit(bcj("r7", namespace))

    outcome = engine.drive(submission, KIND)

    assert outcome.reason == "finished"
    assert outcome.status["succeeded"] == 5
    assert sorted(pods_by_node(engine, "r7")) == sorted(nodes)
    assert "FailedCreate" in reasons(engine, "r7")


def test_R11_no_pods_are_created_while_the_job_is_being_deleted(
        engine: Any, node_factory: Any, namespace: str, core_api: client.CoreV1Api, held_record: list[str]) -> None:
    node_factory(2, labels={"pool": namespace})
    submission = engine.submit(bcj("r11", namespace, result=None))
    held_record.append(submission.name)
    core_api.patch_namespaced_config_map(submission.name, namespace,
                                         {"metadata": {"finalizers": ["tests.airflow-broadcast.io/hold"]}})
    core_api.delete_namespaced_config_map(submission.name, namespace)

    engine.drive(submission, KIND, single_pass=True)

    assert job_pods(engine, "r11") == []
    assert engine.status(KIND, "r11")["desired"] == 2


def test_R14_pods_on_deleted_nodes_still_take_a_parallelism_slot(
        engine: Any, node_factory: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    first, second = sorted(node_factory(2, labels={"pool": namespace}))
    submission = engine.submit(bcj("r14", namespace, result=None, parallelism=1))
    engine.drive(submission, KIND, single_pass=True)
    assert sorted(pods_by_node(engine, "r14")) == [first]

    core_api.delete_node(first)
    wait_until(lambda: not [n for n in core_api.list_node(field_selector=f"metadata.name={first}").items],
               timeout=30, what="node deleted")
    engine.drive(submission, KIND, single_pass=True)

    status = engine.status(KIND, "r14")
    assert (status["desired"], status["active"]) == (1, 1)
    assert second not in pods_by_node(engine, "r14")  # the pod on the deleted node still holds the only slot
    assert sorted(pods_by_node(engine, "r14")) == [first]


def test_R15_restart_failed_running_pod_frees_its_slot(engine: Any, node_factory: Any, namespace: str,
                                                       loops: Any) -> None:
    nodes = node_factory(2, labels={"pool": namespace})
    manifest = bcj("r15", namespace, result=None, restarts=1, restart_policy="OnFailure", parallelism=1,
                   failurePolicy={"type": "Continue"})
    loop = loops(engine.submit(manifest))

    status = wait_status(engine, "r15", lambda s: s["failed"] == 2, what="both pods restart-failed")

    assert sorted(pods_by_node(engine, "r15")) == sorted(nodes)
    assert status["active"] == 0
    assert all(p.status.phase == "Running" for p in job_pods(engine, "r15"))
    assert status["phase"] == "running"  # C8: restart-failed running pods block completion
    assert loop.running
