"""TTL cleanup with nobody watching, on a real Airflow: api-server, scheduler, dag-processor and triggerer processes.

That Airflow has only the janitor DAG file the README shows. The jobs run through `airflow dags test` in the
session's other Airflow (its own home and database), so no task of a job runs where it is cleaned up, and
after the run ends nothing of the job runs anywhere. The record and every child must be gone within
TTL + 5 s of completion (never before the TTL), for both kinds, for TTL 0, short and long TTLs, and across a
triggerer killed before the expiry.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from bcj_support import SIM, bcj_manifest
from kubernetes import client, config
from support.figures import record_figure
from tf_support import replica, succeed, tf_manifest
from ttl_janitor_support import (
    JANITOR_DAG,
    Timeline,
    janitor_cleanups,
    janitor_dag_file,
    lease_holder,
    lease_overdue,
    reported_cleanups,
    run_and_watch,
    within,
)

from devcluster.airflow_env import AirflowEnv
from devcluster.airflow_stack import AirflowStack
from devcluster.control_plane import ClusterInfo

pytestmark = [pytest.mark.airflow, pytest.mark.cluster]
SLACK = 5.0
NO_JANITOR = "No TTL janitor runs in namespace"


@pytest.fixture(scope="module")
def coordination(kubeconfig: str) -> client.CoordinationV1Api:
    return client.CoordinationV1Api(config.new_client_from_config(config_file=kubeconfig))


@pytest.fixture(scope="module")
def watched(core_api: client.CoreV1Api) -> Iterator[str]:
    """The namespace the janitor watches (the tests' jobs use their own node pools in it)."""
    name = f"t-ttl-{uuid.uuid4().hex[:8]}"
    core_api.create_namespace({"metadata": {"name": name, "labels": {"airflow-broadcast.io/test": "true"}}})
    yield name
    core_api.delete_namespace(name, propagation_policy="Background")


@pytest.fixture(scope="module")
def stack(cluster: ClusterInfo, watched: str, coordination: client.CoordinationV1Api,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[AirflowStack]:
    """A whole Airflow whose DAG folder holds the janitor DAG file alone, with its janitor running."""
    dags = tmp_path_factory.mktemp("janitor-dags")
    (dags / "ttl_janitor.py").write_text(janitor_dag_file([watched]))
    env = AirflowEnv.create(tmp_path_factory.mktemp("janitor-home"), dags, cluster.kubeconfig)
    with AirflowStack(env) as running:
        running.wait_for_dag(JANITOR_DAG)
        within(running, lambda: lease_holder(coordination, watched), 90, "the janitor's first lease renewal")
        yield running


@pytest.fixture
def pool(node_factory: Any, watched: str) -> dict[str, str]:
    selector = {"e2e-pool": f"{watched}-{uuid.uuid4().hex[:6]}"}
    node_factory(2, labels=selector)
    return selector


def bcj(name: str, selector: dict[str, str], ttl: int) -> dict[str, Any]:
    return bcj_manifest(name, selector, annotations={f"{SIM}/result": "Succeeded"},
                        completionPolicy={"type": "Always", "ttlSecondsAfterFinished": ttl})


def assert_cleaned_on_time(timeline: Timeline, ttl: int, janitor_back_at: float = 0.0, kind: str = "BroadcastJob",
                           case: str = "") -> None:
    """Gone within TTL + 5 s of completion, never before; a janitor that was away counts from its return."""
    result = timeline.result
    assert result is not None and result.state == "success", result.output[-4000:] if result else timeline
    assert NO_JANITOR not in result.output and "TTL janitor of namespace" not in result.output
    assert timeline.expires is not None, timeline
    (summary,) = result.xcoms.values()
    assert summary["completionTime"] and timeline.expires == pytest.approx(
        time.mktime(time.strptime(summary["completionTime"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone + ttl, abs=1)
    assert timeline.record_gone_at is not None and timeline.record_gone_at >= timeline.expires, "gone before its TTL"
    print(f"\nTTL {ttl}: task ended {timeline.expires - (timeline.task_ended_at or 0):+.1f} s before expiry; "
          f"record gone {timeline.record_gone_at - timeline.expires:.1f} s, children "
          f"{timeline.gone_at - timeline.expires:.1f} s after expiry")
    record_figure("ttl", case=case or f"TTL {ttl}", kind=kind, ttl=ttl,
                  task_ended_before_expiry=round(timeline.expires - (timeline.task_ended_at or 0), 2),
                  record_gone_after_expiry=round(timeline.record_gone_at - timeline.expires, 2),
                  children_gone_after_expiry=round(timeline.gone_at - timeline.expires, 2),
                  janitor_back_after_expiry=round(janitor_back_at - timeline.expires, 2) if janitor_back_at else None)
    assert timeline.gone_at <= max(timeline.expires, janitor_back_at) + SLACK, (
        f"record and children gone {timeline.gone_at - timeline.expires:.1f} s after expiry")


def assert_janitor_did_it(stack: AirflowStack, timeline: Timeline, namespace: str, record: str,
                          janitor_back_at: float = 0.0) -> None:
    """The janitor deleted it after the task ended, and the UI shows the cleanup: an asset event and a DAG run."""
    assert timeline.result_read and timeline.task_ended_at is not None
    assert timeline.task_ended_at <= timeline.gone_at, "no task of the job ran when it was cleaned up"
    payloads = within(stack, lambda: [p for p in janitor_cleanups(stack) if p["uid"] == timeline.uid], 30,
                      "the cleanup's asset event")
    assert [(p["namespace"], p["record"], p["result_read"]) for p in payloads] == [(namespace, record, True)]
    assert timeline.expires is not None and timeline.expires <= payloads[0]["deleted_at"]
    assert payloads[0]["deleted_at"] <= max(timeline.expires, janitor_back_at) + SLACK
    within(stack, lambda: f"{namespace}/{record}" in reported_cleanups(stack), 90, "the janitor DAG's run")


def test_a_short_ttl_is_cleaned_up_by_the_janitor_after_the_task_ended(
        airflow_env: AirflowEnv, stack: AirflowStack, core_api: client.CoreV1Api, watched: str,
        pool: dict[str, str]) -> None:
    timeline = run_and_watch(airflow_env, "bcj_run", watched, bcj("short-ttl", pool, 10), "BroadcastJob", core_api)
    assert_cleaned_on_time(timeline, 10)
    assert_janitor_did_it(stack, timeline, watched, "bcj-short-ttl")


@pytest.mark.parametrize("ttl", [0, 2])
def test_ttl_0_and_2_are_cleaned_up_within_five_seconds_whoever_reads_first(
        airflow_env: AirflowEnv, stack: AirflowStack, core_api: client.CoreV1Api, watched: str,
        pool: dict[str, str], ttl: int) -> None:
    """TTL 0: the task deletes right after reading the result. TTL 2: the task, if the TTL passed before it
    read the result, else the janitor; either way within TTL + 5 s (the issue's own example)."""
    timeline = run_and_watch(airflow_env, "bcj_run", watched, bcj(f"ttl-{ttl}", pool, ttl), "BroadcastJob",
                             core_api)
    assert_cleaned_on_time(timeline, ttl)


def test_a_long_ttl_keeps_the_job_until_it_expires(airflow_env: AirflowEnv, stack: AirflowStack,
                                                  core_api: client.CoreV1Api, watched: str,
                                                  pool: dict[str, str]) -> None:
    timeline = run_and_watch(airflow_env, "bcj_run", watched, bcj("long-ttl", pool, 25), "BroadcastJob", core_api)
    assert timeline.task_ended_at is not None and timeline.expires is not None
    assert timeline.expires - timeline.task_ended_at > 10, "the job outlived its task by more than 10 s"
    assert_cleaned_on_time(timeline, 25)
    assert_janitor_did_it(stack, timeline, watched, "bcj-long-ttl")


def test_a_tfjob_record_its_pods_and_services_go_and_the_deletion_is_recorded(
        airflow_env: AirflowEnv, stack: AirflowStack, core_api: client.CoreV1Api, watched: str) -> None:
    manifest = tf_manifest("ttl-tf", {"Chief": replica(1, annotations=succeed()), "Worker": replica(1)},
                           run_policy={"ttlSecondsAfterFinished": 10, "cleanPodPolicy": "None"})
    timeline = run_and_watch(airflow_env, "tf_run", watched, manifest, "TFJob", core_api)
    assert_cleaned_on_time(timeline, 10, kind="TFJob")
    assert_janitor_did_it(stack, timeline, watched, "tfjob-ttl-tf")
    events = core_api.list_namespaced_event(watched, field_selector="involvedObject.name=tfjob-ttl-tf").items
    assert ("SuccessfulDeleteJob", "Deleted job: ttl-tf") in {(e.reason, e.message) for e in events}


def test_a_triggerer_killed_before_the_expiry_is_replaced_and_the_job_still_goes_on_time(
        airflow_env: AirflowEnv, stack: AirflowStack, core_api: client.CoreV1Api,
        coordination: client.CoordinationV1Api, watched: str, pool: dict[str, str]) -> None:
    restart: dict[str, float] = {}

    def crash_and_replace() -> None:
        before = lease_holder(coordination, watched)
        restart["killed"] = time.time()
        stack.kill_triggerer()
        stack.start_triggerer()
        within(stack, lambda: lease_holder(coordination, watched) not in ("", before), 60, "the janitor's takeover")
        restart["back"] = time.time()

    timeline = run_and_watch(airflow_env, "bcj_run", watched, bcj("survivor", pool, 30), "BroadcastJob", core_api,
                             on_task_end=crash_and_replace)
    print(f"\ntriggerer killed {restart['killed'] - (timeline.expires or 0):.1f} s from expiry; janitor back after "
          f"{restart['back'] - restart['killed']:.1f} s; record and children gone "
          f"{timeline.gone_at - (timeline.expires or 0):.1f} s after expiry")
    assert timeline.expires is not None and restart["killed"] < timeline.expires, "killed before the expiry"
    case = f"TTL 30, triggerer SIGKILLed {timeline.expires - restart['killed']:.0f} s before expiry"
    assert_cleaned_on_time(timeline, 30, janitor_back_at=restart["back"], case=case)
    assert_janitor_did_it(stack, timeline, watched, "bcj-survivor", janitor_back_at=restart["back"])


def test_a_ttl_job_where_no_janitor_runs_warns_at_submission(airflow_env: AirflowEnv, namespace: str,
                                                             node_factory: Any) -> None:
    node_factory(1, labels={"e2e-pool": namespace})
    result = airflow_env.dags_test("bcj_run", conf={"namespace": namespace, "manifest": bcj(
        "unwatched", {"e2e-pool": namespace}, 600)})
    assert result.task_states == {"bcj": "success"}, result.output[-4000:]
    assert (f"{NO_JANITOR} {namespace} (no Lease airflow-broadcast-ttl-janitor): after its ttlSecondsAfterFinished "
            "(600 s) this job's record and pods stay") in result.output
    assert f'dag = ttl_janitor_dag(namespaces=["{namespace}"])' in result.output


def test_pausing_the_janitor_dag_stops_the_janitor_and_submissions_warn_until_it_runs_again(
        airflow_env: AirflowEnv, stack: AirflowStack, coordination: client.CoordinationV1Api, watched: str,
        pool: dict[str, str]) -> None:
    stack.api("PATCH", f"/api/v2/dags/{JANITOR_DAG}", {"is_paused": True})
    try:
        # Overdue by two renewal periods: a stopped janitor, not one late to renew on a busy machine.
        within(stack, lambda: lease_overdue(coordination, watched) > 10, 120, "the janitor's lease going stale")
        result = airflow_env.dags_test("bcj_run", conf={"namespace": watched, "manifest": bcj("paused", pool, 600)})
        overdue = lease_overdue(coordination, watched)
    finally:
        stack.api("PATCH", f"/api/v2/dags/{JANITOR_DAG}", {"is_paused": False})
    assert result.task_states == {"bcj": "success"}, result.output[-4000:]
    assert f"The TTL janitor of namespace {watched} is not running: its Lease airflow-broadcast-ttl-janitor was " \
           "last renewed" in result.output, (f"lease overdue by {overdue:.1f} s after the run", result.output[-4000:])
    within(stack, lambda: lease_holder(coordination, watched), 90, "the janitor running again once unpaused")
