"""Start and stop the real OpenKruise and training-operator controllers beside a running local control plane.

They serve as the oracle of the differential tests and as the controllers of hand-off mode. Both run on
loopback as processes of this machine with the cluster's admin kubeconfig; their PIDs, ports and logs live
in `<cluster state dir>/upstream/`, and they are stopped by PID only. Nothing here is built or started unless
asked for (`python -m devcluster up --upstream`, `make cluster-upstream`, `make differential`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

from devcluster.control_plane import ClusterInfo, ControlPlane, _http_ok, _pid_alive, _signal, free_ports
from devcluster.upstream_setup import (
    KRUISE_NAMESPACE,
    TRAINING_NAMESPACE,
    copy_training_operator_certs,
    ensure_namespace,
    install_crd_files,
    install_kruise_webhooks,
    prepare_training_operator,
    remove_webhooks,
)

KRUISE = "kruise"
TRAINING_OPERATOR = "training-operator"
CONTROLLERS = (KRUISE, TRAINING_OPERATOR)
BINARY = {KRUISE: "kruise-manager", TRAINING_OPERATOR: "training-operator"}


class UpstreamStartError(RuntimeError):
    """A controller could not be built or did not become ready; the message carries its log's tail."""


@dataclass
class UpstreamInfo:
    """The running controllers: enough to find their logs, probe them and stop them."""

    directory: str
    caches: dict[str, str] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    binaries: dict[str, str] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    ready_seconds: dict[str, float] = field(default_factory=dict)


def build_upstream(which: str = "all") -> dict[str, Path]:
    """Build or reuse the cached controllers; returns each one's cache directory (bin/, crds/, webhook/)."""
    script = Path(__file__).resolve().parent / "build-upstream.sh"
    result = subprocess.run(["bash", str(script), which], stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise UpstreamStartError(f"building the upstream controllers failed (exit {result.returncode})")
    caches = {}
    for line in result.stdout.splitlines():
        name, _, directory = line.partition(" ")
        caches[name] = Path(directory)
    return caches


class UpstreamControllers:
    """The real controllers of one local cluster."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.dir = plane.dir / "upstream"
        self.state_file = self.dir / "state.json"

    def info(self) -> UpstreamInfo | None:
        try:
            return UpstreamInfo(**json.loads(self.state_file.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def running(self) -> UpstreamInfo | None:
        """The info when every recorded controller process is alive and healthy."""
        info = self.info()
        if info is None or not info.pids:
            return None
        for name, pid in info.pids.items():
            if not _pid_alive(pid, info.binaries[name]) or not _http_ok(self._health_url(info, name)):
                return None
        return info

    def start(self, controllers: Sequence[str] = CONTROLLERS, timeout: float = 120.0,
              attempts: int = 4) -> UpstreamInfo:
        """Build (or reuse) and start the controllers; returns when each one's readiness probe passes.

        A start in which a controller exits is tried again (up to `attempts` in all): training-operator
        v1.9.0, restarted right after a stop, sometimes shuts itself down during start-up and panics on the
        way out.
        """
        for _ in range(attempts - 1):
            try:
                return self._start_once(controllers, timeout)
            except UpstreamStartError as exc:
                if "exited during start" not in str(exc):
                    raise
                print(f"upstream controllers: {str(exc).splitlines()[0]}; starting again", flush=True)
        return self._start_once(controllers, timeout)

    def _start_once(self, controllers: Sequence[str], timeout: float) -> UpstreamInfo:
        cluster = self.plane.running()
        if cluster is None:
            raise UpstreamStartError(f"no running control plane in {self.plane.dir}")
        existing = self.running()
        if existing is not None and set(controllers) <= set(existing.pids):
            return existing
        self.stop()
        caches = build_upstream("all" if len(controllers) > 1 else controllers[0])
        (self.dir / "logs").mkdir(parents=True, exist_ok=True)
        info = UpstreamInfo(directory=str(self.dir), caches={k: str(v) for k, v in caches.items()})
        try:
            for name in controllers:
                t0 = time.monotonic()
                {KRUISE: self._start_kruise, TRAINING_OPERATOR: self._start_training_operator}[name](
                    cluster, info, caches[name], time.monotonic() + timeout)
                info.ready_seconds[name] = round(time.monotonic() - t0, 2)
                self._save(info)
        except BaseException:
            self.stop()
            raise
        return info

    # ---- the two controllers --------------------------------------------------------------
    def _start_kruise(self, cluster: ClusterInfo, info: UpstreamInfo, cache: Path, deadline: float) -> None:
        kubeconfig = cluster.kubeconfig
        install_crd_files(kubeconfig, sorted((cache / "crds").glob("*.yaml")))
        ensure_namespace(kubeconfig, KRUISE_NAMESPACE)
        install_kruise_webhooks(kubeconfig, cache / "webhook" / "manifests.yaml")
        ports = free_ports(f"{KRUISE}-{p}" for p in ("metrics", "health", "webhook"))
        info.ports.update(ports)
        env = {"POD_NAMESPACE": KRUISE_NAMESPACE, "WEBHOOK_HOST": "127.0.0.1",
               "WEBHOOK_PORT": str(ports[f"{KRUISE}-webhook"]), "WEBHOOK_CERT_DIR": str(self.dir / "kruise-certs")}
        args = ["--enable-leader-election=false", f"--metrics-addr=127.0.0.1:{ports[f'{KRUISE}-metrics']}",
                f"--health-probe-addr=127.0.0.1:{ports[f'{KRUISE}-health']}", "--enable-pprof=false", "--v=2"]
        self._launch(cluster, info, KRUISE, cache, args, env)
        # /readyz passes once its webhook server serves with the certificate it wrote for 127.0.0.1.
        self._wait(info, KRUISE, deadline, partial(_http_ok, self._health_url(info, KRUISE, "readyz")))

    def _start_training_operator(self, cluster: ClusterInfo, info: UpstreamInfo, cache: Path,
                                 deadline: float) -> None:
        kubeconfig = cluster.kubeconfig
        install_crd_files(kubeconfig, sorted((cache / "crds").glob("*.yaml")))
        prepare_training_operator(kubeconfig)
        ports = free_ports(f"{TRAINING_OPERATOR}-{p}" for p in ("metrics", "health", "webhook"))
        info.ports.update(ports)
        args = ["--enable-scheme=tfjob", "--leader-elect=false",
                f"--metrics-bind-address=127.0.0.1:{ports[f'{TRAINING_OPERATOR}-metrics']}",
                f"--health-probe-bind-address=127.0.0.1:{ports[f'{TRAINING_OPERATOR}-health']}",
                f"--webhook-server-port={ports[f'{TRAINING_OPERATOR}-webhook']}"]
        self._launch(cluster, info, TRAINING_OPERATOR, cache, args, {"MY_POD_NAMESPACE": TRAINING_NAMESPACE})
        # Its cert rotator fills the Secret; the webhook server, and then the TFJob controller, wait for the
        # pair to appear in its (hard-coded) cert directory, as a mounted Secret would.
        self._wait(info, TRAINING_OPERATOR, deadline, partial(copy_training_operator_certs, kubeconfig))
        self._wait(info, TRAINING_OPERATOR, deadline,
                   partial(_http_ok, self._health_url(info, TRAINING_OPERATOR, "readyz")))

    # ---- processes ------------------------------------------------------------------------
    @staticmethod
    def _health_url(info: UpstreamInfo, name: str, path: str = "healthz") -> str:
        return f"http://127.0.0.1:{info.ports[f'{name}-health']}/{path}"

    def _launch(self, cluster: ClusterInfo, info: UpstreamInfo, name: str, cache: Path, args: list[str],
                env: dict[str, str]) -> None:
        binary = str(cache / "bin" / BINARY[name])
        log = open(self.dir / "logs" / f"{name}.log", "ab")  # noqa: SIM115 - handed to the child
        proc = subprocess.Popen([binary, *args], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=self.dir,
                                env={**os.environ, **env, "KUBECONFIG": cluster.kubeconfig})
        log.close()
        info.pids[name] = proc.pid
        info.binaries[name] = binary
        self._save(info)

    def _wait(self, info: UpstreamInfo, name: str, deadline: float, check: Callable[[], bool]) -> None:
        while time.monotonic() < deadline:
            if not _pid_alive(info.pids[name], info.binaries[name]):
                raise UpstreamStartError(f"{name} exited during start; see {self.log_tail(name)}")
            try:
                if check():
                    return
            except Exception:
                pass
            time.sleep(0.2)
        raise UpstreamStartError(f"{name} was not ready in time; see {self.log_tail(name)}")

    def log_tail(self, name: str, lines: int = 20) -> str:
        path = self.dir / "logs" / f"{name}.log"
        try:
            tail = path.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            tail = []
        return f"{path}:\n" + "\n".join(tail)

    def _save(self, info: UpstreamInfo) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(info), indent=2))
        tmp.replace(self.state_file)

    def stop(self) -> bool:
        """Remove their webhook configurations (while the API still runs), then stop them by PID."""
        info = self.info()
        if info is None:
            return False
        cluster = self.plane.running()
        if cluster is not None:
            remove_webhooks(cluster.kubeconfig)
        alive = {name: pid for name, pid in info.pids.items() if _pid_alive(pid, info.binaries[name])}
        for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 2.0)):
            remaining = [(n, p) for n, p in alive.items() if _pid_alive(p, info.binaries[n])]
            for _, pid in remaining:
                _signal(pid, sig)
            until = time.monotonic() + grace
            while remaining and time.monotonic() < until:
                time.sleep(0.1)
                remaining = [(n, p) for n, p in remaining if _pid_alive(p, info.binaries[n])]
        info.pids = {}
        self._save(info)
        return bool(alive)
