"""Probe: CPU-seconds of BroadcastJob reconcile passes per 1,000 pod events, at 1,000 and at 3,000 nodes.

Run it ad hoc (`python -m probes.cpu_per_event` from tests/); it prints the figures and asserts nothing about
time. The job first settles (its node table moves to parts once, an O(nodes) step per run). Each pass then
follows EVENTS_PER_PASS pod events (a burst the loop coalesces into one pass); the record and the parts are
carried from pass to pass as the executor would write them. Nodes and pods come as the informers hand them
out: journaled snapshots of a cache (support/journaled_cache.py).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from support.bcj_builders import NOW, make_nodes, make_pod, make_record, make_spec, started_status
from support.journaled_cache import JournaledCache

from airflow_broadcast.reconcilers.broadcast_job.reconciler import reconcile_broadcast_job
from airflow_broadcast.reconcilers.observed import PodInfo

EVENTS = 1000
EVENTS_PER_PASS = 10


def cpu_per_thousand_events(nodes: int) -> float:
    spec = make_spec()
    node_infos = JournaledCache({n.name: n for n in make_nodes(nodes)})
    pods: JournaledCache[PodInfo] = JournaledCache({n: make_pod(n, "Running") for n in node_infos.bucket})
    record = make_record(started_status(desired=nodes, active=nodes))
    parts: dict[str, Any] = {}
    for _ in range(2):  # settle: the first pass moves the node table to parts, the second reads them back
        plan = reconcile_broadcast_job(spec, record, node_infos.snapshot(), pods.snapshot(), NOW, parts=parts)
        record, parts = _applied(record, plan, parts)
    names = sorted(pods.bucket)
    spent = 0.0
    for start in range(0, EVENTS, EVENTS_PER_PASS):
        for name in names[start:start + EVENTS_PER_PASS]:
            pods.put(name, make_pod(name, "Succeeded"))
        began = time.process_time()
        plan = reconcile_broadcast_job(spec, record, node_infos.snapshot(), pods.snapshot(), NOW, parts=parts)
        spent += time.process_time() - began
        record, parts = _applied(record, plan, parts)
    return spent * 1000 / EVENTS


def _applied(record: Any, plan: Any, parts: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    parts = {**parts, **plan.record_parts}
    if plan.status is not None:
        record = make_record(plan.status)
    return record, parts


def main() -> None:
    rounds = 3  # the least of three rounds each: the machine is noisy, and noise only adds
    small = min(cpu_per_thousand_events(1000) for _ in range(rounds))
    large = min(cpu_per_thousand_events(3000) for _ in range(rounds))
    print(f"CPU-s per 1,000 pod events: 1,000 nodes {small:.3f}, 3,000 nodes {large:.3f}, ratio {large / small:.2f}")


if __name__ == "__main__":
    sys.exit(main())
