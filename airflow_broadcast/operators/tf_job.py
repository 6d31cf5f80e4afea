"""TFJobOperator: run a Kubeflow TFJob manifest, with Airflow as the training-operator."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_broadcast.cluster.kinds.registry import options_from
from airflow_broadcast.cluster.kinds.tf_job import check_local_queue, check_pod_group_api
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.operators.job_operator import ReconciledJobOperator
from airflow_broadcast.reconcilers.kind import ParsedJob
from airflow_broadcast.reconcilers.tf_job.gang_scheduling import GangScheduler, gang_scheduler
from airflow_broadcast.reconcilers.tf_job.options import TFJobOptions
from airflow_broadcast.specs.field_errors import InvalidSpecError, invalid
from airflow_broadcast.specs.manifest_text import parse_manifest
from airflow_broadcast.specs.name_rules import is_valid_label_value
from airflow_broadcast.specs.tf_job.spec import QUEUE_NAME_LABEL
from airflow_broadcast.specs.tf_job.validation import tf_job_warnings

DEFAULTS = TFJobOptions()
COMPAT_SWITCHES = ("compat_succeeded_then_failed", "compat_recreate_succeeded", "compat_exitcode_ignores_backoff")


def tf_job_options(cluster_domain: str, compat: bool, tf_options: Mapping[str, Any] | None = None) -> TFJobOptions:
    """The switches of the operator and the sensor, as the engine's options (unknown switches: ValueError).

    `compat` turns on the three v1.9 behaviours; `tf_options` sets any field of TFJobOptions,
    e.g. `exclude_evaluator_from_cluster`, `sparse_ps_empty_list` or `gang_scheduler`.
    """
    return options_from(TFJobOptions, {"cluster_domain": cluster_domain, **dict.fromkeys(COMPAT_SWITCHES, compat),
                                       **dict(tf_options or {})})


def with_queue_label(manifest: Mapping[str, Any], queue_name: str) -> dict[str, Any]:
    """The manifest plus the Kueue queue label, as the Kubeflow SDK's `queue_name` adds it."""
    problems = is_valid_label_value(queue_name)
    if not queue_name or problems:
        reason = "; ".join(problems) or "must not be empty"
        name = str((manifest.get("metadata") or {}).get("name") or "")
        raise InvalidSpecError("TFJob", name, [invalid("queue_name", queue_name, reason)])
    labelled = copy.deepcopy(dict(manifest))
    metadata = labelled.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), QUEUE_NAME_LABEL: queue_name}
    return labelled


class TFJobOperator(ReconciledJobOperator):
    """Distributed TensorFlow: PS/Worker/Chief/Master/Evaluator pods, one headless Service each, TF_CONFIG.

    Returns (XCom) name, namespace, uid, phase (Created, Running, Restarting, Succeeded,
    Failed or Suspended), conditions, replicaStatuses, startTime, completionTime and
    `failure` ({replicaType, index, pod, exitCode, reason, message}). A failed job fails the
    task with that cause and the log tail of the failing replica.

    :param cluster_domain: appended to service hosts in TF_CONFIG (training-operator's CUSTOM_CLUSTER_DOMAIN).
    :param compat: reproduce training-operator v1.9 defects that are fixed by default
        (re-create succeeded replicas, ExitCode restarts ignore backoffLimit, Failed after Succeeded).
    :param tf_options: further engine switches: `exclude_evaluator_from_cluster`, `sparse_ps_empty_list`,
        `compat_cleanup_ignores_policy_on_failure` (training-operator <= 1.9.3 deleted all pods on failure),
        and gang scheduling: `gang_scheduler` ("volcano" or "scheduler-plugins") with an optional
        `gang_scheduler_name` (the schedulerName its pods get).
    :param queue_name: a Kueue LocalQueue: sets the `kueue.x-k8s.io/queue-name` label on the job, after
        checking that the queue exists (a missing queue or no permission to look only warns). (templated)
    :param get_logs: stream the `tensorflow` container's log of the chief (or master, else worker 0) into the
        task log while the job runs, capped in rate and line length.
    """

    kind = "TFJob"
    job_options: TFJobOptions
    template_fields: Sequence[str] = (*ReconciledJobOperator.template_fields, "queue_name")

    def __init__(self, *, cluster_domain: str = DEFAULTS.cluster_domain, compat: bool = False,
                 tf_options: Mapping[str, Any] | None = None, queue_name: str | None = None, get_logs: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.get_logs = get_logs
        self.cluster_domain = cluster_domain
        self.compat = compat
        self.tf_options = dict(tf_options or {})
        self.queue_name = queue_name
        self.job_options = tf_job_options(cluster_domain, compat, self.tf_options)
        self._gang_scheduler()  # unknown switches or schedulers fail when the DAG is parsed

    def parse(self, manifest: Mapping[str, Any] | str, namespace: str | None, default_namespace: str) -> ParsedJob:
        if self.queue_name:
            decoded: list[str] = []  # duplicate keys can only be seen in the text
            manifest = with_queue_label(parse_manifest(manifest, what="TFJob manifest", warnings=decoded),
                                        self.queue_name)
            for warning in decoded:
                self.log.warning("%s", warning)
        job = super().parse(manifest, namespace, default_namespace)
        for warning in tf_job_warnings(job.manifest):
            self.log.warning("%s", warning)
        return job

    def _gang_scheduler(self) -> GangScheduler | None:
        return gang_scheduler(self.job_options.gang_scheduler, self.job_options.gang_scheduler_name)

    async def before_submit(self, client: KubeClient, job: ParsedJob) -> list[str]:
        gang = self._gang_scheduler()
        if gang is not None:
            await check_pod_group_api(client, job.namespace, gang.api_version)
        warnings = await super().before_submit(client, job)
        if not self.queue_name:
            return warnings
        warning = await check_local_queue(client, job.namespace, self.queue_name)
        return [*warnings, warning] if warning else warnings
