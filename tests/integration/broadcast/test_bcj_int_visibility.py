"""L11 and the task log: a BroadcastJob's stuck and failing pods on the real scheduler and kwok.

The job is driven as a task drives it (drive_job): Warning events and warning pod statuses go
to the task log, and `startup_timeout_seconds` ends the wait on a pod that cannot start.
"""

from __future__ import annotations

from typing import Any

import pytest
from bcj_cluster import KIND, SIM, bcj, job_pods
from kubernetes import client
from support.task_log import RecordingLog, drive_as_a_task
from support.waits import wait_for_pod_phase

from airflow_broadcast.cluster.reconcile_loop import LoopReason

pytestmark = pytest.mark.cluster
PULL_FAILS = {f"{SIM}/image-pull": "fail"}


def test_L11_a_pod_pinned_to_a_full_node_ends_at_the_start_up_timeout_naming_node_and_scheduler(
        engine: Any, node_factory: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    """The node fits the pod on paper (allocatable), but another pod uses its CPU: upstream waits for ever."""
    (node,) = node_factory(1, labels={"pool": namespace}, allocatable={"cpu": "1", "memory": "8Gi", "pods": "110"})
    core_api.create_namespaced_pod(namespace, {"metadata": {"name": "hog"}, "spec": {
        "nodeName": node, "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}})
    wait_for_pod_phase(core_api, namespace, "hog", ["Running"])
    requests = {"resources": {"requests": {"cpu": "500m"}}}
    submission = engine.submit(bcj("full", namespace, result=None, pod_spec={"containers": [
        {"name": "c", "image": "busybox", **requests}]}))
    log = RecordingLog()

    outcome = drive_as_a_task(engine, submission, KIND, log, startup_timeout_seconds=6)

    (pod,) = job_pods(engine, "full")
    name = pod.metadata.name
    assert outcome.reason is LoopReason.STARTUP_TIMEOUT, outcome.message
    assert outcome.message.startswith(f"pod {name} on node {node} has been starting for ")
    assert "longer than startup_timeout_seconds=6: Unschedulable: " in outcome.message
    assert "Insufficient cpu" in outcome.message
    scheduling = log.having(f"Warning FailedScheduling pod {name} on node {node}: ")
    assert scheduling and "Insufficient cpu" in scheduling[0]
    assert log.having(f"Warning PodUnschedulable BroadcastJob {namespace}/full: ")  # the job's own event
    assert pod.status.phase == "Pending"  # the loop deletes nothing: the task's conclusion does


def test_a_bad_image_shows_the_pull_errors_and_ends_at_the_start_up_timeout(
        engine: Any, node_factory: Any, namespace: str) -> None:
    (node,) = node_factory(1, labels={"pool": namespace})
    submission = engine.submit(bcj("badimage", namespace, result=None, annotations=PULL_FAILS))
    log = RecordingLog()

    outcome = drive_as_a_task(engine, submission, KIND, log, startup_timeout_seconds=8)

    (pod,) = job_pods(engine, "badimage")
    name = pod.metadata.name
    assert outcome.reason is LoopReason.STARTUP_TIMEOUT, (outcome.message, log.lines)
    assert outcome.message.startswith(f"pod {name} on node {node} has been starting for ")
    assert outcome.message.split("startup_timeout_seconds=8: ")[1].startswith(("ErrImagePull", "ImagePullBackOff"))
    assert log.having(f"Warning Failed pod {name} on node {node}: Failed to pull image")
    assert log.having(f"Warning BackOff pod {name} on node {node}: Back-off pulling image")
    assert log.having(f"Warning ErrImagePull pod {name} on node {node}: a container is waiting: ErrImagePull")


def test_an_oom_killed_pod_is_reported_from_its_status(engine: Any, node_factory: Any, namespace: str) -> None:
    (node,) = node_factory(1, labels={"pool": namespace})
    oom = {f"{SIM}/exit-code": "137", f"{SIM}/reason": "OOMKilled"}
    submission = engine.submit(bcj("oom", namespace, result="Failed", annotations=oom))
    log = RecordingLog()

    outcome = drive_as_a_task(engine, submission, KIND, log, startup_timeout_seconds=600)

    (pod,) = job_pods(engine, "oom")
    assert outcome.reason is LoopReason.FINISHED  # FailFast: the job failed
    assert log.having(f"Warning OOMKilled pod {pod.metadata.name} on node {node}: container c terminated with "
                      "exit code 137")
