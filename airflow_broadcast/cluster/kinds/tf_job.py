"""TFJob's driver: watch the namespace's pods and headless services (and PodGroups with gang scheduling).

Also the checks made before a TFJob is submitted, so that a missing CRD, queue or permission
fails the task before the job record exists, with the fix in the message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_broadcast.cluster.api_errors import ClusterApiError, Forbidden, NotFound
from airflow_broadcast.cluster.api_paths import api_path
from airflow_broadcast.cluster.informers import shared_informer
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.observation import (
    PRIORITY_CLASSES_PATH,
    pod_group_info,
    pod_info,
    priority_value,
    service_info,
)
from airflow_broadcast.cluster.plan_executor import ChildEventStyle
from airflow_broadcast.cluster.reconcile_loop import WatchSet
from airflow_broadcast.exceptions import PodGroupApiError, QueueCheckError
from airflow_broadcast.reconcilers.observed import RECORD_UID_LABEL
from airflow_broadcast.reconcilers.tf_job.gang_scheduling import gang_scheduler
from airflow_broadcast.reconcilers.tf_job.kind import TFJobKind, TFObserved
from airflow_broadcast.specs.tf_job.spec import QUEUE_NAME_LABEL

LOCAL_QUEUE_API = "kueue.x-k8s.io/v1beta1"
TF_STYLE = ChildEventStyle(create_ok="SuccessfulCreatePod", create_failed="FailedCreatePod",
                           delete_ok="SuccessfulDeletePod", delete_ok_message="Deleted pod: {name}")


@dataclass(frozen=True)
class TFJobDriver:
    kind: TFJobKind = field(default_factory=TFJobKind)
    style: ChildEventStyle = TF_STYLE

    def watch(self, client: KubeClient, namespace: str) -> WatchSet:
        pods = shared_informer(client, api_path("v1", "pods", namespace=namespace), pod_info,
                               label_selector=RECORD_UID_LABEL, index_label=RECORD_UID_LABEL)
        services = shared_informer(client, api_path("v1", "services", namespace=namespace), service_info,
                                   label_selector=RECORD_UID_LABEL, index_label=RECORD_UID_LABEL)
        options = self.kind.options
        gang = gang_scheduler(options.gang_scheduler, options.gang_scheduler_name)
        if gang is None:
            return WatchSet(children=pods, services=services)
        pod_groups = shared_informer(client, api_path(gang.api_version, "podgroups", namespace=namespace),
                                     pod_group_info, label_selector=RECORD_UID_LABEL, index_label=RECORD_UID_LABEL)
        priorities = shared_informer(client, PRIORITY_CLASSES_PATH, priority_value)
        return WatchSet(children=pods, services=services, pod_groups=pod_groups, priorities=priorities)

    def observe(self, watched: WatchSet, uid: str) -> TFObserved:
        return TFObserved(
            pods=watched.children.items(uid),
            services=watched.services.items(uid) if watched.services is not None else [],
            pod_groups=watched.pod_groups.items(uid) if watched.pod_groups is not None else [],
            priorities=dict(watched.priorities.items()) if watched.priorities is not None else {},
        )


def local_queue_path(namespace: str, name: str) -> str:
    return api_path(LOCAL_QUEUE_API, "localqueues", namespace=namespace, name=name)


async def check_local_queue(client: KubeClient, namespace: str, queue_name: str) -> str | None:
    """Kueue's LocalQueue check, as the Kubeflow SDK's `queue_name` makes it.

    None when the queue exists. A missing queue (404) or no permission to look (403) is only a
    warning, since Kueue may be installed later or the identity may not read queues; any other
    API failure raises QueueCheckError before anything is created.
    """
    try:
        await client.get(local_queue_path(namespace, queue_name))
    except NotFound:
        return (f"Kueue LocalQueue {namespace}/{queue_name} was not found (or Kueue is not installed); "
                f"the job is submitted with the {QUEUE_NAME_LABEL} label anyway")
    except Forbidden as exc:
        return (f"not allowed to read Kueue LocalQueue {namespace}/{queue_name} ({exc.api_message}); "
                f"the job is submitted with the {QUEUE_NAME_LABEL} label without checking the queue")
    except ClusterApiError as exc:
        raise QueueCheckError(f"could not check Kueue LocalQueue {namespace}/{queue_name}: {exc.describe()}. "
                              "Nothing was created.") from exc
    return None


async def check_pod_group_api(client: KubeClient, namespace: str, api_version: str) -> None:
    """Gang scheduling is on: PodGroupApiError unless this identity can list PodGroups here."""
    path = api_path(api_version, "podgroups", namespace=namespace)
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
