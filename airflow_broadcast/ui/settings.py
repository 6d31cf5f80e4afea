"""Which Airflow connections the page lists jobs through (`[airflow_broadcast] ui_kubernetes_conn_ids`)."""

from __future__ import annotations

from airflow_broadcast.version_compat import conf

DEFAULT_CONNECTIONS = "kubernetes_default"


def ui_connections() -> list[str]:
    """The configured connection ids, comma-separated; `kubernetes_default` when unset."""
    value = conf.get("airflow_broadcast", "ui_kubernetes_conn_ids", fallback=DEFAULT_CONNECTIONS)
    return [c.strip() for c in str(value or DEFAULT_CONNECTIONS).split(",") if c.strip()]

URL_PREFIX = "/broadcast-jobs"
