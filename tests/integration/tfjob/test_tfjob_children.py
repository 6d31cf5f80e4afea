"""TFJob children on the real cluster: names, labels, ownership, headless Services with EndpointSlices, TF_CONFIG.

Checklist groups C (child objects) and D (TF_CONFIG) of the TFJob checklist (docs/conformance/tfjob.md).
The provider's job object is the record ConfigMap, so children are owned by it (not by a TFJob).
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client, config
from support.waits import wait_until
from tfjob_it_support import (
    INDEX_LABEL,
    JOB_NAME_LABEL,
    KIND,
    OPERATOR_LABEL,
    ROLE_LABEL,
    SIM,
    TYPE_LABEL,
    event_pairs,
    job_pods,
    job_services,
    replica,
    succeed,
    tf_config_of,
    tf_manifest,
)

from airflow_broadcast.cluster.job_records import record_name
from airflow_broadcast.reconcilers.tf_job.cluster_config import tf_config_json
from airflow_broadcast.specs.tf_job import parse_tf_job

pytestmark = pytest.mark.cluster


def four_types(name: str) -> dict[str, Any]:
    """1 chief, 1 evaluator, 1 PS, 2 workers; the worker uses a custom tfjob-port and a second port."""
    worker_containers = [
        {"name": "tensorflow", "image": "tf", "env": [{"name": "USER_VAR", "value": "1"}],
         "ports": [{"name": "metrics", "containerPort": 9090}, {"name": "tfjob-port", "containerPort": 3333}]},
        {"name": "sidecar", "image": "busybox"},
    ]
    return tf_manifest(name, {
        "Chief": replica(1, "OnFailure", labels={"team": "ml", TYPE_LABEL: "bogus"}, annotations={"note": "c"}),
        "Evaluator": replica(1),
        "PS": replica(1, "Always"),
        "Worker": replica(2, "ExitCode", containers=worker_containers),
    })


@pytest.fixture
def distributed(engine: Any, namespace: str, core_api: client.CoreV1Api) -> tuple[Any, dict[str, Any]]:
    """One reconcile pass of a 5-pod job whose pods run forever; returns (submission, manifest)."""
    manifest = four_types("mnist")
    submission = engine.submit(manifest)
    outcome = engine.drive(submission, KIND, single_pass=True)
    assert outcome.reason == "pending"
    wait_until(lambda: len(job_services(core_api, namespace, "mnist")) == 5
               and len(job_pods(core_api, namespace, "mnist")) == 5, what="5 pods and 5 services")
    return submission, manifest


EXPECTED = {
    "mnist-chief-0": ("chief", "0"), "mnist-evaluator-0": ("evaluator", "0"), "mnist-ps-0": ("ps", "0"),
    "mnist-worker-0": ("worker", "0"), "mnist-worker-1": ("worker", "1"),
}


def test_C1_C2_pod_and_service_names_and_labels(distributed: tuple[Any, dict[str, Any]], namespace: str,
                                                core_api: client.CoreV1Api) -> None:
    pods = job_pods(core_api, namespace, "mnist")
    services = job_services(core_api, namespace, "mnist")
    assert sorted(pods) == sorted(EXPECTED)
    assert sorted(services) == sorted(EXPECTED)
    for name, (kind, index) in EXPECTED.items():
        for obj in (pods[name], services[name]):
            labels = obj.metadata.labels
            assert labels[OPERATOR_LABEL] == "tfjob-controller"
            assert labels[JOB_NAME_LABEL] == "mnist"
            assert labels[TYPE_LABEL] == kind, "controller labels win over the template's (C4)"
            assert labels[INDEX_LABEL] == index


def test_C3_job_role_master_only_on_the_chief_pod(distributed: tuple[Any, dict[str, Any]], namespace: str,
                                                 core_api: client.CoreV1Api) -> None:
    pods = job_pods(core_api, namespace, "mnist")
    assert {n for n, p in pods.items() if p.metadata.labels.get(ROLE_LABEL) == "master"} == {"mnist-chief-0"}
    assert not any(ROLE_LABEL in s.metadata.labels for s in job_services(core_api, namespace, "mnist").values())


def test_C3_without_chief_worker_0_has_the_master_role(engine: Any, namespace: str,
                                                      core_api: client.CoreV1Api) -> None:
    engine.drive(engine.submit(tf_manifest("nochief", {"PS": replica(1), "Worker": replica(2)})), KIND,
                 single_pass=True)
    pods = job_pods(core_api, namespace, "nochief")
    assert sorted(pods) == ["nochief-ps-0", "nochief-worker-0", "nochief-worker-1"]
    assert {n for n, p in pods.items() if p.metadata.labels.get(ROLE_LABEL) == "master"} == {"nochief-worker-0"}


def test_C4_template_labels_and_annotations_are_copied(distributed: tuple[Any, dict[str, Any]], namespace: str,
                                                      core_api: client.CoreV1Api) -> None:
    chief = job_pods(core_api, namespace, "mnist")["mnist-chief-0"]
    assert chief.metadata.labels["team"] == "ml"
    assert chief.metadata.annotations["note"] == "c"


def test_C5_every_child_is_owned_by_the_job_record(distributed: tuple[Any, dict[str, Any]], namespace: str,
                                                  core_api: client.CoreV1Api) -> None:
    submission, _ = distributed
    expected = {"api_version": "v1", "kind": "ConfigMap", "name": record_name(KIND, "mnist"),
                "uid": submission.uid, "controller": True, "block_owner_deletion": True}
    children = [*job_pods(core_api, namespace, "mnist").values(), *job_services(core_api, namespace, "mnist").values()]
    assert len(children) == 10
    for child in children:
        refs = [r.to_dict() for r in child.metadata.owner_references]
        assert refs == [expected], child.metadata.name


def test_C7_headless_service_gets_an_endpointslice(distributed: tuple[Any, dict[str, Any]], namespace: str,
                                                  core_api: client.CoreV1Api, kubeconfig: str) -> None:
    services = job_services(core_api, namespace, "mnist")
    for name, (kind, index) in EXPECTED.items():
        spec = services[name].spec
        assert spec.cluster_ip == "None"
        assert spec.selector == {OPERATOR_LABEL: "tfjob-controller", JOB_NAME_LABEL: "mnist", TYPE_LABEL: kind,
                                 INDEX_LABEL: index}
    worker_ports = sorted((p.name, p.port) for p in services["mnist-worker-1"].spec.ports)
    assert worker_ports == [("metrics", 9090), ("tfjob-port", 3333)], "every port of the tensorflow container"
    assert [(p.name, p.port) for p in services["mnist-ps-0"].spec.ports] == [("tfjob-port", 2222)]

    discovery = client.DiscoveryV1Api(config.new_client_from_config(config_file=kubeconfig))

    def slice_with_endpoint(service: str) -> Any:
        slices = discovery.list_namespaced_endpoint_slice(
            namespace, label_selector=f"kubernetes.io/service-name={service}").items
        return next((s for s in slices if s.endpoints), None)

    for name in EXPECTED:
        found = wait_until(lambda name=name: slice_with_endpoint(name), timeout=60,
                           what=f"an EndpointSlice with an endpoint for {name}")
        assert found.metadata.labels.get("service.kubernetes.io/headless") == ""
        (endpoint,) = found.endpoints
        assert endpoint.target_ref.kind == "Pod" and endpoint.target_ref.name == name
        assert endpoint.addresses == [core_api.read_namespaced_pod(name, namespace).status.pod_ip]
    worker_slice = slice_with_endpoint("mnist-worker-1")
    assert sorted((p.name, p.port) for p in worker_slice.ports) == [("metrics", 9090), ("tfjob-port", 3333)]


def test_C9_pod_restart_policy_follows_the_replica_policy(distributed: tuple[Any, dict[str, Any]],
                                                         namespace: str, core_api: client.CoreV1Api) -> None:
    pods = job_pods(core_api, namespace, "mnist")
    assert {n: p.spec.restart_policy for n, p in pods.items()} == {
        "mnist-chief-0": "OnFailure", "mnist-evaluator-0": "Never", "mnist-ps-0": "Always",
        "mnist-worker-0": "Never", "mnist-worker-1": "Never"}  # ExitCode is enforced by the controller


def test_C12_create_events_name_every_child(distributed: tuple[Any, dict[str, Any]], engine: Any) -> None:
    events = wait_until(lambda: (e := event_pairs(engine, "mnist")) and len(e) >= 10 and e, timeout=30,
                        what="create events")
    for name in EXPECTED:
        assert ("SuccessfulCreatePod", f"Created pod: {name}") in events
        assert ("SuccessfulCreateService", f"Created service: {name}") in events


def test_D2_D4_D9_every_pod_carries_the_exact_tf_config(distributed: tuple[Any, dict[str, Any]], namespace: str,
                                                       core_api: client.CoreV1Api) -> None:
    _, manifest = distributed
    spec = parse_tf_job(manifest, namespace=namespace)
    pods = job_pods(core_api, namespace, "mnist")
    for name, (kind, index) in EXPECTED.items():
        canonical = {"chief": "Chief", "evaluator": "Evaluator", "ps": "PS", "worker": "Worker"}[kind]
        expected = tf_config_json(spec, canonical, int(index))
        assert tf_config_of(pods[name]) == [f"tensorflow={expected}"], name
    ns = namespace
    literal = (
        '{"cluster":{"chief":["mnist-chief-0.' + ns + '.svc:2222"],"evaluator":["mnist-evaluator-0.' + ns
        + '.svc:2222"],"ps":["mnist-ps-0.' + ns + '.svc:2222"],"worker":["mnist-worker-0.' + ns
        + '.svc:3333","mnist-worker-1.' + ns + '.svc:3333"]},"task":{"type":"worker","index":1},'
        '"environment":"cloud"}'
    )
    assert tf_config_of(pods["mnist-worker-1"]) == [f"tensorflow={literal}"], "D4/D6/D7 byte for byte"
    env = [e.name for e in pods["mnist-worker-1"].spec.containers[0].env]
    assert env == ["USER_VAR", "TF_CONFIG"], "appended after the user's env (D9)"
    assert pods["mnist-worker-1"].spec.containers[1].env is None, "only the tensorflow container (D9)"


def test_D1_single_replica_job_has_no_tf_config(engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    engine.drive(engine.submit(tf_manifest("solo", {"Worker": replica(1)})), KIND, single_pass=True)
    (pod,) = job_pods(core_api, namespace, "solo").values()
    assert tf_config_of(pod) == []
    assert tf_config_json(parse_tf_job(tf_manifest("solo", {"Worker": replica(1)}), namespace=namespace),
                          "Worker", 0) is None


def test_D3_a_single_ps_job_is_not_distributed(engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    outcome = engine.drive(engine.submit(tf_manifest("psonly", {"PS": replica(1)})), KIND, single_pass=True)
    pods = job_pods(core_api, namespace, "psonly")
    assert sorted(pods) == ["psonly-ps-0"]
    assert tf_config_of(pods["psonly-ps-0"]) == []
    assert outcome.reason == "pending", "a PS-only job never succeeds by itself (F21)"


def test_D5_cluster_domain_is_appended_to_every_host(engine: Any, namespace: str,
                                                     core_api: client.CoreV1Api) -> None:
    manifest = tf_manifest("dom", {"PS": replica(1), "Worker": replica(1, annotations=succeed("30s"))})
    engine.drive(engine.submit(manifest), KIND, single_pass=True, options={"cluster_domain": "tf.training.org"})
    pods = job_pods(core_api, namespace, "dom")
    expected = ('{"cluster":{"ps":["dom-ps-0.' + namespace + '.svc.tf.training.org:2222"],"worker":["dom-worker-0.'
                + namespace + '.svc.tf.training.org:2222"]},"task":{"type":"worker","index":0},'
                '"environment":"cloud"}')
    assert tf_config_of(pods["dom-worker-0"]) == [f"tensorflow={expected}"]
    assert pods["dom-worker-0"].metadata.annotations[f"{SIM}/after"] == "30s"


def test_C10_template_restart_policy_is_overridden_with_a_warning(engine: Any, namespace: str,
                                                                  core_api: client.CoreV1Api) -> None:
    manifest = tf_manifest("override", {"Worker": replica(2, "OnFailure", restartPolicy="Always")})
    engine.drive(engine.submit(manifest), KIND, single_pass=True)

    pods = job_pods(core_api, namespace, "override")
    assert {p.spec.restart_policy for p in pods.values()} == {"OnFailure"}
    events = wait_until(lambda: [e for e in engine.events(KIND, "override")
                                 if e.reason == "SetPodTemplateRestartPolicy"], timeout=30, what="warning event")
    assert events[0].type == "Warning"
    assert events[0].message == \
        "Restart policy in pod template will be overwritten by restart policy in replica spec"


def test_D14_master_type_appears_as_master(engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    manifest = tf_manifest("legacy", {"Master": replica(1), "Worker": replica(1)})
    engine.drive(engine.submit(manifest), KIND, single_pass=True)

    pods = job_pods(core_api, namespace, "legacy")
    expected = ('{"cluster":{"master":["legacy-master-0.' + namespace + '.svc:2222"],"worker":["legacy-worker-0.'
                + namespace + '.svc:2222"]},"task":{"type":"master","index":0},"environment":"cloud"}')
    assert tf_config_of(pods["legacy-master-0"]) == [f"tensorflow={expected}"]
    assert pods["legacy-master-0"].metadata.labels[ROLE_LABEL] == "master"
    assert ROLE_LABEL not in pods["legacy-worker-0"].metadata.labels


def test_D10_D11_D13_F13_dynamic_workers_get_a_sparse_tf_config_and_may_fail(
        engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    manifest = tf_manifest("sparse", {
        "Chief": replica(1, annotations=succeed("3s")),
        "PS": replica(1),
        "Worker": replica(2, annotations={f"{SIM}/result": "Failed", f"{SIM}/after": "500ms"}),
    }, enableDynamicWorker=True)
    outcome = engine.drive(engine.submit(manifest), KIND, timeout=60)

    assert outcome.reason == "finished"
    status = engine.status(KIND, "sparse")
    assert [c["type"] for c in status["conditions"] if c["status"] == "True"] == ["Created", "Succeeded"], \
        "failed workers do not fail a dynamic-worker job (F13)"
    assert status["replicaStatuses"]["Worker"] == {"failed": 2}
    pods = job_pods(core_api, namespace, "sparse")
    ps = f"sparse-ps-0.{namespace}.svc:2222"
    worker1 = f"sparse-worker-1.{namespace}.svc:2222"
    assert tf_config_of(pods["sparse-worker-1"]) == [
        'tensorflow={"cluster":{"worker":{"1":"' + worker1 + '"},"ps":["' + ps + '"]},'
        '"task":{"type":"worker","index":1}}']
    assert tf_config_of(pods["sparse-ps-0"]) == [
        'tensorflow={"cluster":{"worker":{},"ps":["' + ps + '"]},"task":{"type":"ps","index":0}}']
    assert tf_config_of(pods["sparse-chief-0"]) == [
        'tensorflow={"cluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}}']
