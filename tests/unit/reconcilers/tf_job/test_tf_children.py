"""Section C: child pods and services: naming, labels, ownership (tfjob.md §2.3, §2.4, §2.6)."""

from __future__ import annotations

from typing import Any

import pytest
from support.tf_builders import UID, TFCluster, container, make_pod, make_record, make_spec, replica

from airflow_broadcast.reconcilers.plan import JobEvent
from airflow_broadcast.reconcilers.tf_job.children import build_pod, build_service
from airflow_broadcast.reconcilers.tf_job.reconciler import reconcile_tf_job
from airflow_broadcast.specs.tf_job.spec import ReplicaSpec, TFJobSpec

ROLE = "training.kubeflow.org/job-role"


def first_pass(spec: TFJobSpec) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], tuple[JobEvent, ...]]:
    plan = reconcile_tf_job(spec, make_record(spec), [], [], 1.0e9)
    pods = {p["metadata"]["name"]: p for p in plan.create_pods}
    services = {s["metadata"]["name"]: s for s in plan.create_services}
    return pods, services, plan.events


def test_C1_children_are_named_job_type_index() -> None:
    pods, services, _ = first_pass(make_spec(replicas={"Chief": 1, "PS": 2, "Worker": 3, "Evaluator": 1}))
    expected = ["mnist-chief-0", "mnist-evaluator-0", "mnist-ps-0", "mnist-ps-1", "mnist-worker-0",
                "mnist-worker-1", "mnist-worker-2"]
    assert list(pods) == expected
    assert list(services) == expected


def test_C2_controller_labels_on_pods_and_services() -> None:
    pods, services, _ = first_pass(make_spec(replicas={"PS": 2, "Worker": 1}))
    expected = {"training.kubeflow.org/operator-name": "tfjob-controller", "training.kubeflow.org/job-name": "mnist",
                "training.kubeflow.org/replica-type": "ps", "training.kubeflow.org/replica-index": "1"}
    assert expected.items() <= pods["mnist-ps-1"]["metadata"]["labels"].items()
    assert expected.items() <= services["mnist-ps-1"]["metadata"]["labels"].items()


def test_C3_job_role_master_goes_to_chief_when_present() -> None:
    pods, services, _ = first_pass(make_spec(replicas={"Chief": 1, "Worker": 2}))
    assert pods["mnist-chief-0"]["metadata"]["labels"][ROLE] == "master"
    assert ROLE not in pods["mnist-worker-0"]["metadata"]["labels"]
    assert all(ROLE not in s["metadata"]["labels"] for s in services.values())


def test_C3_job_role_master_goes_to_worker_zero_without_chief() -> None:
    pods, _, _ = first_pass(make_spec(replicas={"PS": 1, "Worker": 2}))
    assert pods["mnist-worker-0"]["metadata"]["labels"][ROLE] == "master"
    assert ROLE not in pods["mnist-worker-1"]["metadata"]["labels"]
    assert ROLE not in pods["mnist-ps-0"]["metadata"]["labels"]
    pods, _, _ = first_pass(make_spec(replicas={"Master": 1, "Worker": 1}))
    assert pods["mnist-master-0"]["metadata"]["labels"][ROLE] == "master"


def test_C4_template_metadata_is_copied_and_controller_labels_win() -> None:
    spec = make_spec(replicas={"Worker": {"replicas": 1, "template": {
        "metadata": {"labels": {"team": "ml", "training.kubeflow.org/job-name": "spoof"},
                     "annotations": {"sidecar.istio.io/inject": "false"}, "finalizers": ["example.com/keep"]},
        "spec": {"containers": [container()]}}}})
    pod = first_pass(spec)[0]["mnist-worker-0"]
    assert pod["metadata"]["labels"]["team"] == "ml"
    assert pod["metadata"]["labels"]["training.kubeflow.org/job-name"] == "mnist"
    assert pod["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
    assert pod["metadata"]["finalizers"] == ["example.com/keep"]


def test_C5_children_are_owned_by_the_job_record_and_carry_its_uid() -> None:
    spec = make_spec(replicas={"PS": 1, "Worker": 1})
    record = make_record(spec)
    pods, services, _ = first_pass(spec)
    for child in [*pods.values(), *services.values()]:
        assert child["metadata"]["ownerReferences"] == [dict(record.owner_reference)]
        assert child["metadata"]["labels"]["airflow-broadcast.io/job-uid"] == UID
        assert child["metadata"]["namespace"] == "kubeflow"


def test_C6_pods_owned_by_something_else_are_ignored() -> None:
    spec = make_spec(replicas={"Worker": 1})
    stranger = make_pod("mnist", "Worker", 0, "Failed", owner_uid="someone-else")
    plan = reconcile_tf_job(spec, make_record(spec), [stranger], [], 1.0e9)
    assert [p["metadata"]["name"] for p in plan.create_pods] == ["mnist-worker-0"]
    assert plan.deletes == ()
    assert plan.status is not None and "Worker" in plan.status["replicaStatuses"]
    assert plan.status["replicaStatuses"]["Worker"] == {}


def test_C7_services_are_headless_with_the_tensorflow_ports() -> None:
    tf = container(ports=[{"name": "grpc", "containerPort": 5000}])
    spec = make_spec(replicas={"Worker": replica(1, containers=[container("side", ports=[
        {"name": "http", "containerPort": 80}]), tf])})
    service = first_pass(spec)[1]["mnist-worker-0"]
    assert service["spec"] == {
        "clusterIP": "None",
        "selector": {"training.kubeflow.org/operator-name": "tfjob-controller",
                     "training.kubeflow.org/job-name": "mnist", "training.kubeflow.org/replica-type": "worker",
                     "training.kubeflow.org/replica-index": "0"},
        "ports": [{"name": "grpc", "port": 5000}, {"name": "tfjob-port", "port": 2222}],
    }


def _undefaulted(containers: list[dict[str, Any]]) -> TFJobSpec:
    template = {"spec": {"containers": containers}}
    return TFJobSpec("mnist", "kubeflow", replica_specs={"Worker": ReplicaSpec(1, template, "Never")})


def test_C8_tensorflow_container_without_ports_gives_a_portless_service() -> None:
    spec = _undefaulted([container()])
    service = build_service(spec, make_record(spec), "Worker", 0)
    assert "ports" not in service["spec"] and service["spec"]["clusterIP"] == "None"


def test_C8_no_tensorflow_container_fails_service_creation() -> None:
    spec = _undefaulted([container("main")])
    with pytest.raises(ValueError, match="failed to find the port"):
        build_service(spec, make_record(spec), "Worker", 0)
    plan = reconcile_tf_job(spec, make_record(spec), [], [], 1.0e9)
    assert plan.create_services == ()
    assert JobEvent("Warning", "FailedCreateService", "Error creating: failed to find the port") in plan.events


@pytest.mark.parametrize(("policy", "pod_policy"), [
    ("Never", "Never"), ("OnFailure", "OnFailure"), ("Always", "Always"), ("ExitCode", "Never")])
def test_C9_pod_restart_policy_follows_the_replica_policy(policy: str, pod_policy: str) -> None:
    pod = first_pass(make_spec(replicas={"Worker": replica(1, policy)}))[0]["mnist-worker-0"]
    assert pod["spec"]["restartPolicy"] == pod_policy


def test_C10_template_restart_policy_is_overridden_with_a_warning() -> None:
    spec = make_spec(replicas={"Worker": replica(2, "OnFailure", restartPolicy="Always")})
    pods, _, events = first_pass(spec)
    assert all(p["spec"]["restartPolicy"] == "OnFailure" for p in pods.values())
    warning = JobEvent("Warning", "SetPodTemplateRestartPolicy",
                       "Restart policy in pod template will be overwritten by restart policy in replica spec")
    assert events.count(warning) == 1
    assert warning not in first_pass(make_spec(replicas={"Worker": 2}))[2]


def test_C11_repeated_creates_use_the_same_names() -> None:
    spec = make_spec(replicas={"PS": 1, "Worker": 2})
    first = reconcile_tf_job(spec, make_record(spec), [], [], 1.0e9)
    again = reconcile_tf_job(spec, make_record(spec), [], [], 1.0e9 + 5)
    assert first.create_pods == again.create_pods
    assert first.create_services == again.create_services
    assert build_pod(spec, make_record(spec), "Worker", 1) == first.create_pods[2]


def test_C12_the_pass_plans_each_child_and_leaves_its_event_to_the_executor() -> None:
    """`SuccessfulCreatePod` / `SuccessfulCreateService` (or the Failed* variants) are recorded by the
    executor from each create's outcome; the plan holds only what to create."""
    plan = TFCluster(make_spec(replicas={"Worker": 2})).step()
    names = ["mnist-worker-0", "mnist-worker-1"]
    assert [p["metadata"]["name"] for p in plan.create_pods] == names
    assert [s["metadata"]["name"] for s in plan.create_services] == names
    assert not [e for e in plan.events if e.reason.startswith(("SuccessfulCreate", "FailedCreate"))]
