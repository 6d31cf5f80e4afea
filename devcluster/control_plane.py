"""Start and stop etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok.

Every process listens on loopback only, on ports chosen free at start. The state
directory holds the PKI, the kubeconfig, the logs and `state.json` (PIDs and
ports), which is how a later command recognises a cluster as ours and stops it
by PID.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

from devcluster.pki import make_pki, make_tokens

MARKER = "airflow-broadcast-devcluster/v1"
REPO_ROOT = Path(__file__).resolve().parent.parent
STAGES_DIR = Path(__file__).resolve().parent / "stages"  # our own kwok stages, after kwok's stock ones
STOP_ORDER = ("kwok", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd")


class ClusterStartError(RuntimeError):
    """The control plane could not be started; the message names the component and its log."""


@dataclass
class ClusterInfo:
    """What a running cluster looks like from outside: enough to reuse or stop it."""

    marker: str
    directory: str
    kubeconfig: str
    restricted_kubeconfig: str
    server: str
    pids: dict[str, int] = field(default_factory=dict)
    binaries: dict[str, str] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    started_at: float = 0.0
    ready_seconds: float = 0.0


def default_state_dir() -> Path:
    return Path(os.environ.get("AIRFLOW_BROADCAST_CLUSTER_DIR", REPO_ROOT / ".devcluster"))


def free_ports(names: Iterable[str]) -> dict[str, int]:
    """A free loopback port per name, all distinct: every socket stays bound until all are chosen, so the
    kernel cannot hand the same port out twice (one at a time, a port freed at once could come back)."""
    sockets: dict[str, socket.socket] = {}
    try:
        for name in names:
            sock = sockets[name] = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
        return {name: int(sock.getsockname()[1]) for name, sock in sockets.items()}
    finally:
        for sock in sockets.values():
            sock.close()


def _pid_alive(pid: int, binary: str) -> bool:
    """True when `pid` runs and is the binary we started (guards against PID reuse)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":
        return False
    return cmdline == binary


def build_binaries() -> Path:
    """Build or reuse the cached binaries; returns the cache directory."""
    script = Path(__file__).resolve().parent / "build-binaries.sh"
    result = subprocess.run(["bash", str(script)], stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise ClusterStartError(f"building the control plane binaries failed (exit {result.returncode})")
    return Path(result.stdout.strip().splitlines()[-1])


def _etcd_version(etcd: str) -> tuple[int, ...]:
    out = subprocess.run([etcd, "--version"], capture_output=True, text=True).stdout
    match = re.search(r"etcd Version: (\d+)\.(\d+)\.(\d+)", out)
    if not match:
        raise ClusterStartError(f"cannot read the etcd version from {etcd!r}: {out!r}")
    return tuple(int(x) for x in match.groups())


class ControlPlane:
    """One local cluster rooted at a state directory."""

    def __init__(self, state_dir: Path | None = None) -> None:
        self.dir = (state_dir or default_state_dir()).resolve()
        self.state_file = self.dir / "state.json"
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    # ---- inspection -------------------------------------------------------------------
    def info(self) -> ClusterInfo | None:
        try:
            data = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None
        if data.get("marker") != MARKER:
            return None
        return ClusterInfo(**data)

    def running(self) -> ClusterInfo | None:
        """The cluster's info when every process is alive and the apiserver is ready."""
        info = self.info()
        if info is None or not info.pids:
            return None
        if not all(_pid_alive(pid, info.binaries[name]) for name, pid in info.pids.items()):
            return None
        if not self._apiserver_ready(info, timeout=2.0):
            return None
        return info

    @staticmethod
    def owns_kubeconfig(kubeconfig: str) -> ControlPlane | None:
        """The ControlPlane whose kubeconfig this is, if it is one of ours."""
        path = Path(kubeconfig).resolve()
        plane = ControlPlane(path.parent)
        info = plane.info()
        if info is not None and Path(info.kubeconfig).resolve() == path:
            return plane
        return None

    # ---- start ------------------------------------------------------------------------
    def start(self, timeout: float = 60.0) -> ClusterInfo:
        existing = self.running()
        if existing is not None:
            return existing
        self.stop()
        etcd = shutil.which("etcd")
        if etcd is None:
            raise ClusterStartError("etcd is not installed (apt-get install etcd-server)")
        binaries_dir = build_binaries() / "bin"
        t0 = time.monotonic()
        if self.dir.exists():
            shutil.rmtree(self.dir)
        (self.dir / "logs").mkdir(parents=True)
        pki = self.dir / "pki"
        make_pki(pki)
        tokens = make_tokens(pki / "tokens.csv")
        ports = free_ports(("etcd", "etcd-peer", "apiserver", "kcm", "scheduler", "kwok"))
        server = f"https://127.0.0.1:{ports['apiserver']}"
        kubeconfig = self.dir / "kubeconfig"
        restricted = self.dir / "kubeconfig-restricted"
        _write_kubeconfig(kubeconfig, server, pki / "ca.crt", tokens["admin"], "admin")
        _write_kubeconfig(restricted, server, pki / "ca.crt", tokens["restricted"], "restricted")
        bins = {
            "etcd": etcd,
            "kube-apiserver": str(binaries_dir / "kube-apiserver"),
            "kube-controller-manager": str(binaries_dir / "kube-controller-manager"),
            "kube-scheduler": str(binaries_dir / "kube-scheduler"),
            "kwok": str(binaries_dir / "kwok"),
        }
        info = ClusterInfo(
            marker=MARKER, directory=str(self.dir), kubeconfig=str(kubeconfig),
            restricted_kubeconfig=str(restricted), server=server, binaries=bins, ports=ports,
            started_at=time.time(),
        )
        deadline = time.monotonic() + timeout
        try:
            self._launch(info, "etcd", self._etcd_args(info))
            self._wait(info, "etcd", deadline, lambda: _http_ok(f"http://127.0.0.1:{ports['etcd']}/health"))
            self._launch(info, "kube-apiserver", self._apiserver_args(info, pki))
            self._wait(info, "kube-apiserver", deadline, lambda: self._apiserver_ready(info, 1.0))
            self._launch(info, "kube-controller-manager", self._kcm_args(info, pki))
            self._launch(info, "kube-scheduler", self._scheduler_args(info))
            self._launch(info, "kwok", self._kwok_args(info, binaries_dir))
            for name, port in (("kube-controller-manager", ports["kcm"]), ("kube-scheduler", ports["scheduler"])):
                self._wait(info, name, deadline, partial(_https_ok, f"https://127.0.0.1:{port}/healthz"))
            self._wait(info, "kwok", deadline, lambda: _http_ok(f"http://127.0.0.1:{ports['kwok']}/healthz"))
        except BaseException:
            self.stop()
            raise
        info.ready_seconds = round(time.monotonic() - t0, 2)
        self._save(info)
        return info

    def _save(self, info: ClusterInfo) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(info), indent=2))
        tmp.replace(self.state_file)

    def _launch(self, info: ClusterInfo, name: str, args: list[str]) -> None:
        log = open(self.dir / "logs" / f"{name}.log", "ab")  # noqa: SIM115 - handed to the child
        proc = subprocess.Popen(
            [info.binaries[name], *args], stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.dir,
        )
        log.close()
        self._procs[name] = proc
        info.pids[name] = proc.pid
        self._save(info)

    def _wait(self, info: ClusterInfo, name: str, deadline: float, check: Callable[[], bool]) -> None:
        while time.monotonic() < deadline:
            if self._procs[name].poll() is not None:
                raise ClusterStartError(f"{name} exited during start; see {self._log_tail(name)}")
            if check():
                return
            time.sleep(0.1)
        raise ClusterStartError(f"{name} was not ready in time; see {self._log_tail(name)}")

    def _log_tail(self, name: str) -> str:
        path = self.dir / "logs" / f"{name}.log"
        try:
            tail = path.read_text(errors="replace").splitlines()[-15:]
        except OSError:
            tail = []
        return f"{path}:\n" + "\n".join(tail)

    def _apiserver_ready(self, info: ClusterInfo, timeout: float) -> bool:
        token = _token_from_kubeconfig(Path(info.kubeconfig))
        ctx = ssl.create_default_context(cafile=str(Path(info.directory) / "pki" / "ca.crt"))
        req = urllib.request.Request(f"{info.server}/readyz", headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError, ssl.SSLError):
            return False

    # ---- flags ------------------------------------------------------------------------
    def _etcd_args(self, info: ClusterInfo) -> list[str]:
        client = f"http://127.0.0.1:{info.ports['etcd']}"
        peer = f"http://127.0.0.1:{info.ports['etcd-peer']}"
        return [
            "--name=devcluster", f"--data-dir={self.dir / 'etcd'}",
            f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=devcluster={peer}", "--unsafe-no-fsync", "--log-level=warn",
            "--quota-backend-bytes=4294967296",
        ]

    def _apiserver_args(self, info: ClusterInfo, pki: Path) -> list[str]:
        args = [
            f"--etcd-servers=http://127.0.0.1:{info.ports['etcd']}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={info.ports['apiserver']}", f"--cert-dir={pki}",
            f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--token-auth-file={pki / 'tokens.csv'}", "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-cluster-ip-range=10.96.0.0/16", "--disable-admission-plugins=ServiceAccount",
            "--allow-privileged=true", "--endpoint-reconciler-type=none",
            "--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000",
        ]
        if _etcd_version(info.binaries["etcd"]) < (3, 4, 31):
            # Old etcd lacks RequestWatchProgress; watch-list clients would stall.
            args.append("--feature-gates=WatchList=false")
        return args

    def _kcm_args(self, info: ClusterInfo, pki: Path) -> list[str]:
        k = info.kubeconfig
        return [
            f"--kubeconfig={k}", f"--authentication-kubeconfig={k}", f"--authorization-kubeconfig={k}",
            "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={info.ports['kcm']}",
            f"--cert-dir={self.dir / 'kcm-certs'}",
            f"--service-account-private-key-file={pki / 'sa.key'}", "--use-service-account-credentials=false",
            "--controllers=*,-node-ipam-controller,-node-route-controller,-service-lb-controller,"
            "-cloud-node-lifecycle-controller",
            "--kube-api-qps=500", "--kube-api-burst=1000", "--concurrent-gc-syncs=20",
            # kwok renews node leases from one process; on a busy 2-core machine with a thousand nodes
            # a renewal can come late, and the default 50 s grace would evict pods from healthy nodes.
            "--node-monitor-grace-period=180s",
        ]

    def _scheduler_args(self, info: ClusterInfo) -> list[str]:
        k = info.kubeconfig
        return [
            f"--kubeconfig={k}", f"--authentication-kubeconfig={k}", f"--authorization-kubeconfig={k}",
            "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={info.ports['scheduler']}",
            f"--cert-dir={self.dir / 'scheduler-certs'}",
        ]

    def _kwok_args(self, info: ClusterInfo, binaries_dir: Path) -> list[str]:
        stages_dir = binaries_dir.parent / "kwok-stages"
        docs = [p.read_text() for p in sorted(stages_dir.glob("*.yaml"))]
        docs += [p.read_text() for p in sorted(STAGES_DIR.glob("*.yaml"))]
        stages = self.dir / "kwok-stages.yaml"
        stages.write_text("\n---\n".join(docs))
        return [
            f"--config={stages}", f"--kubeconfig={info.kubeconfig}",
            "--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            "--cidr=10.0.0.1/16", "--node-ip=10.0.0.1", "--node-port=10250",
            f"--server-address=127.0.0.1:{info.ports['kwok']}", "--node-lease-duration-seconds=40",
        ]

    def restart_apiserver(self, down_seconds: float = 0.0, timeout: float = 60.0) -> float:
        """Kill kube-apiserver by PID (SIGKILL, as a crash), wait `down_seconds`, start it again with the
        same port, flags and certificates; returns the seconds the API was gone. For a private cluster only:
        every client of the cluster loses the API meanwhile."""
        info = self.info()
        name = "kube-apiserver"
        if info is None or name not in info.pids:
            raise ClusterStartError(f"no running cluster in {self.dir} whose kube-apiserver could be restarted")
        pid, binary = info.pids[name], info.binaries[name]
        t0 = time.monotonic()
        if _pid_alive(pid, binary):
            _signal(pid, signal.SIGKILL)
        if name in self._procs:
            self._procs[name].wait(10)  # reap our child
        while _pid_alive(pid, binary) and time.monotonic() - t0 < 10:
            time.sleep(0.05)
        time.sleep(down_seconds)
        self._launch(info, name, self._apiserver_args(info, self.dir / "pki"))
        self._wait(info, name, time.monotonic() + timeout, lambda: self._apiserver_ready(info, 1.0))
        return time.monotonic() - t0

    # ---- stop -------------------------------------------------------------------------
    def stop(self) -> bool:
        """Stop every process this state directory started, by PID. True if any was running."""
        info = self.info()
        if info is None:
            return False
        alive = {name: pid for name, pid in info.pids.items() if _pid_alive(pid, info.binaries[name])}
        for name in STOP_ORDER:
            if name in alive:
                _signal(alive[name], signal.SIGTERM)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and any(
            _pid_alive(pid, info.binaries[name]) for name, pid in alive.items()
        ):
            time.sleep(0.1)
        for name, pid in alive.items():
            if _pid_alive(pid, info.binaries[name]):
                _signal(pid, signal.SIGKILL)
        info.pids = {}
        self._save(info)
        return bool(alive)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1.0) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _https_ok(url: str) -> bool:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=1.0, context=ctx) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


def _write_kubeconfig(path: Path, server: str, ca: Path, token: str, user: str) -> None:
    ca_data = base64.b64encode(ca.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "devcluster", "cluster": {"server": server, "certificate-authority-data": ca_data}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": f"devcluster-{user}", "context": {"cluster": "devcluster", "user": user}}],
        "current-context": f"devcluster-{user}",
    }
    path.write_text(json.dumps(config, indent=2))
    path.chmod(0o600)


def _token_from_kubeconfig(path: Path) -> str:
    data = json.loads(path.read_text())
    return str(data["users"][0]["user"]["token"])
