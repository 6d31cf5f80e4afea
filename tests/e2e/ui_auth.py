"""The auth manager of the UI browser test: Airflow's SimpleAuthManager, except that one user may not see one DAG.

SimpleAuthManager lets every role read every DAG; the test needs a user who may not, to see a 403.
"""

from __future__ import annotations

from typing import Any

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

DENIED_USER = "outsider"
DENIED_DAG = "ui_jobs"


class OneDagDeniedAuthManager(SimpleAuthManager):
    """`outsider` (a viewer) may read every DAG but `ui_jobs`; everything else is SimpleAuthManager's rule."""

    def is_authorized_dag(self, *, method: Any, user: Any, access_entity: Any = None, details: Any = None) -> bool:
        denied = details is None or getattr(details, "id", None) in (None, DENIED_DAG)
        if user.get_name() == DENIED_USER and denied:
            return False
        return bool(super().is_authorized_dag(method=method, user=user, access_entity=access_entity, details=details))
