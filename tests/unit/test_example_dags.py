"""The example DAGs parse with no cluster, their manifests render and validate, and the docs quote them as they are."""

from __future__ import annotations

import copy
import re
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.dag_processing.dagbag import DagBag
from airflow.sdk import CronTriggerTimetable
from airflow.sdk.exceptions import AirflowFailException

from airflow_broadcast.operators.job_cleanup import JobCleanupOperator
from airflow_broadcast.operators.job_operator import ReconciledJobOperator
from airflow_broadcast.sensors.broadcast_job import BroadcastJobSensor

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "example_dags"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
EXAMPLE_DAG_IDS = {"example_broadcast_job_prepull", "example_broadcast_job_sensor", "example_node_maintenance",
                   "tfjob_distributed_mnist", "airflow_broadcast_ttl_janitor"}
JANITOR = "airflow_broadcast_ttl_janitor"  # scheduled on its cleanups asset (tests/unit/test_janitor_dag.py)
RUN_AFTER = datetime(2026, 3, 1, 3, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def dagbag() -> DagBag:
    return DagBag(dag_folder=EXAMPLES)


class FakeTI:
    """XComs as a finished upstream task left them: {(task_id, key): value}."""

    def __init__(self, xcoms: dict[tuple[str, str], Any]) -> None:
        self.xcoms = xcoms

    def xcom_pull(self, task_ids: str, key: str = "return_value") -> Any:
        return self.xcoms.get((task_ids, key))


def context(dag: Any, run_after: datetime = RUN_AFTER, **params: Any) -> dict[str, Any]:
    values = {name: dag.params[name] for name in dag.params}
    return {"params": {**values, **params}, "dag_run": SimpleNamespace(run_after=run_after),
            "ti": FakeTI({("submit_node_check", "return_value"): {"name": "node-check"}})}


def render(task: Any, field: str, ctx: dict[str, Any]) -> Any:
    """The field as the task renders it (a manifest path becomes the rendered file), on a copy of the task."""
    rendered = copy.copy(task)
    rendered.render_template_fields(ctx, task.dag.get_template_env())
    return getattr(rendered, field)


def parsed_job(task: ReconciledJobOperator, ctx: dict[str, Any]) -> Any:
    return task.parse(render(task, "manifest", ctx), render(task, "namespace", ctx), "default")


def job_tasks(dagbag: DagBag) -> list[ReconciledJobOperator]:
    return [t for dag in dagbag.dags.values() for t in dag.tasks if isinstance(t, ReconciledJobOperator)]


def pod_templates(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    spec = manifest["spec"]
    if "tfReplicaSpecs" in spec:
        return [replica["template"] for replica in spec["tfReplicaSpecs"].values()]
    return [spec["template"]]


def test_every_example_parses_without_a_cluster(dagbag: DagBag) -> None:
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == EXAMPLE_DAG_IDS


def test_every_manifest_renders_validates_and_lands_on_the_given_namespace_and_pool(dagbag: DagBag) -> None:
    pool = {"e2e-pool": "t-123"}
    assert len(job_tasks(dagbag)) == 5
    for task in job_tasks(dagbag):
        job = parsed_job(task, context(task.dag, namespace="t-123", node_selector=pool))
        templates = pod_templates(dict(job.manifest))
        assert job.namespace == "t-123", task.task_id
        assert templates and all(t["spec"]["nodeSelector"] == pool for t in templates), task.task_id


def test_default_params_target_every_linux_node_of_the_demo_namespace(dagbag: DagBag) -> None:
    for task in job_tasks(dagbag):
        job = parsed_job(task, context(task.dag))
        assert job.namespace == "demo"
        assert all(t["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
                   for t in pod_templates(dict(job.manifest))), task.task_id


@pytest.mark.parametrize(("dag_id", "task_id", "prefix"), [
    ("example_node_maintenance", "prune_images", "prune-images-"),
    ("tfjob_distributed_mnist", "train", "mnist-dist-"),
])
def test_job_names_are_unique_per_run_and_stable_across_its_retries(dagbag: DagBag, dag_id: str, task_id: str,
                                                                    prefix: str) -> None:
    task = dagbag.dags[dag_id].get_task(task_id)
    first = parsed_job(task, context(task.dag, RUN_AFTER)).name
    retry = parsed_job(task, context(task.dag, RUN_AFTER)).name
    next_run = parsed_job(task, context(task.dag, datetime(2026, 3, 8, 3, 0, tzinfo=UTC))).name
    assert first == retry == f"{prefix}20260301"
    assert next_run == f"{prefix}20260308"
    assert task.reattach is True


def test_every_scheduled_example_runs_once_at_a_time_without_catch_up(dagbag: DagBag) -> None:
    for dag in dagbag.dags.values():
        assert dag.catchup is False, dag.dag_id
        assert dag.max_active_runs == 1, dag.dag_id
        assert dag.dag_id == JANITOR or isinstance(dag.timetable, CronTriggerTimetable), dag.dag_id


def test_node_maintenance_retries_with_a_deadline_after_sweeping_expired_records(dagbag: DagBag) -> None:
    dag = dagbag.dags["example_node_maintenance"]
    prune = dag.get_task("prune_images")
    sweep = dag.get_task("delete_expired_records")
    assert dag.schedule == "0 3 * * 0"
    assert prune.retries == 2 and prune.reattach is True
    assert prune.execution_timeout is not None and prune.execution_timeout.total_seconds() == 7200
    assert isinstance(sweep, JobCleanupOperator) and sweep.downstream_task_ids == {"prune_images"}
    assert render(sweep, "namespaces", context(dag, namespace="ops")) == ["ops"]


def test_sensor_example_submits_without_waiting_and_senses_the_submitted_name(dagbag: DagBag) -> None:
    dag = dagbag.dags["example_broadcast_job_sensor"]
    submit, wait = dag.get_task("submit_node_check"), dag.get_task("wait_node_check")
    assert submit.wait_for_completion is False
    assert isinstance(wait, BroadcastJobSensor) and submit.downstream_task_ids == {"wait_node_check"}
    assert render(wait, "job_name", context(dag)) == parsed_job(submit, context(dag)).name == "node-check"


def train_xcom(phase: str = "Succeeded", failed_workers: int = 0, failure: dict[str, Any] | None = None
               ) -> dict[str, Any]:
    return {"name": "mnist-dist-20260301", "phase": phase, "failure": failure,
            "replicaStatuses": {"Chief": {"active": 0, "succeeded": 1, "failed": 0},
                                "Worker": {"active": 0, "succeeded": 4 - failed_workers, "failed": failed_workers}}}


def evaluate(dagbag: DagBag) -> Any:
    dag = dagbag.dags["tfjob_distributed_mnist"]
    assert dag.get_task("prepare").downstream_task_ids == {"train"}
    assert dag.get_task("train").downstream_task_ids == {"evaluate"}
    return dag.get_task("evaluate").python_callable


def test_evaluate_publishes_a_model_every_worker_trained(dagbag: DagBag) -> None:
    verdict = evaluate(dagbag)(ti=FakeTI({("train", "return_value"): train_xcom()}))
    assert verdict["publish"] is True and verdict["job"] == "mnist-dist-20260301"
    assert verdict["workers"] == {"active": 0, "succeeded": 4, "failed": 0}


def test_evaluate_holds_a_model_that_lost_workers(dagbag: DagBag) -> None:
    verdict = evaluate(dagbag)(ti=FakeTI({("train", "return_value"): train_xcom(failed_workers=1)}))
    assert verdict["publish"] is False
    assert verdict["reason"] == "1 worker(s) failed: the model saw less data"


def test_evaluate_reads_the_failure_from_the_record_when_training_failed(dagbag: DagBag,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    failure = {"replicaType": "Worker", "index": 2, "pod": "mnist-dist-20260301-worker-2", "exitCode": 137,
               "reason": "OOMKilled", "message": ""}
    asked: list[tuple[str, str, str]] = []

    class RecordOnlyClient:
        def __init__(self, kind: str, namespace: str) -> None:
            self.kind, self.namespace = kind, namespace

        def get_job(self, name: str) -> dict[str, Any]:
            asked.append((self.kind, self.namespace, name))
            return {"status": {"failure": failure, "replicaStatuses": {"Worker": {"failed": 1}}}}

    callable_ = evaluate(dagbag)
    monkeypatch.setitem(callable_.__globals__, "JobClient", RecordOnlyClient)
    job = {"kind": "TFJob", "name": "mnist-dist-20260301", "namespace": "ml"}
    with pytest.raises(AirflowFailException) as raised:
        callable_(ti=FakeTI({("train", "job"): job}))
    assert asked == [("TFJob", "ml", "mnist-dist-20260301")]
    assert str(raised.value) == ("training mnist-dist-20260301 failed in Worker 2 (pod mnist-dist-20260301-worker-2, "
                                 "exit code 137, OOMKilled): raise the replica's memory limit")


def test_evaluate_fails_when_training_never_submitted_or_never_finished(dagbag: DagBag) -> None:
    with pytest.raises(AirflowFailException, match="never submitted"):
        evaluate(dagbag)(ti=FakeTI({}))
    with pytest.raises(AirflowFailException, match=r"did not finish \(phase Running\)"):
        evaluate(dagbag)(ti=FakeTI({("train", "return_value"): train_xcom(phase="Running")}))


# ---- the docs ---------------------------------------------------------------------------------------------
def fenced_blocks(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^```[^\n]*\n(.*?)^```$", text, flags=re.M | re.S)]


def marked_regions() -> dict[str, str]:
    """`[START name]` … `[END name]` regions of the example DAGs, dedented as the docs show them."""
    regions: dict[str, str] = {}
    for path in EXAMPLES.glob("*.py"):
        found = re.finditer(r"# \[START (\w+)\]\n(.*?)^\s*# \[END \1\]", path.read_text(), flags=re.M | re.S)
        regions.update({m.group(1): textwrap.dedent(m.group(2)) for m in found})
    return regions


def quotable_sources() -> dict[str, tuple[str, str]]:
    """First line → (what, text) of every marked region and every manifest: a docs block starting alike quotes it."""
    sources = {text.splitlines()[0]: (name, text) for name, text in marked_regions().items()}
    for path in (EXAMPLES / "manifests").glob("*.yaml"):
        sources[path.read_text().splitlines()[0]] = (path.name, path.read_text())
    return sources


def test_docs_quote_the_examples_and_their_manifests_verbatim() -> None:
    sources = quotable_sources()
    assert {"howto_operator_broadcast_job", "howto_sensor_broadcast_job", "howto_operator_tf_job",
            "howto_node_maintenance", "prune-images.yaml"} <= {what for what, _ in sources.values()}
    quoted: set[str] = set()
    for doc in DOCS:
        for block in fenced_blocks(doc.read_text()):
            what, text = sources.get(block.splitlines()[0] if block else "", ("", ""))
            if what:
                assert block == text, f"{doc.name} quotes an outdated {what}"
                quoted.add(what)
    assert {"howto_operator_broadcast_job", "howto_sensor_broadcast_job", "howto_operator_tf_job",
            "prepull-images.yaml", "mnist-dist.yaml"} <= quoted


def heading_anchors(doc: Path) -> set[str]:
    """The anchors a code host gives the headings: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#+ (.+)$", doc.read_text(), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_example_file_and_link_the_docs_name_exists() -> None:
    for doc in DOCS:
        text = doc.read_text()
        for name in re.findall(r"(?<![\w/])(?:example_dags/)?manifests/[\w.-]+\.ya?ml", text):
            assert (EXAMPLES / name.removeprefix("example_dags/")).is_file(), f"{doc.name} names {name}"
        for name in re.findall(r"example_dags/[\w-]+\.py", text):
            assert (REPO / name).is_file(), f"{doc.name} names {name}"
        for link, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", text):
            if re.match(r"[a-z]+://", link):
                continue
            target = doc.parent / link if link else doc
            assert target.exists(), f"{doc.name} links to missing {link}"
            if anchor and target.suffix == ".md":
                assert anchor in heading_anchors(target), f"{doc.name} links to missing {link}#{anchor}"


def test_docs_use_plain_markdown_only() -> None:
    sphinx_only = re.compile(r"^```\{|^\.\. [\w-]+::|\{eval-rst\}|:(?:ref|doc|class|func):`", flags=re.M)
    for doc in DOCS:
        assert not sphinx_only.search(doc.read_text()), f"{doc.name} uses syntax only a Sphinx build renders"
