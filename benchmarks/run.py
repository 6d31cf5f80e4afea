"""Benchmarks: `python -m benchmarks.run all|compare|finish|triggerer|tfjob|bcj|detection|overhead|report [options]`.

`all` (what `make bench` runs) starts a private control plane (controller-manager at its default client
limits), runs every benchmark on it, stops it by PID, writes benchmarks/results/*.json and
docs/performance.md with its plots, and prints the side-by-side ratio table. `finish` runs only the engine's
jobs to all Succeeded (`--complete-rounds` each), for detection and cost at fleet sizes. `--quick` runs small
sizes. `overhead` (not part of `all`) splits the engine's overhead into parts (`overhead_storms`). The
other commands run one piece, on the private plane or on `--kubeconfig`. Nothing asserts
a time: the figures are measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from benchmarks import report
from benchmarks.common import BenchPlane, load, machine, save, start_bench_plane
from benchmarks.plane_share import cpu_quota, lowered_priority

QUICK = {"sizes": "50", "rounds": 1, "complete_rounds": 1, "counts": "10,50", "window": 20.0,
         "workers": 50, "ps": 2, "nodes": 50, "runs": 3}
FULL = {"sizes": "1000,3000", "rounds": 2, "complete_rounds": 2, "counts": "10,100,1000", "window": 250.0,
        "workers": 1000, "ps": 4, "nodes": 1000, "runs": 5}
# FULL's triggerer window outlasts a watch (240 s), so that each window holds a renewal of every shared watch.


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _compare(kubeconfig: str, a: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.compare import compare

    return compare(kubeconfig, _ints(a.sizes), a.rounds, complete_rounds=a.complete_rounds,
                   plane_pids=a.plane_pids)


def _finish(kubeconfig: str, a: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.compare import compare

    engines = ("engine-affinity", "engine-nodename")
    return compare(kubeconfig, _ints(a.sizes), 0, methods=engines, complete_rounds=a.complete_rounds,
                   plane_pids=a.plane_pids)


def _overhead(kubeconfig: str, a: argparse.Namespace) -> dict[str, Any]:
    """The engine's overhead split into parts: the raw storm, watched, with the engine's pods, and the engine."""
    from benchmarks.compare import compare
    from benchmarks.methods import PINNING
    from benchmarks.overhead_storms import SHAPED, WATCHED

    methods = tuple(a.methods.split(",")) if a.methods else ("raw-nodename", WATCHED, SHAPED, "engine-nodename-lifted")
    unknown = sorted(set(methods) - set(PINNING))
    if unknown:
        raise SystemExit(f"--methods: unknown method(s) {', '.join(unknown)}; known: {', '.join(PINNING)}")
    return compare(kubeconfig, _ints(a.sizes), a.rounds, methods=methods, complete_rounds=0,
                   plane_pids=a.plane_pids)


def _triggerer(kubeconfig: str, a: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.triggerer_load import bench_triggerer

    return bench_triggerer(kubeconfig, _ints(a.counts), window=a.window)


def _tfjob(kubeconfig: str, a: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.e2e import bench_tfjob

    return bench_tfjob(kubeconfig, a.workers, a.ps)


def _bcj(kubeconfig: str, a: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.e2e import bench_bcj

    return bench_bcj(kubeconfig, a.nodes)


def _detection(kubeconfig: str, a: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.detection import bench_detection

    return bench_detection(kubeconfig, runs=a.runs)


PIECES: dict[str, tuple[str, Callable[[str, argparse.Namespace], dict[str, Any]]]] = {
    "compare": ("compare", _compare), "finish": ("finish", _finish),
    "triggerer": ("triggerer", _triggerer), "tfjob": ("tf_job", _tfjob),
    "bcj": ("broadcast_job", _bcj), "detection": ("detection", _detection), "overhead": ("overhead", _overhead)}
ON_REQUEST = {"overhead"}  # pieces `all` leaves out
STORMS = {"compare", "finish", "overhead"}  # pieces run with the private plane under its CPU quota


def run_piece(name: str, kubeconfig: str, args: argparse.Namespace, plane: BenchPlane | None = None) -> dict[str, Any]:
    """One piece; the triggerer piece runs with the private plane at `--plane-nice` (see lowered_priority), the
    storms with it under `--plane-cpus` (see plane_share)."""
    result_name, body = PIECES[name]
    cluster = ("a private control plane; kube-controller-manager at its default client limits (20 QPS, burst 30)"
               if args.kubeconfig is None else "an existing cluster, with its own controller-manager limits")
    info = plane.running() if plane is not None else None
    pids = list(info.pids.values()) if info else []
    args.plane_pids = dict(info.pids) if info else {}  # what each storm's round cost the plane (plane_cost)
    nice = args.plane_nice if name == "triggerer" else 0
    cores = plane_cpus(args) if name in STORMS else 0.0
    with lowered_priority(pids if nice else (), nice) as lowered, cpu_quota(pids, cores) as quota:
        result = {"machine": machine(kubeconfig), "cluster": cluster, **body(kubeconfig, args)}
    if name == "triggerer":
        result["plane_nice"] = args.plane_nice if lowered else 0
    if name in STORMS:
        result["plane_cpus"] = quota
    save(result_name, result)
    return result


def plane_cpus(args: argparse.Namespace) -> float:
    """The plane's quota for the storms: by default the machine less half a core, which the clients keep."""
    if args.plane_cpus is not None:
        return max(0.0, float(args.plane_cpus))
    return max(1.0, (os.cpu_count() or 2) - 0.5)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    p.add_argument("name", choices=["all", "report", *PIECES])
    p.add_argument("--quick", action="store_true", help="small sizes (a few minutes)")
    p.add_argument("--kubeconfig", help="run on this cluster instead of a private control plane")
    p.add_argument("--skip", default="", help="pieces `all` leaves out, comma-separated")
    p.add_argument("--sizes", help="node counts of the comparison (comma-separated)")
    p.add_argument("--rounds", type=int, help="interleaved rounds to all Running per size")
    p.add_argument("--complete-rounds", type=int, help="rounds to all Succeeded per size")
    p.add_argument("--methods", help="methods of `overhead` (comma-separated; default: the storms and the engine)")
    p.add_argument("--counts", help="idle job counts of the triggerer benchmark (comma-separated)")
    p.add_argument("--window", type=float, help="seconds each triggerer step is measured over")
    p.add_argument("--workers", type=int, help="TFJob workers")
    p.add_argument("--ps", type=int, help="TFJob parameter servers")
    p.add_argument("--nodes", type=int, help="nodes of the `airflow dags test` BroadcastJob")
    p.add_argument("--runs", type=int, help="DAG runs of the detection benchmark")
    p.add_argument("--plane-nice", type=int, default=10,
                   help="niceness of the private control plane while the triggerer benchmark runs (0: unchanged)")
    p.add_argument("--plane-cpus", type=float,
                   help="CPUs the private control plane may use while the storms run (cgroup quota; 0: no quota; "
                        "default: all cores but half of one)")
    p.set_defaults(plane_pids={})  # set by run_piece: the private plane's processes, whose CPU each storm round bills
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the private control plane on the way out
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.name != "report":
        skipped = {*args.skip.split(","), *ON_REQUEST}
        names = [n for n in PIECES if n not in skipped] if args.name == "all" else [args.name]
        plane = None
        kubeconfig = args.kubeconfig
        if kubeconfig is None:
            plane, kubeconfig = start_bench_plane()
        try:
            for name in names:
                result = run_piece(name, kubeconfig, args, plane)
                print(json.dumps({k: v for k, v in result.items() if k not in ("runs", "table", "rows")},
                                 indent=1, default=str)[:4000], flush=True)
        finally:
            if plane is not None:
                plane.stop()
    if args.name in ("all", "report"):
        print(f"wrote {report.write()}")
    compared = load("compare")
    if compared:
        report.print_table(compared["table"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
