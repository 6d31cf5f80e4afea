"""Spec-level node selection (checklist D: N15), on the real cluster."""

from __future__ import annotations

from typing import Any

import pytest
from bcj_cluster import KIND, bcj, pods_by_node

from airflow_broadcast.reconcilers.broadcast_job.node_eligibility import (
    REASON_EXCLUDED,
    REASON_NOT_LISTED,
    REASON_SPEC_SELECTOR,
)

pytestmark = pytest.mark.cluster


def test_N15_names_exclusions_and_a_selector_narrow_the_nodes_before_the_template(
        engine: Any, node_factory: Any, namespace: str) -> None:
    east = sorted(node_factory(3, labels={"pool": namespace, "zone": "east"}))
    west = node_factory(1, labels={"pool": namespace, "zone": "west"})
    unlisted = node_factory(1, labels={"pool": namespace, "zone": "east"})
    manifest = bcj("picked", namespace, after="1s", nodeNames=[*east, *west], excludeNodeNames=[east[2]],
                   nodeSelector={"zone": "east"})

    outcome = engine.drive(engine.submit(manifest), KIND)

    assert outcome.reason == "finished"
    assert sorted(pods_by_node(engine, "picked")) == east[:2]
    status = engine.status(KIND, "picked")
    assert (status["phase"], status["desired"], status["succeeded"]) == ("completed", 2, 2)
    ineligible = status["ineligibleNodes"]
    assert (ineligible[east[2]], ineligible[west[0]], ineligible[unlisted[0]]) == (
        REASON_EXCLUDED, REASON_SPEC_SELECTOR, REASON_NOT_LISTED)
