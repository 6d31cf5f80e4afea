"""pod_info: what the reconcilers read of a pod's status for the TFJob E14 warnings."""

from __future__ import annotations

from typing import Any

from airflow_broadcast.cluster.observation import pod_info
from airflow_broadcast.reconcilers.observed import ContainerWaiting


def pod(status: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "p", "uid": "u"}, "spec": {"containers": [{"name": "tensorflow"}]}, "status": status}


def test_a_container_waiting_with_a_message_is_named_with_its_reason_and_message() -> None:
    info = pod_info(pod({"phase": "Pending", "containerStatuses": [
        {"name": "sidecar", "state": {"waiting": {"reason": "ContainerCreating"}}},
        {"name": "tensorflow", "state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}}}]}))
    assert info.waiting == ContainerWaiting("tensorflow", "ErrImagePull", "not found")
    assert info.waiting_reason == "ContainerCreating"
    assert info.condition_warning is None


def test_init_containers_count_only_while_no_container_has_a_status() -> None:
    init = [{"name": "fetch", "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s"}}}]
    alone = pod_info(pod({"phase": "Pending", "initContainerStatuses": init}))
    assert alone.waiting == ContainerWaiting("fetch", "CrashLoopBackOff", "back-off 10s")
    both = pod_info(pod({"phase": "Pending", "initContainerStatuses": init, "containerStatuses": [
        {"name": "tensorflow", "state": {"waiting": {"reason": "PodInitializing"}}}]}))
    assert both.waiting is None


def test_the_latest_condition_that_is_not_true_is_the_warning_of_a_pod_without_container_statuses() -> None:
    conditions = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/6 nodes are available",
         "lastTransitionTime": "2026-12-01T10:00:05Z"},
        {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": "2026-12-01T10:00:01Z"}]
    assert pod_info(pod({"phase": "Pending", "conditions": conditions})).condition_warning == (
        "Unschedulable", "0/6 nodes are available")
    conditions[1]["lastTransitionTime"] = "2026-12-01T10:00:09Z"
    assert pod_info(pod({"phase": "Pending", "conditions": conditions})).condition_warning is None
    started = pod({"phase": "Pending", "conditions": conditions[:1],
                   "containerStatuses": [{"name": "tensorflow", "state": {"running": {}}}]})
    assert pod_info(started).condition_warning is None


def test_pods_of_one_template_share_one_copy_of_their_tolerations_and_resources() -> None:
    """An idle triggerer holds a pod per job; the template's placement values are kept once."""
    def pod(node: str) -> dict[str, Any]:
        return {"metadata": {"name": f"p-{node}"},
                "spec": {"nodeName": node, "tolerations": [{"key": "k", "operator": "Exists"}],
                         "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}

    first, second = pod_info(pod("a")), pod_info(pod("b"))
    assert first.spec["tolerations"] is second.spec["tolerations"]
    assert first.spec["containers"] is second.spec["containers"] == [{"resources": {"requests": {"cpu": "1"}}}]
    assert (first.node, second.node) == ("a", "b")


def test_a_pod_whose_placement_differs_from_the_last_one_keeps_its_own_values() -> None:
    def pod(node: str, key: str) -> dict[str, Any]:
        return {"metadata": {"name": f"p-{node}"},
                "spec": {"nodeName": node, "tolerations": [{"key": key, "operator": "Exists"}]}}

    first, other, again = pod_info(pod("a", "k")), pod_info(pod("b", "other")), pod_info(pod("c", "k"))
    assert other.spec["tolerations"] == [{"key": "other", "operator": "Exists"}]
    assert again.spec["tolerations"] is first.spec["tolerations"]


def _init_failed_pod(init_spec: list[dict[str, Any]], init_statuses: list[dict[str, Any]]) -> dict[str, Any]:
    """A pod as the kubelet leaves it when an init container fails under restartPolicy Never."""
    return {"metadata": {"name": "p", "uid": "u"},
            "spec": {"restartPolicy": "Never", "initContainers": init_spec, "containers": [{"name": "main"}]},
            "status": {"phase": "Failed", "initContainerStatuses": init_statuses, "containerStatuses": [
                {"name": "main", "state": {"waiting": {"reason": "PodInitializing"}}}]}}


def _ended(name: str, code: int, reason: str = "Error") -> dict[str, Any]:
    return {"name": name, "state": {"terminated": {"exitCode": code, "reason": reason,
                                                   "finishedAt": "2026-12-01T10:00:05Z"}}}


def test_a_failed_init_container_is_how_the_pod_ended_and_reads_as_kubectl_shows_it() -> None:
    info = pod_info(_init_failed_pod([{"name": "fetch"}, {"name": "check"}],
                                     [_ended("fetch", 0, "Completed"), _ended("check", 3)]))
    assert info.exits == ()
    assert [(e.container, e.exit_code) for e in info.init_exits] == [("check", 3)]
    ended = info.final_exit()
    assert ended is not None and (ended.container, ended.exit_code, ended.reason) == ("check", 3, "Init:Error")
    assert [e.exit_code for e in info.all_exits] == [3]


def test_an_init_container_without_a_reason_reads_as_its_exit_code() -> None:
    info = pod_info(_init_failed_pod([{"name": "check"}], [_ended("check", 2, "")]))
    ended = info.final_exit()
    assert ended is not None and ended.reason == "Init:ExitCode:2"


def test_a_sidecar_ended_by_the_kubelet_is_not_a_failed_init_container() -> None:
    pod = _init_failed_pod([{"name": "proxy", "restartPolicy": "Always"}], [_ended("proxy", 143)])
    pod["status"]["containerStatuses"] = [_ended("main", 1)]
    info = pod_info(pod)
    assert info.init_exits == ()
    ended = info.final_exit()
    assert ended is not None and (ended.container, ended.reason) == ("main", "Error")


def test_a_main_container_exit_comes_before_a_failed_init_container() -> None:
    pod = _init_failed_pod([{"name": "check"}], [_ended("check", 5)])
    pod["status"]["containerStatuses"] = [_ended("main", 7)]
    info = pod_info(pod)
    ended = info.final_exit()
    assert ended is not None and (ended.container, ended.exit_code) == ("main", 7)
    assert [e.exit_code for e in info.all_exits] == [7, 5]


def test_an_evicted_pod_keeps_its_eviction_as_the_reason_even_when_an_init_container_was_killed() -> None:
    pod = _init_failed_pod([{"name": "check"}], [_ended("check", 137)])
    pod["status"].update(reason="Evicted", message="The node was low on resource: memory.")
    info = pod_info(pod)
    assert info.init_exits == () and info.final_exit() is None
    assert (info.waiting_reason, info.pending_message) == ("Evicted", "The node was low on resource: memory.")


def test_an_init_container_that_cannot_pull_its_image_is_seen_behind_the_waiting_containers() -> None:
    pod = _init_failed_pod([{"name": "check"}], [
        {"name": "check", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling"}}}])
    pod["status"]["phase"] = "Pending"
    info = pod_info(pod)
    assert (info.waiting_reason, info.init_waiting_reason) == ("PodInitializing", "ImagePullBackOff")
