"""JobClient: get, list, update, delete and inspect jobs from DAG code, like the Kubeflow SDK's TrainingClient.

A synchronous facade over `airflow_broadcast.cluster.job_api` for PythonOperator and
`@task` callables. Each call runs on a fresh event loop with the connection's shared
client and closes it afterwards, so nothing is left open between calls. Async code
(triggers, deferrable operators) should call `job_api` directly instead.

    client = JobClient("TFJob")
    client.update_job("mnist", {"spec": {"runPolicy": {"suspend": True}}})
    if client.is_job_succeeded("mnist"):
        client.delete_job("mnist", propagation_policy="Foreground")
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any, TypeVar

from airflow_broadcast.cluster import job_api, job_pods, job_wait
from airflow_broadcast.cluster.api_errors import ApiTimeout, TransportError
from airflow_broadcast.cluster.kinds.registry import check_kind
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.worker_loop import run_on_worker
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook, connection_namespace

T = TypeVar("T")
JobRef = str | Mapping[str, Any]
"""A job name, or a job object as get_job/list_jobs return it."""


class JobClient:
    """Sync access to the jobs of one kind through an Airflow `kubernetes` connection.

    :param kind: `TFJob` or `BroadcastJob`.
    :param kubernetes_conn_id: an Airflow connection of the cncf `kubernetes` type.
    :param namespace: the default namespace of every call; else the connection's namespace, else `default`.
    :param cluster_context: the kubeconfig context to use, if not the connection's.
    """

    def __init__(self, kind: str = "TFJob", kubernetes_conn_id: str = "kubernetes_default",
                 namespace: str | None = None, cluster_context: str | None = None) -> None:
        self.kind = check_kind(kind)
        self.kubernetes_conn_id = kubernetes_conn_id
        self.cluster_context = cluster_context
        self._namespace = namespace

    @property
    def namespace(self) -> str:
        if self._namespace is None:
            self._namespace = connection_namespace(self.kubernetes_conn_id)
        return self._namespace

    def _run(self, call: Callable[[KubeClient], Awaitable[T]]) -> T:
        hook = BroadcastKubernetesHook(self.kubernetes_conn_id, cluster_context=self.cluster_context)

        async def main() -> T:
            return await call(await hook.kube_client())

        try:
            return run_on_worker(main)
        except TransportError as exc:
            if exc.timed_out and not isinstance(exc, TimeoutError):
                raise ApiTimeout.of(exc) from exc  # the SDK's TimeoutError for an API timeout (N9)
            raise

    # ---- get / list / update / delete ------------------------------------------------------
    def get_job(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        """The job as `{apiVersion, kind, metadata, spec, status}`; `job_api.JobNotFound` if missing."""
        ns = namespace or self.namespace
        return self._run(lambda client: job_api.get_job(client, self.kind, ns, name))

    def list_jobs(self, namespace: str | None = None) -> list[dict[str, Any]]:
        """Every job of this kind in the namespace, sorted by name."""
        ns = namespace or self.namespace
        return self._run(lambda client: job_api.list_jobs(client, self.kind, ns))

    def update_job(self, name: str, patch: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]:
        """Apply a JSON merge patch (None deletes a key) to the job; returns the updated job.

        Raises InvalidSpecError (field paths) when the result is invalid; nothing is written then.
        """
        ns = namespace or self.namespace
        return self._run(lambda client: job_api.update_job(client, self.kind, ns, name, patch))

    def delete_job(self, name: str, namespace: str | None = None, *, delete_options: Any = None,
                   propagation_policy: str | None = None, grace_period_seconds: int | None = None,
                   preconditions_uid: str | None = None, dry_run: bool = False) -> dict[str, Any]:
        """Delete the job; its pods and services follow. Returns the job as it was before.

        `delete_options` may be a `V1DeleteOptions` or its dict form (camelCase or snake_case keys),
        as the SDK's `delete_job` takes it; the keyword arguments override it.
        """
        ns = namespace or self.namespace
        options = _delete_options_of(delete_options)
        kwargs: dict[str, Any] = {
            "propagation_policy": propagation_policy or options.get("propagation_policy"),
            "grace_period_seconds": (grace_period_seconds if grace_period_seconds is not None
                                     else options.get("grace_period_seconds")),
            "preconditions_uid": preconditions_uid or options.get("preconditions_uid"),
            "preconditions_resource_version": options.get("preconditions_resource_version"),
            "dry_run": dry_run or bool(options.get("dry_run")),
        }
        return self._run(lambda client: job_api.delete_job(client, self.kind, ns, name, **kwargs))

    # ---- conditions (the SDK's get_job_conditions / is_job_*) --------------------------------
    def get_job_conditions(self, job: JobRef, namespace: str | None = None) -> list[dict[str, Any]]:
        """`status.conditions` of the job (a name, or an object from get_job), or []."""
        obj = job if isinstance(job, Mapping) else self.get_job(job, namespace)
        return list((obj.get("status") or {}).get("conditions") or [])

    def has_condition(self, job: JobRef, condition_type: str, namespace: str | None = None) -> bool:
        """True when the job has a condition of that type with `status == "True"`."""
        return any(c.get("type") == condition_type and c.get("status") == "True"
                   for c in self.get_job_conditions(job, namespace))

    def is_job_created(self, job: JobRef, namespace: str | None = None) -> bool:
        return self.has_condition(job, "Created", namespace)

    def is_job_running(self, job: JobRef, namespace: str | None = None) -> bool:
        return self.has_condition(job, "Running", namespace)

    def is_job_restarting(self, job: JobRef, namespace: str | None = None) -> bool:
        return self.has_condition(job, "Restarting", namespace)

    def is_job_succeeded(self, job: JobRef, namespace: str | None = None) -> bool:
        return self.has_condition(job, "Succeeded", namespace)

    def is_job_failed(self, job: JobRef, namespace: str | None = None) -> bool:
        return self.has_condition(job, "Failed", namespace)

    def wait_for_job_conditions(self, name: str, namespace: str | None = None,
                                expected_conditions: Collection[str] | str | None = None, wait_timeout: float = 600,
                                polling_interval: float = 15,
                                callback: Callable[[dict[str, Any]], Any] | None = None) -> dict[str, Any]:
        """The job once it has any of `expected_conditions` (default: Succeeded, or Complete for a BroadcastJob).

        Woken by a watch of the job, and at least every `polling_interval` s, when `callback(job)`
        also runs. Raises JobFailedError (a RuntimeError) when the job is Failed and Failed was not
        expected, TimeoutError after `wait_timeout` s, and ValueError for a condition the kind never sets.
        """
        ns = namespace or self.namespace
        job_wait.expected_conditions(self.kind, expected_conditions)  # ValueError before any request
        return self._run(lambda client: job_wait.wait_for_conditions(
            client, self.kind, ns, name, expected=expected_conditions, wait_timeout=wait_timeout,
            polling_interval=polling_interval, callback=callback))

    # ---- pods, logs and events (the SDK's get_job_pods / get_job_pod_names / get_job_logs) ------
    def get_job_pods(self, name: str, namespace: str | None = None, is_master: bool = False,
                     replica_type: str | None = None, replica_index: int | None = None) -> list[dict[str, Any]]:
        """The job's pods, sorted by name; TFJob pods can be narrowed to the master, a replica type or index."""
        ns = namespace or self.namespace
        selection = job_pods.PodSelection(is_master, replica_type, replica_index)
        selection.selector(self.kind, name)  # ValueError before any request
        return self._run(lambda client: job_pods.list_job_pods(client, self.kind, ns, name, selection))

    def get_job_pod_names(self, name: str, namespace: str | None = None, is_master: bool = False,
                          replica_type: str | None = None, replica_index: int | None = None) -> list[str]:
        return [str(pod["metadata"]["name"])
                for pod in self.get_job_pods(name, namespace, is_master, replica_type, replica_index)]

    def get_job_logs(self, name: str, namespace: str | None = None, is_master: bool = True,
                     replica_type: str | None = None, replica_index: int | None = None, follow: bool = False,
                     container: str | None = None, verbose: bool = False, sink: Callable[[str], None] = print,
                     tail_lines: int | None = None, max_pods: int = job_pods.MAX_LOG_PODS) -> Any:
        """`{pod: log}` of the job's started pods (by default the master: TFJob's chief, or every BroadcastJob pod).

        The container is TFJob's `tensorflow`, or a BroadcastJob pod's first, unless `container` is
        given. `follow` streams each log to `sink` (`[Pod <name>]: <line>`) until the pods end.
        With `verbose`, returns `(logs, events)`: `{"<Kind> <name>" or "Pod <name>": [event lines]}`.
        `tail_lines` keeps the end of each log; more than `max_pods` pods is a ValueError.
        """
        ns = namespace or self.namespace
        selection = job_pods.PodSelection(is_master and self.kind == "TFJob", replica_type, replica_index)
        selection.selector(self.kind, name)

        async def logs(client: KubeClient) -> Any:
            pods = await job_pods.list_job_pods(client, self.kind, ns, name, selection)
            texts = await job_pods.job_logs(client, self.kind, ns, name, selection, container=container, follow=follow,
                                            sink=sink, tail_lines=tail_lines, max_pods=max_pods, listed=pods)
            if not verbose:
                return texts
            job = await job_api.get_job(client, self.kind, ns, name)
            return texts, await job_pods.job_events(client, self.kind, ns, job, pods[:max_pods])

        return self._run(logs)


_DELETE_KEYS = {"propagationPolicy": "propagation_policy", "gracePeriodSeconds": "grace_period_seconds",
                "dryRun": "dry_run"}


def _delete_options_of(value: Any) -> dict[str, Any]:
    """V1DeleteOptions (or its dict, either key style) as delete_job keyword arguments."""
    if value is None:
        return {}
    raw = value.to_dict() if hasattr(value, "to_dict") else value
    if not isinstance(raw, Mapping):
        raise ValueError(f"delete_options must be a V1DeleteOptions or a mapping, not {type(value).__name__}")
    options: dict[str, Any] = {_DELETE_KEYS.get(str(k), str(k)): v for k, v in raw.items() if v is not None}
    preconditions = options.pop("preconditions", None) or {}
    if preconditions.get("uid"):
        options["preconditions_uid"] = preconditions["uid"]
    version = preconditions.get("resourceVersion") or preconditions.get("resource_version")
    if version:
        options["preconditions_resource_version"] = version
    orphan = options.get("orphan_dependents", options.get("orphanDependents"))
    if orphan is not None:  # the deprecated form of propagationPolicy
        options.setdefault("propagation_policy", "Orphan" if orphan else "Background")
    return options
