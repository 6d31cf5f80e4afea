"""The "Job status" extra link of every operator and sensor task: it opens the job's page.

Kept free of the page's own imports: operators import it while DAG files are parsed.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from airflow.sdk import BaseOperatorLink

from airflow_broadcast.ui.settings import URL_PREFIX
from airflow_broadcast.version_compat import conf


def page_url(query: dict[str, Any]) -> str:
    """The page under `[api] base_url` (its path only: the link stays on the server the user is on)."""
    base = str(conf.get("api", "base_url", fallback="") or "")
    path = base.split("://", 1)[-1].partition("/")[2] if "://" in base else base.strip("/")
    prefix = f"/{path.strip('/')}" if path.strip("/") else ""
    return f"{prefix}{URL_PREFIX}/?{urlencode(query)}"


class JobStatusLink(BaseOperatorLink):
    """An operator's link finds the job by the task instance that submitted it; a sensor's by the job's name."""

    name = "Job status"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        job_name = getattr(operator, "job_name", None)
        if isinstance(job_name, str) and job_name:
            return page_url({"kind": operator.kind, "name": job_name, "namespace": operator.namespace or ""})
        return page_url({"dag_id": ti_key.dag_id, "run_id": ti_key.run_id, "task_id": ti_key.task_id,
                         "map_index": ti_key.map_index})
