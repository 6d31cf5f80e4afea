"""Section D: TF_CONFIG, byte for byte as training-operator v1.9 writes it (tfjob.md §2.5)."""

from __future__ import annotations

import json

import pytest
from support.tf_builders import container, env_value, make_record, make_spec, replica

from airflow_broadcast.reconcilers.tf_job.children import build_pod
from airflow_broadcast.reconcilers.tf_job.cluster_config import is_distributed, tf_config_json
from airflow_broadcast.reconcilers.tf_job.reconciler import TFJobOptions, reconcile_tf_job
from airflow_broadcast.specs.field_errors import InvalidSpecError

# Copied from tfjob.md §2.5.
DENSE_MNIST_WORKER_1 = (
    '{"cluster":{"chief":["mnist-chief-0.kubeflow.svc:2222"],"evaluator":["mnist-evaluator-0.kubeflow.svc:2222"],'
    '"ps":["mnist-ps-0.kubeflow.svc:2222","mnist-ps-1.kubeflow.svc:2222"],"worker":["mnist-worker-0.kubeflow.svc:2222",'
    '"mnist-worker-1.kubeflow.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"}'
)
DENSE_DOMAIN_WORKER_0 = (
    '{"cluster":{"ps":["test-tfjob-ps-0.ns2.svc.tf.training.org:2222"],"worker":["test-tfjob-worker-0.ns2.svc.'
    'tf.training.org:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}'
)
MNIST = {"Chief": 1, "Evaluator": 1, "PS": 2, "Worker": 2}


def test_D1_single_replica_job_gets_no_tf_config() -> None:
    spec = make_spec(replicas={"Worker": 1})
    assert not is_distributed(spec)
    assert tf_config_json(spec, "Worker", 0) is None
    assert env_value(build_pod(spec, make_record(spec), "Worker", 0)) is None


def test_D1_unknown_types_do_not_make_a_job_distributed() -> None:
    spec = make_spec(replicas={"Worker": 1, "Custom": 3}, strict=False)
    assert not is_distributed(spec)


def test_D2_chief_and_one_worker_is_distributed() -> None:
    spec = make_spec(replicas={"Chief": 1, "Worker": 1})
    assert is_distributed(spec)
    assert json.loads(env_value(build_pod(spec, make_record(spec), "Chief", 0)) or "")["task"] == {
        "type": "chief", "index": 0}


def test_D3_one_ps_and_no_workers_is_not_distributed() -> None:
    assert not is_distributed(make_spec(replicas={"PS": 1}))
    assert not is_distributed(make_spec(replicas={"PS": 1, "Worker": 0}))


def test_D4_dense_tf_config_is_byte_identical_to_upstream() -> None:
    assert tf_config_json(make_spec(replicas=MNIST), "Worker", 1) == DENSE_MNIST_WORKER_1


def test_D5_cluster_domain_is_appended_to_hosts() -> None:
    spec = make_spec("test-tfjob", "ns2", {"Worker": 1, "PS": 1})
    assert tf_config_json(spec, "Worker", 0, "tf.training.org") == DENSE_DOMAIN_WORKER_0
    plan = reconcile_tf_job(spec, make_record(spec), [], [], 1.0e9, TFJobOptions(cluster_domain="tf.training.org"))
    worker = next(p for p in plan.create_pods if p["metadata"]["name"] == "test-tfjob-worker-0")
    assert env_value(worker) == DENSE_DOMAIN_WORKER_0


def test_D6_port_comes_from_each_types_tfjob_port() -> None:
    ps = replica(1, containers=[container(ports=[{"name": "tfjob-port", "containerPort": 3333}])])
    spec = make_spec(replicas={"PS": ps, "Worker": 1})
    cluster = json.loads(tf_config_json(spec, "Worker", 0) or "")["cluster"]
    assert cluster == {"ps": ["mnist-ps-0.kubeflow.svc:3333"], "worker": ["mnist-worker-0.kubeflow.svc:2222"]}


def test_D7_evaluator_is_in_the_dense_cluster_unless_excluded() -> None:
    spec = make_spec(replicas=MNIST)
    assert "evaluator" in json.loads(tf_config_json(spec, "Worker", 0) or "")["cluster"]
    excluded = json.loads(tf_config_json(spec, "Worker", 0, exclude_evaluator=True) or "")
    assert sorted(excluded["cluster"]) == ["chief", "ps", "worker"]
    plan = reconcile_tf_job(spec, make_record(spec), [], [], 1.0e9, TFJobOptions(exclude_evaluator_from_cluster=True))
    assert "evaluator" not in (env_value(plan.create_pods[0]) or "")


def test_D8_task_type_is_lowercase_and_index_an_integer() -> None:
    config = json.loads(tf_config_json(make_spec(replicas=MNIST), "PS", 1) or "")
    assert config["task"] == {"type": "ps", "index": 1}
    assert list(config) == ["cluster", "task", "environment"]


def test_D9_tf_config_is_appended_to_the_tensorflow_container_only() -> None:
    tf = container(env=[{"name": "A", "value": "1"}, {"name": "TF_CONFIG", "value": "user"}])
    spec = make_spec(replicas={"Worker": replica(2, containers=[container("side"), tf])})
    pod = build_pod(spec, make_record(spec), "Worker", 1)
    side, first_tf = pod["spec"]["containers"]
    assert "env" not in side
    assert [e["name"] for e in first_tf["env"]] == ["A", "TF_CONFIG", "TF_CONFIG"]
    assert first_tf["env"][-1]["value"] == tf_config_json(spec, "Worker", 1)
    assert spec.replica_specs["Worker"].template["spec"]["containers"][1]["env"][-1]["value"] == "user"


def test_D9_a_second_tensorflow_container_is_refused_before_anything_is_created() -> None:
    """Upstream injects into the first of two `tensorflow` containers; Kubernetes then refuses the pod."""
    with pytest.raises(InvalidSpecError, match=r"containers\[2\]\.name: Duplicate value: \"tensorflow\""):
        make_spec(replicas={"Worker": replica(2, containers=[container("side"), container(), container()])})


def test_D10_sparse_worker_sees_itself_and_all_ps() -> None:
    spec = make_spec(replicas={"PS": 2, "Worker": 3}, enableDynamicWorker=True)
    assert tf_config_json(spec, "Worker", 1) == (
        '{"cluster":{"worker":{"1":"mnist-worker-1.kubeflow.svc:2222"},'
        '"ps":["mnist-ps-0.kubeflow.svc:2222","mnist-ps-1.kubeflow.svc:2222"]},'
        '"task":{"type":"worker","index":1}}')


def test_D11_sparse_ps_sees_only_itself() -> None:
    spec = make_spec(replicas={"PS": 2, "Worker": 3}, enableDynamicWorker=True)
    assert tf_config_json(spec, "PS", 1) == (
        '{"cluster":{"worker":{},"ps":["mnist-ps-1.kubeflow.svc:2222"]},"task":{"type":"ps","index":1}}')


def test_D12_sparse_without_ps_writes_null_unless_asked_for_a_list() -> None:
    spec = make_spec(replicas={"Worker": 2}, enableDynamicWorker=True)
    assert tf_config_json(spec, "Worker", 0) == (
        '{"cluster":{"worker":{"0":"mnist-worker-0.kubeflow.svc:2222"},"ps":null},'
        '"task":{"type":"worker","index":0}}')
    assert '"ps":[]' in (tf_config_json(spec, "Worker", 0, sparse_ps_empty_list=True) or "")


def test_D13_sparse_chief_and_evaluator_get_an_empty_cluster() -> None:
    spec = make_spec(replicas={"Chief": 1, "Evaluator": 1, "PS": 1, "Worker": 2}, enableDynamicWorker=True)
    assert tf_config_json(spec, "Chief", 0) == '{"cluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}}'
    assert tf_config_json(spec, "Evaluator", 0) == (
        '{"cluster":{"worker":{},"ps":[]},"task":{"type":"evaluator","index":0}}')


def test_D14_master_appears_as_master() -> None:
    spec = make_spec(replicas={"Master": 1, "Worker": 1})
    assert tf_config_json(spec, "Master", 0) == (
        '{"cluster":{"master":["mnist-master-0.kubeflow.svc:2222"],"worker":["mnist-worker-0.kubeflow.svc:2222"]},'
        '"task":{"type":"master","index":0},"environment":"cloud"}')
