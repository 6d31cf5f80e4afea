"""Probe: peak memory of a TFJob's first reconcile pass (1 chief, 4 PS, WORKERS workers), in this process.

Run it ad hoc (`python -m probes.tf_first_pass_memory [workers]` from tests/): it prints the pass's peak
traced allocation (tracemalloc) and the process's peak RSS, and the size of the plan's pods.
"""

from __future__ import annotations

import json
import resource
import sys
import tracemalloc

from support.tf_builders import make_record, make_spec

from airflow_broadcast.reconcilers.tf_job.reconciler import reconcile_tf_job


def main() -> None:
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    spec = make_spec(replicas={"Chief": 1, "PS": 4, "Worker": workers})
    record = make_record(spec)
    tracemalloc.start()
    plan = reconcile_tf_job(spec, record, [], [], 1_800_000_000.0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    pods_bytes = sum(len(json.dumps(p)) for p in plan.create_pods)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"TFJob 1+4+{workers}: {len(plan.create_pods)} pods, {pods_bytes / 1e6:.1f} MB as JSON, "
          f"pass peak {peak / 1e6:.1f} MB traced, process peak RSS {rss_mb:.0f} MB")


if __name__ == "__main__":
    main()
