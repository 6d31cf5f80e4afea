"""Crash safety, full seeded run: `python -m benchmarks.crash [--seed N]` writes its section of docs/reliability.md.

Real api-server, scheduler, dag-processor and triggerer processes (SQLite, LocalExecutor) run a
200-node BroadcastJob and a TFJob with 1 chief, 2 PS and 20 workers, once without a crash (the
baseline) and then several times while the triggerer is SIGKILLed at seeded points; after each kill
a new triggerer starts or one on standby takes over. Every figure in the report is measured here.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import sys
import time
import uuid
from typing import Any

from kubernetes import client, config

from devcluster.airflow_env import AirflowEnv
from devcluster.control_plane import REPO_ROOT, ControlPlane
from devcluster.fake_nodes import FakeNode, create_nodes, delete_nodes

REPORT = REPO_ROOT / "benchmarks" / "results" / "reliability" / "crash.md"
HOME = REPO_ROOT / ".airflow-bench" / "crash"
sys.path.insert(0, str(REPO_ROOT / "tests" / "e2e"))


def _kubeconfig() -> str:
    """The running local cluster KUBECONFIG points at, else this checkout's (started if needed)."""
    plane = ControlPlane.owns_kubeconfig(os.environ.get("KUBECONFIG", "")) if os.environ.get("KUBECONFIG") else None
    info = plane.running() if plane is not None else None
    return (info or ControlPlane().start()).kubeconfig


def _seconds(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s / {max(values):.2f} s" if values else "n/a"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--ps", type=int, default=2)
    parser.add_argument("--workers", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3, help="crashed runs of each kind")
    parser.add_argument("--out", default=str(REPORT))
    opts = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the stack and remove the nodes on the way out
    from crash_jobs import broadcast_job, tf_job
    from crash_run import CrashRunner, RunResult, crash_stack, seeded_points, xcom_signature

    rng = random.Random(opts.seed)
    kubeconfig = _kubeconfig()
    core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    pool = uuid.uuid4().hex[:6]
    nodes = create_nodes(kubeconfig, [FakeNode(f"crash{pool}-{i:04d}", labels={"crash-pool": pool})
                                      for i in range(opts.nodes)], workers=16)
    from tests.support.waits import wait_nodes_schedulable

    wait_nodes_schedulable(core, nodes, timeout=600)
    namespaces: list[str] = []
    rows: list[tuple[str, int, str, RunResult, bool]] = []
    try:
        env = AirflowEnv.create(HOME, REPO_ROOT / "tests" / "dags", kubeconfig)
        with crash_stack(env) as stack:
            stack.wait_for_dag("crash_bcj")
            stack.wait_for_dag("crash_tf")
            runner = CrashRunner(stack, core)
            selector = {"crash-pool": pool}
            jobs = [(broadcast_job("crash", nodes, selector), 3, ("unwritten", "finished")),
                    (tf_job("crash", 1, opts.ps, opts.workers, selector=selector), 1, ("unwritten", "finished"))]
            for job, pod_kills, extra in jobs:
                baseline: Any = None
                for run in range(opts.runs + 1):
                    namespaces.append(f"crash-{uuid.uuid4().hex[:8]}")
                    core.create_namespace({"metadata": {"name": namespaces[-1]}})
                    later = extra if run % 2 else (*extra[:-1], "ttl")
                    mode = ("standby", "restart")[run % 2]
                    points = seeded_points(rng, job.size, pod_kills, later, mode) if run else []
                    result = runner.run(job, namespaces[-1], points)
                    signature = xcom_signature(result, namespaces[-1])
                    baseline = signature if run == 0 else baseline
                    same = signature == baseline
                    rows.append((job.kind, job.size, namespaces[-1], result, same))
                    print(f"{job.kind} run {run}: {result.describe()}; XCom equal to the baseline: {same}",
                          flush=True)
    finally:
        for name in namespaces:
            core.delete_namespace(name, propagation_policy="Background")
        delete_nodes(kubeconfig, nodes)
    with open(opts.out, "w") as out:
        out.write(report(opts, rows))
    print(f"wrote {opts.out}")


def report(opts: Any, rows: list[tuple[str, int, str, Any, bool]]) -> str:
    kills = [k for *_, r, _ in rows for k in r.kills]
    acted = [k.acted_after for k in kills if k.acted_after is not None and k.point.what in ("pods", "unwritten")]
    assigned = [k.assigned_after for k in kills if k.assigned_after is not None]
    lines = [
        "## The triggerer crashes\n",
        f"Generated by `python -m benchmarks.crash --seed {opts.seed}` on {time.strftime('%Y-%m-%d')}: real Airflow "
        "(api-server, scheduler, dag-processor, triggerer; SQLite, LocalExecutor; triggerer heartbeat 1 s, health "
        "check threshold 4 s) against the local cluster. Each kind runs once without a crash (the baseline), then "
        f"{opts.runs} times while the triggerer is SIGKILLed (process group, by PID) at seeded points: `unwritten` "
        "(pods exist that the record's status does not count yet), `pods` (at least N pods created, N seeded; "
        "inside a create batch), `finished` (the status says finished: the trigger fires its event around the "
        "kill) or `ttl` (the resumed task is deleting the record, ttlSecondsAfterFinished 0). After a kill a new "
        "triggerer starts (`restart`) or one already on standby takes over (`standby`).\n",
        "### Summary\n",
        "| figure | value |", "|---|---|",
        f"| triggerer kills | {len(kills)} |",
        f"| duplicate pods (a node or replica index with more than one pod uid; a name with more than one uid) | "
        f"{sum(r.pods.duplicate_slots + r.pods.duplicate_names for *_, r, _ in rows)} |",
        f"| missed nodes and replica indexes | {sum(len(r.pods.missed) for *_, r, _ in rows)} |",
        f"| runs whose task succeeded | {sum(r.state == 'success' for *_, r, _ in rows)} of {len(rows)} |",
        f"| crashed runs whose XCom equals the baseline's (times, uid, namespace, pod-name hash aside) | "
        f"{sum(same for *_, r, same in rows if r.kills)} of {sum(bool(r.kills) for *_, r, _ in rows)} |",
        f"| takeover, kill to the trigger row on a live triggerer (p50 / max) | {_seconds(assigned)} |",
        f"| takeover, kill to the first pod create or status write of the new trigger (p50 / max) | "
        f"{_seconds(acted)} |\n",
        "### Runs\n",
        "| kind | size | run | task | seconds | pods created | duplicates | missed | XCom = baseline | kills |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, (kind, size, _, r, same) in enumerate(rows):
        run = sum(k == kind for k, *_ in rows[:i])  # 0 is the kind's baseline
        lines.append(f"| {kind} | {size} | {run or 'baseline'} | {r.state} | {r.seconds:.0f} | "
                     f"{r.pods.created} | {r.pods.duplicate_slots + r.pods.duplicate_names} | {len(r.pods.missed)} | "
                     f"{'yes' if same else 'NO'} | {len(r.kills)} |")
    lines += ["\n### Kills\n", "| kind | point | mode | pods created | pods in status | phase | "
              "to live triggerer | to first action |", "|---|---|---|---|---|---|---|---|"]
    for kind, _, _, r, _ in rows:
        for k in r.kills:
            where = f"{k.point.what} {k.point.at}" if k.point.what == "pods" else k.point.what
            lines.append(f"| {kind} | {where} | {k.point.mode} | {k.pods} | {k.counted} | {k.phase or '-'} | "
                         f"{_opt(k.assigned_after)} | {_opt(k.acted_after)} |")
    lines.append("\nTakeover to first action counts only kills before the job finished (afterwards there is nothing "
                 "left to do), and only actions after the trigger row named a live triggerer again (and at least 0.5 s "
                 "after the kill), as earlier ones are the dead triggerer's requests still in flight. It includes the "
                 "new trigger's start: its watches list and sync before the first pass.\n")
    return "\n".join(lines)


def _opt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


if __name__ == "__main__":
    main()
