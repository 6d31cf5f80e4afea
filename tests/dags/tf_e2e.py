"""The DAG the TFJob end-to-end tests run through `airflow dags test`; everything comes from dag_run.conf.

One DAG holds every scenario as its own task (each with its own manifest and namespace), so one
`airflow dags test` (about 20 s of start-up) runs them all; `dags test` runs the tasks one after
the other and keeps going when one fails. conf: {<task_id>: {"manifest": ..., "namespace": ...}},
plus `fail_for_seconds` for `comeback` and `marker` for `resilient`.
"""

from __future__ import annotations

import copy
import math
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG
from crash_once import CrashOnceAfterSubmit

from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.sensors.tf_job import TFJobSensor

COMMON: dict[str, Any] = {"start_date": datetime(2026, 1, 1), "schedule": None, "catchup": False,
                          "render_template_as_native_obj": True}
FAIL_UNTIL = "sim.airflow-broadcast.io/fail-until"
PLAIN_SCENARIOS = ("chief", "worker0", "allworkers", "oom", "deadline", "broken")


def conf(task: str, key: str) -> str:
    return "{{ dag_run.conf['" + task + "']['" + key + "'] }}"


class FailUntilTFJobOperator(TFJobOperator):
    """Scripts "fail first, succeed once re-created": pods created in the next few seconds fail.

    The `fail-until` time must be relative to the submission, which happens after Airflow's
    start-up, so it is stamped into every replica template right before the job is submitted.
    """

    template_fields = (*TFJobOperator.template_fields, "fail_for_seconds")

    def __init__(self, *, fail_for_seconds: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fail_for_seconds = fail_for_seconds

    def execute(self, context: Any) -> Any:
        until = datetime.fromtimestamp(math.ceil(time.time() + float(self.fail_for_seconds)), tz=UTC)
        manifest = copy.deepcopy(self.manifest)
        for replica in manifest["spec"]["tfReplicaSpecs"].values():
            metadata = replica["template"].setdefault("metadata", {})
            metadata.setdefault("annotations", {})[FAIL_UNTIL] = until.strftime("%Y-%m-%dT%H:%M:%SZ")
        self.manifest = manifest
        self.log.info("pods created before %s fail", until.isoformat())
        return super().execute(context)


class CrashOnceTFJobOperator(CrashOnceAfterSubmit, TFJobOperator):
    """Simulates a worker dying right after the first try submitted the job."""

    template_fields = (*TFJobOperator.template_fields, "crash_marker")

    def __init__(self, *, crash_marker: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.crash_marker = crash_marker


with DAG(dag_id="tf_e2e_scenarios", **COMMON):
    for scenario in PLAIN_SCENARIOS:
        TFJobOperator(task_id=scenario, manifest=conf(scenario, "manifest"), namespace=conf(scenario, "namespace"))

    FailUntilTFJobOperator(task_id="comeback", manifest=conf("comeback", "manifest"),
                           namespace=conf("comeback", "namespace"),
                           fail_for_seconds=conf("comeback", "fail_for_seconds"))

    submit = TFJobOperator(task_id="submit", manifest=conf("sensed", "manifest"),
                           namespace=conf("sensed", "namespace"), wait_for_completion=False)
    sense = TFJobSensor(task_id="sense", job_name="{{ dag_run.conf['sensed']['manifest']['metadata']['name'] }}",
                        namespace=conf("sensed", "namespace"), timeout=300)
    submit >> sense

    CrashOnceTFJobOperator(task_id="resilient", manifest=conf("resilient", "manifest"),
                           namespace=conf("resilient", "namespace"), retries=1, retry_delay=timedelta(seconds=0),
                           crash_marker=conf("resilient", "marker"))
