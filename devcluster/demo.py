"""`make demo`: a local cluster with fake nodes, one example DAG through real Airflow, a per-node table."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from devcluster.airflow_env import AirflowEnv
from devcluster.control_plane import REPO_ROOT, ClusterStartError, ControlPlane
from devcluster.fake_nodes import FakeNode, create_nodes

DEMO_DAG = "example_broadcast_job_prepull"
DEMO_TASK = "prepull_images"
DEMO_DAGS_FOLDER = REPO_ROOT / "example_dags"


def _ensure_nodes(kubeconfig: str, count: int) -> None:
    from kubernetes import client, config

    api = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    existing = {n.metadata.name for n in api.list_node().items}
    missing = [FakeNode(name=f"node-{i:04d}") for i in range(count) if f"node-{i:04d}" not in existing]
    create_nodes(kubeconfig, missing)
    if "demo" not in {n.metadata.name for n in api.list_namespace().items}:
        api.create_namespace({"metadata": {"name": "demo"}})


def print_table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    print("  ".join(c.upper().ljust(widths[c]) for c in columns))
    for row in rows:
        print("  ".join(str(row.get(c, "")).ljust(widths[c]) for c in columns))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster.demo")
    parser.add_argument("--nodes", type=int, default=20)
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    try:
        info = ControlPlane().start()
    except ClusterStartError as exc:
        print(f"cluster failed to start: {exc}", file=sys.stderr)
        return 1
    _ensure_nodes(info.kubeconfig, args.nodes)
    print(f"cluster ready with {args.nodes} fake nodes in {time.monotonic() - t0:.1f} s ({info.server})")
    env = AirflowEnv.create(REPO_ROOT / ".airflow-demo", DEMO_DAGS_FOLDER, info.kubeconfig, fresh=False)
    t1 = time.monotonic()
    result = env.dags_test(DEMO_DAG)
    print(f"`airflow dags test {DEMO_DAG}`: {result.state} in {time.monotonic() - t1:.1f} s")
    summary = result.xcoms.get(DEMO_TASK)
    if not summary:
        print("\n".join(result.output.splitlines()[-40:]))
        return 1
    print(f"\nBroadcastJob {summary['namespace']}/{summary['name']}: phase {summary['phase']}, "
          f"{summary['succeeded']} succeeded, {summary['failed']} failed of {summary['desired']} desired "
          f"({summary['startTime']} → {summary['completionTime']})\n")
    rows = [{"node": node, "pod": r.get("pod", ""), "phase": r.get("phase", ""), "exit": r.get("exitCode", ""),
             "reason": r.get("reason", ""), "restarts": r.get("restarts", 0)}
            for node, r in sorted(summary["nodes"].items())]
    rows += [{"node": node, "phase": "ineligible", "reason": why}
             for node, why in sorted(summary["ineligibleNodes"].items())]
    print_table(rows, ["node", "pod", "phase", "exit", "reason", "restarts"])
    print(f"\nexport KUBECONFIG={info.kubeconfig}   # the cluster stays up; `make cluster-down` stops it")
    return 0 if result.state == "success" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
