"""`spec.rerunOnTemplateChange` (checklist B: V18) on the real cluster: fix the template, the failed nodes run again."""

from __future__ import annotations

from typing import Any

import pytest
from bcj_cluster import KIND, SIM, bcj, events, job_pods, wait_status

from airflow_broadcast.reconcilers.broadcast_job.pods import NODE_ANNOTATION, TEMPLATE_ANNOTATION
from airflow_broadcast.reconcilers.broadcast_job.retries import TEMPLATE_REASON

pytestmark = pytest.mark.cluster


def test_V18_a_paused_job_whose_template_is_fixed_re_runs_its_nodes_and_completes(
        engine: Any, node_factory: Any, namespace: str, loops: Any) -> None:
    good, bad = sorted(node_factory(2, labels={"pool": namespace}))
    manifest = bcj("v18", namespace, fail_nodes=[bad], failurePolicy={"type": "Pause"}, rerunOnTemplateChange=True)
    loop = loops(engine.submit(manifest))
    wait_status(engine, "v18", lambda s: s["phase"] == "paused", what="paused by the failed node")
    before = {p.metadata.annotations[NODE_ANNOTATION]: p for p in job_pods(engine, "v18")}
    assert sorted(before) == [good, bad] and len({p.metadata.annotations[TEMPLATE_ANNOTATION]
                                                  for p in before.values()}) == 1

    def fix(m: dict[str, Any]) -> None:  # the new template no longer fails on `bad`
        del m["spec"]["template"]["metadata"]["annotations"][f"{SIM}/fail-nodes"]
    engine.edit_manifest(KIND, "v18", fix)
    outcome = loop.wait()

    assert outcome.reason == "finished"
    status = engine.status(KIND, "v18")
    assert (status["phase"], status["succeeded"], status["failed"]) == ("completed", 2, 0)
    old_hash = before[good].metadata.annotations[TEMPLATE_ANNOTATION]
    after = {p.metadata.annotations[NODE_ANNOTATION]: p for p in job_pods(engine, "v18")}
    assert {n: p.metadata.annotations[TEMPLATE_ANNOTATION] != old_hash for n, p in after.items()} == {
        good: True, bad: True}, "both nodes ran the new template"
    assert {n: status["nodes"][n]["attempt"] for n in (good, bad)} == {good: 2, bad: 2}
    assert sorted(m for _, r, m in events(engine, "v18") if r == TEMPLATE_REASON) == sorted(
        f"Pod {p.metadata.name} on node {n} ran an earlier template; the node runs again" for n, p in before.items())
