"""Unknown and duplicate fields are kept out and named in a warning, as the API server's default `Warn`
field validation does, through the warnings the operator logs; a TFJob upstream accepts but which never
runs a deciding pod is run as upstream runs it, with a warning."""

from __future__ import annotations

import logging
import sys

import pytest
import yaml
from support.tf_builders import NOW, TFCluster, manifest
from unit.specs.hostile.corpus import as_yaml, bcj_manifest, edited, tf_manifest

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.job_operator import ReconciledJobOperator
from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.specs import yaml_documents
from airflow_broadcast.specs.field_schema import MAX_UNKNOWN_FIELD_WARNINGS
from airflow_broadcast.specs.manifest_text import parse_manifest
from airflow_broadcast.specs.tf_job import parse_tf_job

BCJ_CONTAINER = ("spec", "template", "spec", "containers", 0)
TF_CONTAINER = ("spec", "tfReplicaSpecs", "Worker", "template", "spec", "containers", 0)


def bcj_warnings(source: object) -> tuple[str, ...]:
    return BroadcastJobOperator(task_id="w", manifest={}).job_kind().parse(
        source, namespace=None, default_namespace="default").warnings  # type: ignore[arg-type]


def tf_warnings(source: object) -> tuple[str, ...]:
    return TFJobOperator(task_id="w", manifest={}).job_kind().parse(
        source, namespace=None, default_namespace="default").warnings  # type: ignore[arg-type]


def test_unknown_fields_of_a_broadcast_job_are_named_and_dropped_from_the_stored_manifest() -> None:
    source = edited("BroadcastJob", (("spec", "paralelism"), 3), ((*BCJ_CONTAINER, "imagePullPolicyy"), "Always"),
                    (("spec", "template", "spec", "tolerations", 0, "tolerationSecond"), 5))
    job = BroadcastJobOperator(task_id="w", manifest={}).job_kind().parse(source, namespace=None,
                                                                          default_namespace="default")

    assert job.warnings == (
        'unknown field "spec.paralelism"',
        'unknown field "spec.template.spec.containers[0].imagePullPolicyy"',
        'unknown field "spec.template.spec.tolerations[0].tolerationSecond"',
    )
    assert "paralelism" not in job.manifest["spec"]


def test_unknown_fields_of_a_tf_job_are_named_with_the_replica_type() -> None:
    source = edited("TFJob", (("spec", "runPolicy", "backoffLimitt"), 3), ((*TF_CONTAINER, "evn"), []),
                    (("spec", "tfReplicaSpecs", "Worker", "replica"), 2))

    assert tf_warnings(source) == (
        'unknown field "spec.runPolicy.backoffLimitt"',
        'unknown field "spec.tfReplicaSpecs[Worker].replica"',
        'unknown field "spec.tfReplicaSpecs[Worker].template.spec.containers[0].evn"',
    )


def test_fields_of_objects_not_modelled_are_passed_through_without_warnings() -> None:
    affinity = {"nodeAffinity": {"anything": {"goes": [1, 2]}}}
    source = edited("BroadcastJob", (("spec", "template", "spec", "affinity"), affinity),
                    ((*BCJ_CONTAINER, "securityContext"), {"madeUp": True}))

    assert bcj_warnings(source) == ()


def test_a_flood_of_unknown_fields_gives_a_few_warnings_and_a_count() -> None:
    source = edited("BroadcastJob", *((("spec", f"extra{i:03}"), i) for i in range(500)))

    warnings = bcj_warnings(source)

    assert len(warnings) == MAX_UNKNOWN_FIELD_WARNINGS + 1
    assert warnings[-1] == f"… and {500 - MAX_UNKNOWN_FIELD_WARNINGS} more unknown fields"


def test_duplicate_keys_keep_the_last_value_and_are_named() -> None:
    text = as_yaml(tf_manifest()).replace("  backoffLimit: 3\n", "  backoffLimit: 3\n    backoffLimit: 5\n")
    text = text.replace("kind: TFJob\n", "kind: TFJob\nkind: TFJob\n")

    job = TFJobOperator(task_id="w", manifest={}).job_kind().parse(text, namespace=None, default_namespace="default")

    assert job.warnings == ('duplicate field "kind"', 'duplicate field "spec.runPolicy.backoffLimit"')
    assert job.manifest["spec"]["runPolicy"]["backoffLimit"] == 5


def test_duplicate_keys_in_json_text_are_named_too() -> None:
    warnings: list[str] = []
    parse_manifest('{"metadata": {"name": "a", "name": "b"}}', warnings=warnings)
    assert warnings == ['duplicate field "metadata.name"']


class Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def logged_by_parse(operator: ReconciledJobOperator, text: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the operator's parse() logs as warnings to its task log."""
    recorder = Recorder()
    task_log = logging.getLogger(f"hostile.{operator.task_id}")
    task_log.addHandler(recorder)
    monkeypatch.setattr(type(operator), "log", property(lambda _: task_log))
    try:
        operator.parse(text, None, "default")
    finally:
        task_log.removeHandler(recorder)
    return recorder.lines


def test_the_operator_logs_the_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    text = as_yaml(bcj_manifest()).replace("parallelism: 2\n", "parallelism: 2\n  parallelism: 3\n  colour: red\n")

    logged = logged_by_parse(BroadcastJobOperator(task_id="bcj", manifest=text), text, monkeypatch)

    assert logged == ['duplicate field "spec.parallelism"', 'unknown field "spec.colour"']


def test_a_tf_job_with_a_queue_name_still_reports_duplicate_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    text = as_yaml(tf_manifest()).replace("kind: TFJob\n", "kind: TFJob\nkind: TFJob\n")

    logged = logged_by_parse(TFJobOperator(task_id="tf", manifest=text, queue_name="team-a"), text, monkeypatch)

    assert logged == ['duplicate field "kind"']


def test_anchors_aliases_and_merge_keys_work_as_in_kubernetes() -> None:
    text = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: merged}
x-base: &base
  restartPolicy: OnFailure
  template:
    spec:
      containers: [{name: tensorflow, image: tf}]
spec:
  tfReplicaSpecs:
    PS: {<<: *base, replicas: 1}
    Worker:
      <<: *base
      replicas: 3
      restartPolicy: Never
"""
    spec = parse_tf_job(text)
    assert (spec.replica_specs["PS"].restart_policy, spec.replica_specs["Worker"].restart_policy) == (
        "OnFailure", "Never")
    assert spec.replica_specs["Worker"].replicas == 3
    assert spec.replica_specs["PS"].template == spec.replica_specs["Worker"].template


def test_whole_floats_become_integers_and_timestamps_stay_strings() -> None:
    document = parse_manifest("spec: {replicas: 3.0, ratio: 0.5, when: 2030-01-01, octal: 010, hex: 0x10}")
    assert document == {"spec": {"replicas": 3, "ratio": 0.5, "when": "2030-01-01", "octal": 8, "hex": 16}}
    assert type(document["spec"]["replicas"]) is int


def test_the_pure_python_parser_builds_the_same_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    text = as_yaml(tf_manifest()) + "x: &a {k: [1, 2.0, yes, ~, 2030-01-01, '3']}\ny: *a\nz: {<<: *a, m: 1}\n"
    with_c = parse_manifest(text)
    assert with_c["z"] == {"k": [1, 2, True, None, "2030-01-01", "3"], "m": 1}
    monkeypatch.setattr(yaml_documents, "EventLoader", yaml.SafeLoader)
    assert parse_manifest(text) == with_c


def test_yaml_is_parsed_by_the_c_parser() -> None:
    assert yaml_documents.EventLoader is yaml.CSafeLoader, sys.version


def test_zero_workers_succeed_at_once_without_a_pod_as_upstream() -> None:
    job = manifest(replicas={"Worker": 0})
    assert tf_warnings(job) == ("spec.tfReplicaSpecs[Worker].replicas is 0: like training-operator, "
                                "the job succeeds at once without waiting for any pod",)
    cluster = TFCluster(parse_tf_job(job))
    plan = cluster.reconcile()
    cluster.apply(plan)

    assert plan.create_pods == () and plan.finished
    assert [c["type"] for c in cluster.status["conditions"] if c["status"] == "True"] == ["Created", "Succeeded"]


def test_empty_replica_specs_never_finish_but_the_deadline_still_fails_them_as_upstream() -> None:
    job = manifest(replicas={}, run_policy={"activeDeadlineSeconds": 10})
    assert tf_warnings(job) == ("spec.tfReplicaSpecs has no Chief, Master or Worker: like training-operator, the "
                                "job never succeeds (it ends only by failing, by activeDeadlineSeconds, or when "
                                "deleted)",)
    cluster = TFCluster(parse_tf_job(job))
    for now in (NOW, NOW + 5):
        plan = cluster.reconcile(now)
        cluster.apply(plan)
        assert plan.create_pods == () and not plan.finished
    plan = cluster.reconcile(NOW + 10)
    cluster.apply(plan)

    assert plan.finished
    assert [c["type"] for c in cluster.status["conditions"] if c["status"] == "True"] == ["Created", "Failed"]
