"""M2 on the real cluster: a job whose record is gone stops the loop cleanly."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_broadcast.cluster.job_submission import Submission

pytestmark = pytest.mark.cluster


def test_M2_a_missing_job_record_stops_the_loop_cleanly(engine: Any, namespace: str) -> None:
    ghost = Submission({"metadata": {"name": "tfjob-ghost", "namespace": namespace, "uid": "no-such-uid"}},
                       reattached=False)
    outcome = engine.drive(ghost, "TFJob", timeout=30)
    assert outcome.reason == "gone"
    assert "tfjob-ghost" in outcome.message
