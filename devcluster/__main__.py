"""Command line: `python -m devcluster up|down|status|build|nodes`."""

from __future__ import annotations

import argparse
import sys
import time

from devcluster.control_plane import ClusterStartError, ControlPlane, build_binaries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the cluster (or reuse a running one) and print the KUBECONFIG export")
    up.add_argument("--nodes", type=int, default=0, help="fake nodes to make sure exist (named node-0000...)")
    up.add_argument("--upstream", action="store_true",
                    help="also build (or reuse) and start the real OpenKruise and training-operator controllers")
    sub.add_parser("down", help="stop the cluster's processes by PID")
    sub.add_parser("status", help="say whether the cluster runs")
    sub.add_parser("build", help="build or reuse the cached binaries and print their directory")
    args = parser.parse_args(argv)

    plane = ControlPlane()
    if args.command == "build":
        t0 = time.monotonic()
        print(build_binaries())
        print(f"binaries ready in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        return 0
    if args.command == "up":
        t0 = time.monotonic()
        try:
            info = plane.start()
        except ClusterStartError as exc:
            print(f"cluster failed to start: {exc}", file=sys.stderr)
            return 1
        from devcluster.crds import install_crds

        install_crds(info.kubeconfig)
        if args.nodes:
            from kubernetes import client, config

            from devcluster.fake_nodes import FakeNode, create_nodes

            api = client.CoreV1Api(config.new_client_from_config(config_file=info.kubeconfig))
            existing = {n.metadata.name for n in api.list_node().items}
            wanted = [FakeNode(name=f"node-{i:04d}") for i in range(args.nodes)]
            create_nodes(info.kubeconfig, [n for n in wanted if n.name not in existing])
        if args.upstream and _start_upstream(plane) != 0:
            return 1
        print(f"cluster up in {time.monotonic() - t0:.1f} s (apiserver {info.server})", file=sys.stderr)
        print(f"export KUBECONFIG={info.kubeconfig}")
        return 0
    if args.command == "down":
        _stop_upstream(plane)
        print("stopped" if plane.stop() else "not running")
        return 0
    running = plane.running()
    print(f"running: export KUBECONFIG={running.kubeconfig}" if running else "not running")
    return 0 if running else 3


def _start_upstream(plane: ControlPlane) -> int:
    from devcluster.upstream import UpstreamControllers, UpstreamStartError

    try:
        upstream = UpstreamControllers(plane).start()
    except UpstreamStartError as exc:
        print(f"upstream controllers failed to start: {exc}", file=sys.stderr)
        return 1
    ready = ", ".join(f"{name} in {seconds} s" for name, seconds in upstream.ready_seconds.items())
    print(f"upstream controllers ready ({ready or 'already running'}); logs in {upstream.directory}/logs",
          file=sys.stderr)
    return 0


def _stop_upstream(plane: ControlPlane) -> None:
    """The real controllers first (if any), while the API they unregister their webhooks from still runs."""
    from devcluster.upstream import UpstreamControllers

    if UpstreamControllers(plane).stop():
        print("upstream controllers stopped", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
