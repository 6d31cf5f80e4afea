"""The Airflow plugin the provider ships: the page's FastAPI app, a nav entry and a task-instance tab."""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin

from airflow_broadcast.ui.links import JobStatusLink
from airflow_broadcast.ui.settings import URL_PREFIX


def _app() -> Any:
    from airflow_broadcast.ui.app import app

    return app


class BroadcastJobsPlugin(AirflowPlugin):
    """Registered through `get_provider_info()["plugins"]`; the api-server mounts the app at start."""

    name = "broadcast_jobs"
    fastapi_apps = [{"app": _app(), "url_prefix": URL_PREFIX, "name": "Broadcast jobs"}]
    external_views = [
        {"name": "Broadcast jobs", "href": f"{URL_PREFIX}/", "destination": "nav", "category": "browse",
         "url_route": "broadcast-jobs"},
        {"name": "Job status", "destination": "task_instance", "url_route": "broadcast-job-of-task",
         "href": f"{URL_PREFIX}/?dag_id={{DAG_ID}}&run_id={{RUN_ID}}&task_id={{TASK_ID}}&map_index={{MAP_INDEX}}"},
    ]
    operator_extra_links = [JobStatusLink()]
