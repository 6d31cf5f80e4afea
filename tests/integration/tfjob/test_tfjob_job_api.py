"""get / list / update (merge patch) / delete (DeleteOptions) on the real cluster, as the Kubeflow SDK (checklist N3).

The async functions of `airflow_broadcast.cluster.job_api` run with a KubeClient built from the
test kubeconfig; the last test goes through the sync `JobClient` and a real Airflow connection.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client
from support.engine import Engine
from support.waits import wait_until
from tfjob_it_support import KIND, Background, event_pairs, is_true, job_pods, live_pods, replica, succeed, tf_manifest

from airflow_broadcast.cluster import job_api
from airflow_broadcast.cluster.api_errors import NotFound
from airflow_broadcast.cluster.job_records import record_name
from airflow_broadcast.specs.field_errors import InvalidSpecError

pytestmark = pytest.mark.cluster


def call(engine: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run one job_api coroutine function with a fresh client on the test kubeconfig."""
    return engine.run_async(lambda kube: fn(kube, *args, **kwargs))


def running_job(engine: Any, core_api: client.CoreV1Api, namespace: str, name: str,
                workers: int = 2) -> tuple[Any, Background]:
    """Submit a job whose pods run until deleted, drive it in the background, wait until it runs."""
    submission = engine.submit(tf_manifest(name, {"Worker": replica(workers)}))
    loop = Background(lambda: engine.drive(submission, KIND, timeout=150))
    wait_until(lambda: is_true(engine.status(KIND, name), "Running")
               and len(live_pods(core_api, namespace, name)) == workers, timeout=60, what=f"{name} running")
    return submission, loop


def record_version(engine: Any, name: str) -> str:
    record = engine.record(KIND, name)
    assert record is not None
    return str(record.metadata.resource_version)


@pytest.fixture
def other_namespace(core_api: client.CoreV1Api) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:10]}"
    core_api.create_namespace({"metadata": {"name": name, "labels": {"airflow-broadcast.io/test": "true"}}})
    yield name
    core_api.delete_namespace(name, propagation_policy="Background")


def test_N3_get_returns_the_upstream_object_shape_with_status(engine: Any, namespace: str) -> None:
    manifest = tf_manifest("shape", {"Worker": replica(1, annotations=succeed("30s"))},
                           run_policy={"backoffLimit": 2})
    manifest["metadata"].update(labels={"team": "ml"}, annotations={"note": "first"})
    submission = engine.submit(manifest)
    engine.drive(submission, KIND, single_pass=True)

    job = call(engine, job_api.get_job, KIND, namespace, "shape")

    record = engine.record(KIND, "shape")
    assert set(job) == {"apiVersion", "kind", "metadata", "spec", "status"}
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v1", "TFJob")
    assert job["metadata"] == {
        "name": "shape", "namespace": namespace, "labels": {"team": "ml"}, "annotations": {"note": "first"},
        "uid": submission.uid, "creationTimestamp": record.metadata.creation_timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "resourceVersion": record.metadata.resource_version,
    }
    assert job["spec"] == manifest["spec"], "the spec as written, not defaulted"
    assert job["status"] == engine.status(KIND, "shape")
    assert [c["type"] for c in job["status"]["conditions"]][:1] == ["Created"]


def test_N3_list_returns_only_this_kinds_jobs_in_the_namespace_sorted_by_name(
        engine: Any, namespace: str, other_namespace: str, core_api: client.CoreV1Api) -> None:
    for name in ("zeta", "alpha"):
        engine.submit(tf_manifest(name, {"Worker": replica(1)}))
    engine.submit({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "BroadcastJob", "metadata": {"name": "bcast"},
                   "spec": {"template": {"spec": {"restartPolicy": "Never",
                                                  "containers": [{"name": "c", "image": "busybox"}]}}}})
    core_api.create_namespaced_config_map(namespace, {"metadata": {"name": "tfjob-plain"}, "data": {"a": "b"}})
    Engine(engine.kubeconfig, other_namespace, core_api).submit(tf_manifest("elsewhere", {"Worker": replica(1)}))

    tf_jobs = call(engine, job_api.list_jobs, KIND, namespace)
    broadcast_jobs = call(engine, job_api.list_jobs, "BroadcastJob", namespace)

    assert [(j["kind"], j["metadata"]["name"], j["metadata"]["namespace"]) for j in tf_jobs] == [
        ("TFJob", "alpha", namespace), ("TFJob", "zeta", namespace)]
    assert [(j["apiVersion"], j["kind"], j["metadata"]["name"]) for j in broadcast_jobs] == [
        ("apps.kruise.io/v1beta1", "BroadcastJob", "bcast")], "stored in its defaulted v1beta1 form"
    assert call(engine, job_api.list_jobs, KIND, other_namespace)[0]["metadata"]["name"] == "elsewhere"
    with pytest.raises(ValueError, match="unknown job kind 'PyTorchJob'"):
        call(engine, job_api.list_jobs, "PyTorchJob", namespace)


def test_N3_update_merge_patch_suspends_a_running_job_and_null_deletes_a_key(
        engine: Any, namespace: str, core_api: client.CoreV1Api) -> None:
    name = "patched"
    _, loop = running_job(engine, core_api, namespace, name)
    before = call(engine, job_api.get_job, KIND, namespace, name)
    call(engine, job_api.update_job, KIND, namespace, name, {"metadata": {"annotations": {"note": "x", "keep": "y"}}})

    updated = call(engine, job_api.update_job, KIND, namespace, name, {
        "metadata": {"name": name, "annotations": {"note": None}},
        "spec": {"runPolicy": {"suspend": True}},
        "status": {"conditions": []},  # status is not part of the main resource: ignored, as by the API server
    })

    assert updated["metadata"]["annotations"] == {"keep": "y"}, "null deleted `note`, `keep` merged in"
    assert updated["spec"]["runPolicy"] == {"suspend": True}
    assert updated["spec"]["tfReplicaSpecs"] == before["spec"]["tfReplicaSpecs"], "untouched keys are kept"
    assert updated["metadata"]["uid"] == before["metadata"]["uid"]
    assert updated["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
    suspended = wait_until(lambda: (s := engine.status(KIND, name)) and is_true(s, "Suspended") and s,
                           timeout=60, what="the running loop suspends the job")
    wait_until(lambda: not job_pods(core_api, namespace, name), timeout=60, what="pods deleted on suspend")
    assert not is_true(suspended, "Running")
    assert call(engine, job_api.get_job, KIND, namespace, name)["status"]["conditions"][-1]["type"] == "Suspended"

    call(engine, job_api.delete_job, KIND, namespace, name, propagation_policy="Background")
    assert loop.result(60).reason == "gone", "deleting the job ends its reconcile loop"


def test_N3_update_and_delete_are_kind_generic_broadcast_job(engine: Any, namespace: str) -> None:
    bcj = "broadcast"
    engine.submit({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "BroadcastJob", "metadata": {"name": bcj},
                   "spec": {"template": {"spec": {"restartPolicy": "Never",
                                                  "containers": [{"name": "c", "image": "busybox"}]}}}})

    updated = call(engine, job_api.update_job, "BroadcastJob", namespace, bcj,
                   {"spec": {"paused": True, "parallelism": 2}})
    assert (updated["spec"]["paused"], updated["spec"]["parallelism"]) == (True, 2)
    with pytest.raises(InvalidSpecError, match=r"spec\.parallelism: Invalid value: -1"):
        call(engine, job_api.update_job, "BroadcastJob", namespace, bcj, {"spec": {"parallelism": -1}})
    assert call(engine, job_api.get_job, "BroadcastJob", namespace, bcj)["spec"]["parallelism"] == 2
    with pytest.raises(job_api.JobNotFound, match=f"TFJob {namespace}/{bcj} not found"):
        call(engine, job_api.get_job, KIND, namespace, bcj)

    call(engine, job_api.delete_job, "BroadcastJob", namespace, bcj)
    assert engine.record("BroadcastJob", bcj) is None
    assert engine.events("BroadcastJob", bcj) == [], "no deletion event for a BroadcastJob (OpenKruise records none)"


def test_N3_an_invalid_patch_names_the_field_paths_and_writes_nothing(engine: Any, namespace: str) -> None:
    manifest = tf_manifest("strict", {"Worker": replica(1)}, run_policy={"managedBy": "kubeflow.org/training-operator"})
    engine.submit(manifest)
    version = record_version(engine, "strict")

    with pytest.raises(InvalidSpecError) as invalid:
        call(engine, job_api.update_job, KIND, namespace, "strict", {"spec": {
            "runPolicy": {"cleanPodPolicy": "Sometimes", "managedBy": "kueue.x-k8s.io/multikueue"},
            "tfReplicaSpecs": {"Worker": {"replicas": -1}}}})
    message = str(invalid.value)
    assert 'spec.runPolicy.cleanPodPolicy: Unsupported value: "Sometimes"' in message
    assert "spec.tfReplicaSpecs[Worker].replicas: Invalid value: -1" in message
    assert "spec.runPolicy.managedBy: Invalid value" in message and "field is immutable" in message
    with pytest.raises(InvalidSpecError, match=r"spec.tfReplicaSpecs: Required value"):
        call(engine, job_api.update_job, KIND, namespace, "strict", {"spec": {"tfReplicaSpecs": None}})
    with pytest.raises(ValueError, match=r"metadata.name: cannot be changed"):
        call(engine, job_api.update_job, KIND, namespace, "strict", {"metadata": {"name": "renamed"}})
    with pytest.raises(ValueError, match=r"metadata.namespace: cannot be changed"):
        call(engine, job_api.update_job, KIND, namespace, "strict", {"metadata": {"namespace": "elsewhere"}})

    assert record_version(engine, "strict") == version, "nothing was written"
    assert json.loads(engine.record(KIND, "strict").data["manifest"]) == manifest


def test_N3_update_with_a_stale_resource_version_is_a_conflict(engine: Any, namespace: str) -> None:
    engine.submit(tf_manifest("racy", {"Worker": replica(1)}))
    job = call(engine, job_api.get_job, KIND, namespace, "racy")
    call(engine, job_api.update_job, KIND, namespace, "racy", {"metadata": {"labels": {"step": "1"}}})

    job["metadata"]["labels"] = {"step": "2"}  # the whole object read earlier, sent back as the patch
    with pytest.raises(job_api.JobConflict, match=r"precondition failed: metadata\.resourceVersion"):
        call(engine, job_api.update_job, KIND, namespace, "racy", job)

    fresh = call(engine, job_api.get_job, KIND, namespace, "racy")
    fresh["metadata"]["labels"] = {"step": "2"}
    assert call(engine, job_api.update_job, KIND, namespace, "racy", fresh)["metadata"]["labels"] == {"step": "2"}


def test_N3_delete_foreground_removes_the_children_before_the_job(engine: Any, namespace: str,
                                                                   core_api: client.CoreV1Api) -> None:
    name = "fg"
    _, loop = running_job(engine, core_api, namespace, name)

    deleted = call(engine, job_api.delete_job, KIND, namespace, name, propagation_policy="Foreground")

    assert deleted["metadata"]["name"] == name and not deleted["metadata"].get("deletionTimestamp")
    try:
        during = call(engine, job_api.get_job, KIND, namespace, name)
        assert during["metadata"]["deletionTimestamp"], "kept with a deletionTimestamp while children go"
    except job_api.JobNotFound:
        pass  # the children were already gone
    wait_until(lambda: engine.record(KIND, name) is None, timeout=60, what="record deleted")
    assert job_pods(core_api, namespace, name) == {}, "Foreground: no child outlives the job"
    assert loop.result(60).reason == "gone"
    assert ("SuccessfulDeleteJob", f"Deleted job: {name}") in event_pairs(engine, name)


def test_N3_delete_background_with_dry_run_and_grace_period(engine: Any, namespace: str,
                                                            core_api: client.CoreV1Api) -> None:
    name = "bg"
    _, loop = running_job(engine, core_api, namespace, name, workers=1)

    call(engine, job_api.delete_job, KIND, namespace, name, propagation_policy="Background", dry_run=True)
    assert engine.record(KIND, name) is not None, "a dry run deletes nothing"
    assert ("SuccessfulDeleteJob", f"Deleted job: {name}") not in event_pairs(engine, name)

    call(engine, job_api.delete_job, KIND, namespace, name, propagation_policy="Background", grace_period_seconds=0)
    assert engine.record(KIND, name) is None, "Background: the job is gone at once"
    assert loop.result(60).reason == "gone"
    wait_until(lambda: not job_pods(core_api, namespace, name), timeout=60, what="children garbage-collected")


def test_N3_delete_with_a_mismatched_uid_precondition_is_refused(engine: Any, namespace: str) -> None:
    submission = engine.submit(tf_manifest("guarded", {"Worker": replica(1)}))
    wrong = str(uuid.uuid4())

    with pytest.raises(job_api.JobConflict) as refused:
        call(engine, job_api.delete_job, KIND, namespace, "guarded", preconditions_uid=wrong)
    message = str(refused.value)
    assert message.startswith(f"TFJob {namespace}/guarded: not deleted, a precondition failed: ")
    assert wrong in message and submission.uid in message
    assert engine.record(KIND, "guarded") is not None, "nothing deleted"
    with pytest.raises(ValueError, match="propagation_policy must be one of"):
        call(engine, job_api.delete_job, KIND, namespace, "guarded", propagation_policy="foreground")

    call(engine, job_api.delete_job, KIND, namespace, "guarded", preconditions_uid=submission.uid)
    assert engine.record(KIND, "guarded") is None


def test_N3_a_missing_job_is_not_found_for_every_verb(engine: Any, namespace: str,
                                                      core_api: client.CoreV1Api) -> None:
    core_api.create_namespaced_config_map(namespace, {"metadata": {"name": record_name(KIND, "impostor")}})
    calls = [(job_api.get_job, ()), (job_api.update_job, ({"spec": {}},)), (job_api.delete_job, ())]
    for name in ("ghost", "impostor"):  # no ConfigMap; a ConfigMap with the record's name that is no job record
        for fn, extra in calls:
            with pytest.raises(job_api.JobNotFound) as missing:
                call(engine, fn, KIND, namespace, name, *extra)
            assert isinstance(missing.value, NotFound) and missing.value.status == 404
            assert str(missing.value).startswith(f"TFJob {namespace}/{name} not found")
    assert core_api.read_namespaced_config_map(record_name(KIND, "impostor"), namespace) is not None


def test_N3_job_client_through_the_airflow_connection(engine: Any, namespace: str, kubeconfig: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes.client import V1DeleteOptions, V1Preconditions

    from airflow_broadcast.hooks.job_client import JobClient

    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(
        {"conn_type": "kubernetes", "extra": {"kube_config_path": kubeconfig, "namespace": namespace}}))
    submission = engine.submit(tf_manifest("facade", {"Worker": replica(1)}, run_policy={"suspend": True}))
    engine.drive(submission, KIND, single_pass=True)
    jobs = JobClient("TFJob")

    assert jobs.namespace == namespace, "the connection's namespace"
    assert [j["metadata"]["name"] for j in jobs.list_jobs()] == ["facade"]
    job = jobs.get_job("facade")
    assert job["metadata"]["uid"] == submission.uid
    assert [c["type"] for c in jobs.get_job_conditions("facade")] == ["Created", "Suspended"]
    assert jobs.is_job_created("facade") and jobs.is_job_created(job)
    assert not (jobs.is_job_running("facade") or jobs.is_job_restarting(job) or jobs.is_job_succeeded(job)
                or jobs.is_job_failed(job))
    assert jobs.update_job("facade", {"metadata": {"labels": {"stage": "eval"}}})["metadata"]["labels"] == \
        {"stage": "eval"}
    with pytest.raises(job_api.JobConflict):
        jobs.delete_job("facade", delete_options=V1DeleteOptions(preconditions=V1Preconditions(uid="other")))
    jobs.delete_job("facade", delete_options={"propagationPolicy": "Background",
                                              "preconditions": {"uid": submission.uid}})
    assert engine.record(KIND, "facade") is None
    with pytest.raises(job_api.JobNotFound):
        jobs.get_job("facade")
    assert JobClient("BroadcastJob", namespace="default").namespace == "default"
    with pytest.raises(ValueError, match="unknown job kind"):
        JobClient("MPIJob")



@pytest.mark.parametrize(("target", "patch", "result"), [  # RFC 7386, Appendix A
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
])
def test_N3_update_applies_a_json_merge_patch(target: Any, patch: Any, result: Any) -> None:
    before = json.dumps(target)
    assert job_api.json_merge_patch(target, patch) == result
    assert json.dumps(target) == before, "the target is not changed in place"


def test_N3_delete_options_accept_the_sdk_v1_delete_options() -> None:
    from kubernetes.client import V1DeleteOptions, V1Preconditions

    from airflow_broadcast.hooks.job_client import _delete_options_of

    sdk = V1DeleteOptions(propagation_policy="Foreground", grace_period_seconds=5, dry_run=["All"],
                          preconditions=V1Preconditions(uid="u1", resource_version="7"))
    expected = {"propagation_policy": "Foreground", "grace_period_seconds": 5, "dry_run": ["All"],
                "preconditions_uid": "u1", "preconditions_resource_version": "7"}
    assert _delete_options_of(sdk) == expected
    assert _delete_options_of({"propagationPolicy": "Foreground", "gracePeriodSeconds": 5, "dryRun": ["All"],
                               "preconditions": {"uid": "u1", "resourceVersion": "7"}}) == expected
    assert _delete_options_of({"orphanDependents": True})["propagation_policy"] == "Orphan"
    assert job_api.delete_options(propagation_policy="Foreground", grace_period_seconds=5, preconditions_uid="u1",
                                  dry_run=True) == {
        "kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground", "gracePeriodSeconds": 5,
        "preconditions": {"uid": "u1"}, "dryRun": ["All"]}
    with pytest.raises(ValueError, match="grace_period_seconds must be >= 0"):
        job_api.delete_options(grace_period_seconds=-1)


def test_N4_job_client_condition_helpers_read_status_true_only() -> None:
    from airflow_broadcast.hooks.job_client import JobClient

    job = {"status": {"conditions": [
        {"type": "Created", "status": "True"}, {"type": "Running", "status": "False"},
        {"type": "Restarting", "status": "Unknown"}, {"type": "Failed", "status": "True"}]}}
    jobs = JobClient("TFJob", namespace="ns")
    assert jobs.is_job_created(job) and jobs.is_job_failed(job)
    assert not (jobs.is_job_running(job) or jobs.is_job_restarting(job) or jobs.is_job_succeeded(job))
    assert jobs.get_job_conditions({"status": {}}) == [] and not jobs.is_job_created({})


async def test_N3_update_rereads_and_reapplies_the_patch_after_a_conflict() -> None:
    from airflow_broadcast.cluster.api_errors import Conflict
    from airflow_broadcast.cluster.job_records import new_record

    manifest = tf_manifest("contended", {"Worker": replica(1)})
    record = new_record(KIND, "contended", "ns", manifest, {}, {})
    record["metadata"].update(uid="u", resourceVersion="1")

    class Racing:
        """The reconcile loop writes the status between our read and our write, twice."""

        def __init__(self) -> None:
            self.stored, self.reads, self.writes = record, 0, 0

        async def get(self, path: str) -> dict[str, Any]:
            self.reads += 1
            return json.loads(json.dumps(self.stored))

        async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
            self.writes += 1
            if body["metadata"]["resourceVersion"] != self.stored["metadata"]["resourceVersion"]:
                raise Conflict(409, "Conflict", "the object has been modified", verb="PUT", target=path)
            if self.writes <= 2:  # a status write lands first: the version moves on
                version = int(self.stored["metadata"]["resourceVersion"]) + 1
                self.stored = {**self.stored, "metadata": {**self.stored["metadata"], "resourceVersion": str(version)},
                               "data": {**self.stored["data"], "status": json.dumps({"writes": version})}}
                raise Conflict(409, "Conflict", "the object has been modified", verb="PUT", target=path)
            self.stored = {**body, "metadata": {**body["metadata"], "resourceVersion": "99"}}
            return self.stored

    fake = Racing()
    updated = await job_api.update_job(fake, KIND, "ns", "contended",  # type: ignore[arg-type]
                                       {"spec": {"runPolicy": {"suspend": True}}})
    assert (fake.reads, fake.writes) == (3, 3)
    assert updated["spec"]["runPolicy"] == {"suspend": True}
    assert updated["status"] == {"writes": 3}, "the concurrent status write is kept"
    assert updated["metadata"]["resourceVersion"] == "99"

    fake = Racing()
    with pytest.raises(job_api.JobConflict, match="changed concurrently 2 times"):
        await job_api.update_job(fake, KIND, "ns", "contended", {"spec": {"runPolicy": {"suspend": True}}},  # type: ignore[arg-type]
                                 retries=1)
