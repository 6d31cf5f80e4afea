"""Kueue's LocalQueue check before a job that names a queue is submitted (the Kubeflow SDK's `queue_name`).

Like the SDK: a missing queue (404) or no permission to look (403) is only a warning,
since Kueue may be installed later or the identity may not read queues; any other API
failure stops the submission before anything is created.
"""

from __future__ import annotations

from airflow_broadcast.cluster.api_errors import ClusterApiError, Forbidden, NotFound
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.exceptions import QueueCheckError

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
LOCAL_QUEUE_API = "/apis/kueue.x-k8s.io/v1beta1"


def local_queue_path(namespace: str, name: str) -> str:
    return f"{LOCAL_QUEUE_API}/namespaces/{namespace}/localqueues/{name}"


async def check_local_queue(client: KubeClient, namespace: str, queue_name: str) -> str | None:
    """None when the LocalQueue exists; a warning for 404/403; QueueCheckError for anything else."""
    try:
        await client.get(local_queue_path(namespace, queue_name))
    except NotFound:
        return (f"Kueue LocalQueue {namespace}/{queue_name} was not found (or Kueue is not installed); "
                f"the job is submitted with the {QUEUE_LABEL} label anyway")
    except Forbidden:
        return (f"not allowed to read Kueue LocalQueue {namespace}/{queue_name}; "
                f"the job is submitted with the {QUEUE_LABEL} label without checking the queue")
    except ClusterApiError as exc:
        raise QueueCheckError(f"could not check Kueue LocalQueue {namespace}/{queue_name}: {exc.describe()}. "
                              "Nothing was created.") from exc
    return None
