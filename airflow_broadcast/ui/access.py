"""Who may see and stop a job: Airflow's auth manager decides, by the DAG that submitted the job.

A job whose record names no submitting DAG is visible only to users who may read every DAG.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Literal

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.resource_details import DagDetails
from airflow.api_fastapi.core_api.security import get_user
from fastapi import Depends

if TYPE_CHECKING:
    from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
else:
    BaseUser = object

Method = Literal["GET", "PUT"]
UserDep = Annotated[BaseUser, Depends(get_user)]


def may(user: BaseUser, dag_id: str | None, method: Method) -> bool:
    """`method` GET reads the DAG, PUT edits it (the right to stop its jobs)."""
    details = DagDetails(id=dag_id) if dag_id else None
    return bool(get_auth_manager().is_authorized_dag(method=method, user=user, details=details))


def readable(user: BaseUser, dag_ids: Iterable[str | None]) -> set[str | None]:
    """The DAG ids (None: no submitter) among `dag_ids` the user may read, each asked once."""
    return {dag_id for dag_id in set(dag_ids) if may(user, dag_id, "GET")}
