"""Probe: peak memory of creating a TFJob (1 chief, 4 PS, N workers) with the batched passes, against all at once.

Run it ad hoc from tests/ (`python -m probes.tf_first_pass_memory [workers ...]`, default 1000 3000). Each
measurement runs in its own process, so the peak RSS is that measurement's:

* `batched`: the reconcile passes that create the job, one batch each, until a pass creates nothing; each
  pass sees the pods and Services of the earlier ones (Pending, as a watch cache holds them), and the
  previous plan stays alive during the next pass, as the engine's loop keeps it.
* `all-at-once`: every pod and Service built in one go with one TF_CONFIG renderer, as the first pass did
  before batching (TF_CONFIG lists every host, so this grows with the square of the replicas).

Peak traced allocation (tracemalloc) is what the passes allocated; RSS includes the interpreter. The last
column is the TF_CONFIG text of all pods together: what a cache of full pod specs holds once the job runs.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tracemalloc
from dataclasses import replace
from typing import Any

from support.tf_builders import NOW, make_pod, make_record, make_service, make_spec

from airflow_broadcast.reconcilers.observed import JobRecord, PodInfo, ServiceInfo
from airflow_broadcast.reconcilers.tf_job.children import build_pod, build_service
from airflow_broadcast.reconcilers.tf_job.cluster_config import TFConfigRenderer
from airflow_broadcast.reconcilers.tf_job.reconciler import reconcile_tf_job
from airflow_broadcast.specs.tf_job.spec import LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE, TFJobSpec


def job(workers: int) -> TFJobSpec:
    """Past the validation limit the replica count is set on the parsed spec: the reconciler has no cap."""
    spec = make_spec(replicas={"Chief": 1, "PS": 4, "Worker": 1})
    return replace(spec, replica_specs={**spec.replica_specs,
                                        "Worker": replace(spec.replica_specs["Worker"], replicas=workers)})


def _where(manifest: dict[str, Any]) -> tuple[str, str]:
    labels = manifest["metadata"]["labels"]
    return labels[LABEL_REPLICA_TYPE], labels[LABEL_REPLICA_INDEX]


def batched(spec: TFJobSpec, record: JobRecord) -> str:
    pods: list[PodInfo] = []
    services: list[ServiceInfo] = []
    passes = created = 0
    while True:
        plan = reconcile_tf_job(spec, record, pods, services, NOW + passes)
        passes += 1
        if not plan.create_pods and not plan.create_services:
            return f"{created} pods in {passes - 1} creating passes (+1 that creates nothing)"
        pods.extend(make_pod(spec.name, *_where(m), "Pending") for m in plan.create_pods)
        services.extend(make_service(spec.name, *_where(m)) for m in plan.create_services)
        created += len(plan.create_pods)
        if plan.status is not None:
            record = replace(record, status=plan.status)


def all_at_once(spec: TFJobSpec, record: JobRecord) -> str:
    renderer = TFConfigRenderer(spec)
    indexes = [(t, i) for t, r in spec.replica_specs.items() for i in range(r.replicas)]
    pods = [build_pod(spec, record, t, i, renderer=renderer) for t, i in indexes]
    services = [build_service(spec, record, t, i) for t, i in indexes]
    return f"{len(pods)} pods and {len(services)} services in one go"


def measure(mode: str, workers: int) -> None:
    spec = job(workers)
    record = make_record(spec)
    tracemalloc.start()
    what = (batched if mode == "batched" else all_at_once)(spec, record)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    renderer = TFConfigRenderer(spec)
    tf_config = sum(len(renderer.render(t, i) or "") for t, r in spec.replica_specs.items() for i in range(r.replicas))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"TFJob 1+4+{workers} {mode:>11}: {what}; peak {peak / 1e6:.1f} MB traced, process peak RSS "
          f"{rss_mb:.0f} MB; TF_CONFIG of all pods {tf_config / 1e6:.0f} MB")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        measure(argv[1], int(argv[2]))
        return
    for workers in [int(a) for a in argv] or [1000, 3000]:
        for mode in ("batched", "all-at-once"):
            subprocess.run([sys.executable, "-m", "probes.tf_first_pass_memory", "--one", mode, str(workers)],
                           check=True)


if __name__ == "__main__":
    main(sys.argv[1:])
