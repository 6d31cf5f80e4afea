"""SDK-equivalent features of the Airflow side (checklist N): inputs, conditions, logs, errors, kill."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from airflow_broadcast.cluster.job_records import new_record
from airflow_broadcast.operators.job_runtime import JobFailedError, JobTimeoutError, conclude
from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.reconcilers.tf_job.kind import TFJobKind, TFJobSummary
from airflow_broadcast.specs.field_errors import InvalidSpecError
from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger, JobTriggerArgs

MANIFEST = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: mnist, namespace: from-manifest, labels: {team: ml}, annotations: {note: x}}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: tensorflow, image: tf:2}]
"""


@pytest.mark.parametrize("as_dict", [False, True])
def test_N1_a_full_tfjob_as_yaml_or_dict_with_a_namespace_override(as_dict: bool) -> None:
    import yaml

    source: Any = yaml.safe_load(MANIFEST) if as_dict else MANIFEST
    job = TFJobOperator(task_id="t", manifest=source).parse(source, "override", "default")
    assert (job.name, job.namespace) == ("mnist", "override")
    assert job.manifest["metadata"]["namespace"] == "override"
    assert job.manifest["metadata"]["labels"] == {"team": "ml"}
    assert job.manifest["metadata"]["annotations"] == {"note": "x"}
    assert "replicas" in job.manifest["spec"]["tfReplicaSpecs"]["Worker"], "stored as written, not defaulted"


def _summary(conditions: list[dict[str, str]]) -> TFJobSummary:
    record = JobRecord(name="tfjob-mnist", namespace="ns", uid="u", owner_reference={}, job_name="mnist",
                       status={"conditions": conditions, "replicaStatuses": {"Worker": {"active": 1}}})
    return TFJobKind().summary(record)


@pytest.mark.parametrize(("conditions", "phase"), [
    ([], "Created"),
    ([{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}], "Running"),
    ([{"type": "Created", "status": "True"}, {"type": "Restarting", "status": "True"}], "Restarting"),
    ([{"type": "Running", "status": "False"}, {"type": "Succeeded", "status": "True"}], "Succeeded"),
    ([{"type": "Succeeded", "status": "True"}, {"type": "Failed", "status": "True"}], "Failed"),
    ([{"type": "Created", "status": "True"}, {"type": "Suspended", "status": "True"}], "Suspended"),
])
def test_N4_phase_and_conditions_in_the_result(conditions: list[dict[str, str]], phase: str) -> None:
    summary = _summary(conditions)
    assert summary["phase"] == phase
    assert summary["conditions"] == conditions
    assert summary["replicaStatuses"] == {"Worker": {"active": 1, "succeeded": 0, "failed": 0}}


class FailedTFJobApi:
    """The API a finishing task talks to: a failed TFJob record, pod logs, and the pods of `stop_active_children`."""

    def __init__(self, pods: list[dict[str, Any]] | None = None) -> None:
        status = {"conditions": [{"type": "Failed", "status": "True",
                                  "message": "TFJob ns/mnist has failed because 1 Worker replica(s) failed."}],
                  "failure": {"replicaType": "Worker", "index": 1, "pod": "mnist-worker-1", "exitCode": 1,
                              "reason": "Error", "message": ""}}
        self.record = new_record("TFJob", "mnist", "ns", {"kind": "TFJob"}, status, {})
        self.record["metadata"]["uid"] = "u"
        self.pods = pods or []
        self.log_requests: list[tuple[str, dict[str, Any]]] = []
        self.deleted: list[str] = []

    async def kube_client(self) -> FailedTFJobApi:
        return self

    async def get(self, path: str, **query: Any) -> dict[str, Any]:
        assert path.endswith("/configmaps/tfjob-mnist"), path
        return self.record

    async def request_text(self, method: str, path: str, *, query: dict[str, Any]) -> str:
        self.log_requests.append((path, query))
        return "step 9: loss=nan\nFloatingPointError"

    async def list_all(self, path: str, **query: Any) -> tuple[list[dict[str, Any]], str]:
        return self.pods, "1"

    async def delete(self, path: str, **kwargs: Any) -> dict[str, Any]:
        self.deleted.append(path.rsplit("/", 1)[-1])
        return {}


def test_N7_the_failing_pods_tensorflow_log_tail_is_in_the_task_log(monkeypatch: pytest.MonkeyPatch,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    api = FailedTFJobApi()
    monkeypatch.setattr(JobTriggerArgs, "hook", lambda self: api)
    target = JobTriggerArgs.from_kwargs({"kind": "TFJob", "namespace": "ns", "record_name": "tfjob-mnist", "uid": "u"})
    log = logging.getLogger("test.n7")

    with caplog.at_level(logging.ERROR, logger="test.n7"), pytest.raises(JobFailedError, match="Worker 1"):
        conclude(target, "finished", "", log, log_tail_lines=20)

    assert api.log_requests == [("/api/v1/namespaces/ns/pods/mnist-worker-1/log",
                                 {"tailLines": 20, "limitBytes": 16384, "container": "tensorflow"})]
    assert "last 20 log lines of failed pod mnist-worker-1" in caplog.text
    assert "step 9: loss=nan\nFloatingPointError" in caplog.text


def test_N9_errors_map_to_value_timeout_and_runtime_errors() -> None:
    assert issubclass(InvalidSpecError, ValueError)
    assert issubclass(JobTimeoutError, RuntimeError) and issubclass(JobFailedError, RuntimeError)
    with pytest.raises(InvalidSpecError, match=r"spec\.tfReplicaSpecs"):
        TFJobOperator(task_id="t", manifest={}).parse(
            {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "x"}, "spec": {}}, "ns", "ns")


def test_N10_failure_message_names_replica_pod_exit_code_and_reason() -> None:
    summary = _summary([{"type": "Failed", "status": "True",
                         "message": "TFJob ns/mnist has failed because 1 Worker replica(s) failed."}])
    summary["failure"] = {"replicaType": "Worker", "index": 1, "pod": "mnist-worker-1", "exitCode": 137,
                          "reason": "OOMKilled", "message": ""}
    message = TFJobKind().failure(summary)
    assert message == ("TFJob ns/mnist failed: TFJob ns/mnist has failed because 1 Worker replica(s) failed. "
                       "Failing replica: Worker 1 (pod mnist-worker-1, exit code 137, OOMKilled).")
    assert TFJobKind().failed_children(summary) == ["mnist-worker-1"]


async def test_N12_killing_the_task_deletes_the_running_pods_and_keeps_the_record(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Deviation: the TFJob record and the finished pods stay (result, TTL); only active pods are deleted."""
    def pod(name: str, phase: str, deleting: bool = False) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "tfjob-mnist", "uid": "u", "controller": True}]}
        if deleting:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return {"metadata": meta, "status": {"phase": phase}}

    api = FailedTFJobApi([pod("mnist-chief-0", "Running"), pod("mnist-worker-0", "Pending"),
                          pod("mnist-worker-1", "Failed"), pod("mnist-ps-0", "Succeeded"),
                          pod("mnist-worker-2", "Running", deleting=True)])
    monkeypatch.setattr(JobReconcileTrigger, "_hook", lambda self: api)
    trigger = JobReconcileTrigger(kind="TFJob", namespace="ns", record_name="tfjob-mnist", uid="u")

    await trigger.on_kill()

    assert sorted(api.deleted) == ["mnist-chief-0", "mnist-worker-0"]
    assert "tfjob-mnist" not in api.deleted


def test_N6_pods_are_selectable_by_job_role_type_and_index_evaluator_included() -> None:
    from support.tf_builders import make_record, make_spec

    from airflow_broadcast.reconcilers.tf_job.children import build_pod

    spec = make_spec(replicas={"Chief": 1, "Worker": 2, "Evaluator": 1})
    record = make_record(spec)
    labels = {(t, i): build_pod(spec, record, t, i)["metadata"]["labels"]
              for t, i in (("Chief", 0), ("Worker", 1), ("Evaluator", 0))}
    prefix = "training.kubeflow.org/"
    assert all(lbl[f"{prefix}job-name"] == "mnist" for lbl in labels.values())
    assert labels[("Chief", 0)][f"{prefix}job-role"] == "master"
    assert labels[("Evaluator", 0)][f"{prefix}replica-type"] == "evaluator"
    assert labels[("Worker", 1)][f"{prefix}replica-index"] == "1"
