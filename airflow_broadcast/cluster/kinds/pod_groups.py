"""Before a gang-scheduled job is submitted: can this identity create and watch PodGroups here?

Checked up front so that a missing CRD or permission fails the task before the job record
exists, with the fix in the message, rather than from the reconcile loop afterwards.
"""

from __future__ import annotations

from airflow_broadcast.cluster.api_errors import ClusterApiError, Forbidden, NotFound
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.exceptions import PodGroupApiError


async def check_pod_group_api(client: KubeClient, namespace: str, api_version: str) -> None:
    path = f"/apis/{api_version}/namespaces/{namespace}/podgroups"
    try:
        await client.get(path, limit=1)
    except NotFound as exc:
        raise PodGroupApiError(f"gang scheduling is on, but the PodGroup API {api_version} is not served: install "
                               "the gang scheduler's CRDs, or turn gang scheduling off. Nothing was created.") from exc
    except Forbidden as exc:
        raise PodGroupApiError(f"not allowed to list PodGroups ({api_version}) in {namespace}: grant the Role in "
                               "docs/rbac/tfjob-extras.yaml. Nothing was created.") from exc
    except ClusterApiError as exc:
        raise PodGroupApiError(f"could not check the PodGroup API {api_version} in {namespace}: "
                               f"{exc.describe()}. Nothing was created.") from exc
