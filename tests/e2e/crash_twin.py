"""Two copies of one trigger at once, each in its own process, as two triggerers would run them.

`python crash_twin.py submit <kind> <namespace> <manifest.json>` creates the job record and prints the
trigger's kwargs; `python crash_twin.py run <kwargs.json>` runs a real `JobReconcileTrigger.run()`
from those kwargs (as a triggerer rebuilds it) and prints its one event.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from airflow_broadcast.cluster.job_submission import submit_job
from airflow_broadcast.cluster.kinds.registry import driver_for, options_for
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook
from airflow_broadcast.triggers.job_reconcile import JobReconcileTrigger, JobTriggerArgs


async def submit(kind: str, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
    client = await BroadcastKubernetesHook("kubernetes_default").kube_client()
    job_kind = driver_for(kind).kind
    job = job_kind.parse(manifest, namespace=namespace, default_namespace=namespace)
    record, _ = await submit_job(client, job_kind, job.name, job.namespace, job.manifest, submitter="crash-twin",
                                 reattach=False)
    args = JobTriggerArgs(kind=job_kind.name, namespace=namespace, record_name=record.name, uid=record.uid,
                          options=options_for(kind), resync_seconds=5.0)
    return JobReconcileTrigger(args).serialize()[1]


async def run(kwargs: dict[str, Any]) -> Any:
    async for event in JobReconcileTrigger(**kwargs).run():
        return event.payload
    return None


def main(argv: list[str]) -> None:
    if argv[0] == "submit":
        kind, namespace, manifest = argv[1], argv[2], json.loads(Path(argv[3]).read_text())
        print(json.dumps(asyncio.run(submit(kind, namespace, manifest))))
    else:
        print(json.dumps(asyncio.run(run(json.loads(Path(argv[1]).read_text())))))


if __name__ == "__main__":
    main(sys.argv[1:])
