"""`ttl_janitor_dag`: one DAG file makes `ttlSecondsAfterFinished` happen with nobody watching.

    from airflow_broadcast.janitor import ttl_janitor_dag

    dag = ttl_janitor_dag(namespaces=["ops", "ml"])

The DAG is scheduled on an asset whose `AssetWatcher` is `TTLJanitorTrigger`, so Airflow keeps the
janitor running in a triggerer while the DAG is active (it is created active) and moves it when a
triggerer dies. Every deleted record is an asset event, and the DAG's one task lists the cleanups
of its run in its log and XCom: the UI shows each cleanup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import DAG, Asset, AssetWatcher, task

from airflow_broadcast.triggers.ttl_janitor import TTLJanitorTrigger

DEFAULT_DAG_ID = "airflow_broadcast_ttl_janitor"
DOC = """Deletes expired BroadcastJob and TFJob records (and so their pods and services) of {namespaces}
as soon as `ttlSecondsAfterFinished` lets them go. The janitor runs in the triggerer as the watcher of
the asset `{asset}`; each cleanup is an event of that asset and starts a run of this DAG. It renews the
Lease `airflow-broadcast-ttl-janitor` in each namespace while it runs:
`kubectl get lease airflow-broadcast-ttl-janitor -n <namespace>`. Pausing this DAG stops the janitor."""


def cleanups_asset(namespaces: Sequence[str], *, dag_id: str = DEFAULT_DAG_ID,
                   kubernetes_conn_id: str = "kubernetes_default", cluster_context: str | None = None) -> Asset:
    """The asset whose watcher is the janitor of `namespaces`; one event per deleted record."""
    trigger = TTLJanitorTrigger(namespaces, kubernetes_conn_id=kubernetes_conn_id, cluster_context=cluster_context)
    return Asset(name=f"{dag_id}.cleanups", watchers=[AssetWatcher(name=f"{dag_id}.janitor", trigger=trigger)])


@task(task_id="report_cleanups")
def report_cleanups(triggering_asset_events: Mapping[Any, Sequence[Any]] | None = None) -> list[str]:
    """Log each record the janitor deleted for this run; return them as `<namespace>/<record>`."""
    import logging

    log = logging.getLogger("airflow.task")
    deleted: list[str] = []
    for events in (triggering_asset_events or {}).values():
        for event in events:
            cleanup = (getattr(event, "extra", None) or {}).get("payload") or {}
            if not cleanup:
                continue
            deleted.append(f"{cleanup['namespace']}/{cleanup['record']}")
            log.info("TTL janitor deleted %s %s/%s (record %s, uid %s): expired at %s, result %s",
                     cleanup["kind"], cleanup["namespace"], cleanup["job_name"], cleanup["record"], cleanup["uid"],
                     cleanup["expired_at"], "read" if cleanup["result_read"] else "never read")
    return deleted


def ttl_janitor_dag(namespaces: Sequence[str], *, dag_id: str = DEFAULT_DAG_ID,
                    kubernetes_conn_id: str = "kubernetes_default", cluster_context: str | None = None,
                    **dag_kwargs: Any) -> DAG:
    """The janitor DAG for `namespaces`; `dag_kwargs` go to DAG (tags, owner_links, ...).

    One DAG per set of namespaces: two janitor DAGs in one Airflow need different `dag_id`s.
    """
    asset = cleanups_asset(namespaces, dag_id=dag_id, kubernetes_conn_id=kubernetes_conn_id,
                           cluster_context=cluster_context)
    settings: dict[str, Any] = {
        "catchup": False, "max_active_runs": 1, "is_paused_upon_creation": False,
        "tags": ["airflow-broadcast", "ttl"],
        "doc_md": DOC.format(namespaces=", ".join(sorted(set(namespaces))), asset=asset.name),
        **dag_kwargs,
    }
    with DAG(dag_id=dag_id, schedule=[asset], **settings) as dag:
        report_cleanups()
    return dag
