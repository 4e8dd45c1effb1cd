"""A real Kubernetes control plane on 127.0.0.1: etcd and kube-apiserver, built from
source by `make kube` (tools/build-kube.sh), for the tests and the bench.

The API server runs as a cluster without controllers can: TLS with a CA of its
own, client certificates and bearer tokens (a token file), service-account
tokens signed by a key of its own (the TokenRequest API works), Node and RBAC
authorization, and every default admission plugin but the two that wait on
controllers (ServiceAccount: no `default` account is ever made; and
TaintNodesByCondition: a new Node's not-ready taint is never taken off). The
watch cache is off for ConfigMaps alone, so that a watch from a version etcd
has compacted away meets a real 410 Gone on demand (the cache keeps its own
window of history, 75 s at least). Every process is stopped by its PID, and
its folder removed, whatever happened.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import yaml

from benchmarks.controlplane.releases import RELEASES, kube_version, release_folder
from cluster.manifests import condition_true
from optimist.kube.client import ApiError, KubeClient

BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-scheduler",
    "kubectl",
    "kube-controller-manager",
    "kwok",
)
ADMIN_GROUP = "system:masters"  # bypasses RBAC: the tests' and the bench's own user
_CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
ADMISSION_OFF = ("ServiceAccount", "TaintNodesByCondition")  # they wait on controllers
# scheduler_perf's API server, for throughput: nothing queues or sheds requests; and
# its admission: upstream's templates set spec.priority themselves, which the
# Priority plugin refuses
THROUGHPUT_FLAGS = (
    "--enable-priority-and-fairness=false",
    "--max-requests-inflight=0",
    "--max-mutating-requests-inflight=0",
)
SCHEDULER_PERF_ADMISSION_OFF = (*ADMISSION_OFF, "Priority", "StorageObjectInUseProtection")
# and its scheduler's client: unthrottled, so that the API server is what is measured
SCHEDULER_PERF_CLIENT = {"qps": 5000, "burst": 5000}


class ControlPlaneMissing(RuntimeError):
    """The binaries are not built here; the message says how to build them."""


class ControlPlaneError(RuntimeError):
    """etcd or kube-apiserver did not start; the message quotes its log."""


def binaries(version: str | None = None) -> Path:
    """The folder of the release `version` (`releases.kube_version`'s by default):
    $OPTIMIST_KUBE_BIN for the default release, or where `make kube` links it."""
    chosen = kube_version(version)
    override = os.environ.get("OPTIMIST_KUBE_BIN") if version is None else None
    folder = Path(override or release_folder(chosen))
    missing = [b for b in BINARIES if not (folder / b).is_file()]
    if missing:
        raise ControlPlaneMissing(
            f"no {', '.join(missing)} in {folder}: run `make kube` (it needs Go 1.26 or "
            "newer and the Go module proxy, and builds etcd and Kubernetes "
            f"{' and '.join(RELEASES)} from source)"
        )
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True, slots=True)
class User:
    """A user of the API server: by bearer token, or (the admin) a client certificate."""

    name: str
    token: str
    groups: tuple[str, ...] = ()


@dataclass
class ControlPlane:
    """etcd and kube-apiserver, for as long as the context lasts. `users` get bearer
    tokens (the admin, in system:masters, always); `crds` are installed and
    established before the context is entered."""

    crds: Iterable[Path] = ()
    users: Iterable[User] = ()
    extra_args: tuple[str, ...] = ()  # more kube-apiserver flags (THROUGHPUT_FLAGS)
    admission_off: tuple[str, ...] = ADMISSION_OFF
    bin_dir: Path = field(default_factory=binaries)
    ready_timeout_s: float = 120.0

    def __post_init__(self) -> None:
        self.admin = User("optimist-admin", secrets.token_hex(16), (ADMIN_GROUP,))
        self.tokens = {u.name: u for u in (self.admin, *self.users)}
        self.etcd_url = f"http://127.0.0.1:{free_port()}"
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self._processes: dict[str, subprocess.Popen[bytes]] = {}
        # how each was started, (binary, args): to start it again
        self._commands: dict[str, tuple[str, tuple[str, ...]]] = {}

    # --- the context ---------------------------------------------------------------

    def __enter__(self) -> ControlPlane:
        self.dir = Path(tempfile.mkdtemp(prefix="optimist-kube-"))  # __exit__ removes it
        try:
            self._pki()
            self._start_etcd()
            self._start_apiserver()
            self._wait_ready()
            self.admin_kubeconfig = self._admin_kubeconfig()
            self.client = KubeClient.for_kubeconfig(str(self.admin_kubeconfig), qps=500, burst=500)
            for crd in self.crds:
                self.install_crd(crd)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        for name in reversed(list(self._processes)):  # etcd last: the others need it
            self.stop(name)
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- what a client needs ----------------------------------------------------------

    @property
    def ca_file(self) -> Path:
        return self.dir / "ca.crt"

    def kubeconfig(self, user: User, server: str | None = None, name: str = "") -> Path:
        """A kubeconfig for `user` (by its token) at `server` (the API server's URL by
        default; a proxy's in front of it, serving the same CA's certificate)."""
        path = self.dir / f"{name or user.name}.kubeconfig"
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "optimist-test",
                    "cluster": {
                        "server": server or self.url,
                        "certificate-authority": str(self.ca_file),
                    },
                }
            ],
            "users": [{"name": user.name, "user": {"token": user.token}}],
            "contexts": [
                {"name": "test", "context": {"cluster": "optimist-test", "user": user.name}}
            ],
            "current-context": "test",
        }
        path.write_text(yaml.safe_dump(doc))
        return path

    def _admin_kubeconfig(self) -> Path:
        """The admin's kubeconfig, by client certificate (CN user, O group), as a
        cluster's bootstrap admin is; its token serves requests through a proxy."""
        path = self.kubeconfig(self.admin, name="admin")
        doc = yaml.safe_load(path.read_text())
        doc["users"][0]["user"] = {
            "client-certificate": str(self.dir / "admin.crt"),
            "client-key": str(self.dir / "admin.key"),
        }
        path.write_text(yaml.safe_dump(doc))
        return path

    def serving_context(self) -> ssl.SSLContext:
        """TLS for a server in front of this one (a fault-injecting proxy): its own
        certificate for 127.0.0.1, signed by this control plane's CA."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.dir / "server.crt", self.dir / "server.key")
        return context

    def client_context(self) -> ssl.SSLContext:
        """TLS to this API server, trusting its CA."""
        return ssl.create_default_context(cafile=str(self.ca_file))

    def install_crd(self, path: Path) -> None:
        """Create a CustomResourceDefinition (not apply: RayCluster's is larger than the
        last-applied annotation may be) and wait until it is served."""
        doc = yaml.safe_load(path.read_text())
        name = doc["metadata"]["name"]
        try:
            self.client.request("POST", _CRD_PATH, body=doc)
        except ApiError as err:
            if err.status != 409:
                raise
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            crd = self.client.request("GET", f"{_CRD_PATH}/{name}")
            if condition_true(crd, "Established"):
                return
            time.sleep(0.1)
        raise ControlPlaneError(f"CustomResourceDefinition {name} not established in 30 s")

    def compact(self) -> int:
        """Compact etcd's history up to now, as its own compactor would: a watch or a
        list continued from a version before it gets 410 Gone. Returns the revision."""
        revision = int(self._etcd("/v3/kv/range", {"key": "AA=="})["header"]["revision"])
        self._etcd("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    def kube_scheduler(self, configuration: Mapping[str, Any] | None = None) -> KubeScheduler:
        """The real kube-scheduler of its release beside it, as a context (see
        `kube_scheduler`)."""
        return kube_scheduler(self.admin_kubeconfig, self.dir, configuration, self.bin_dir)

    @property
    def running(self) -> list[str]:
        """The names of the processes it runs now, in the order they started."""
        return list(self._processes)

    def pid(self, name: str) -> int:
        """The PID of a process it runs: "etcd" or "kube-apiserver"."""
        return self._processes[name].pid

    def log(self, name: str) -> str:
        """The last of a process's log ("etcd", "kube-apiserver")."""
        path = self.dir / f"{name}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    # --- starting -------------------------------------------------------------------

    def _pki(self) -> None:
        """A CA, the server's and the admin's certificates, the service accounts' signing
        key, and the users' tokens; EC
        P-256 throughout (quick to make, and what the server accepts for each)."""
        d = self.dir
        curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        _openssl(
            "req", "-x509", *curve, "-keyout", d / "ca.key", "-out", d / "ca.crt",
            "-days", "7", "-subj", "/CN=optimist-test-ca",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        )  # fmt: skip
        names = "IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc"
        _openssl(
            "req", *curve, "-keyout", d / "server.key", "-out", d / "server.csr",
            "-subj", "/CN=kube-apiserver",
        )  # fmt: skip
        (d / "server.ext").write_text(
            f"subjectAltName={names}\nextendedKeyUsage=serverAuth\n"
            "keyUsage=critical,digitalSignature,keyEncipherment\n"
        )
        _openssl(
            "x509", "-req", "-in", d / "server.csr", "-CA", d / "ca.crt", "-CAkey", d / "ca.key",
            "-CAcreateserial", "-days", "7", "-extfile", d / "server.ext",
            "-out", d / "server.crt",
        )  # fmt: skip
        _openssl(
            "req", *curve, "-keyout", d / "admin.key", "-out", d / "admin.csr",
            "-subj", f"/O={ADMIN_GROUP}/CN={self.admin.name}",
        )  # fmt: skip
        (d / "admin.ext").write_text("extendedKeyUsage=clientAuth\n")
        _openssl(
            "x509", "-req", "-in", d / "admin.csr", "-CA", d / "ca.crt", "-CAkey", d / "ca.key",
            "-CAcreateserial", "-days", "7", "-extfile", d / "admin.ext", "-out", d / "admin.crt",
        )  # fmt: skip
        _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", d / "sa.key")
        _openssl("ec", "-in", d / "sa.key", "-pubout", "-out", d / "sa.pub")
        (d / "tokens.csv").write_text(
            "".join(
                f'{u.token},{u.name},{u.name},"{",".join(u.groups)}"\n'
                for u in self.tokens.values()
            )
        )

    def _start_etcd(self) -> None:
        peer = f"http://127.0.0.1:{free_port()}"
        self._spawn(
            "etcd",
            "--name=default",
            f"--data-dir={self.dir / 'etcd'}",
            f"--listen-client-urls={self.etcd_url}",
            f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=default={peer}",
            "--unsafe-no-fsync",  # a test's data: nothing to keep across a power cut
            # the watch cache learns etcd's revision every second even for resources
            # that do not change, so that its bookmarks carry a fresh version (etcd's
            # default: every 10 minutes)
            "--experimental-watch-progress-notify-interval=1s",
            "--log-level=warn",
        )
        self._wait_until("etcd", self._etcd_answers)

    def _etcd_answers(self) -> bool:
        try:
            self._etcd("/v3/kv/range", {"key": "AA=="})
        except (OSError, ValueError):
            return False
        return True

    def _start_apiserver(self) -> None:
        d = self.dir
        self._spawn(
            "kube-apiserver",
            f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={d / 'certs'}",
            f"--tls-cert-file={d / 'server.crt'}",
            f"--tls-private-key-file={d / 'server.key'}",
            f"--client-ca-file={d / 'ca.crt'}",
            f"--token-auth-file={d / 'tokens.csv'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={d / 'sa.pub'}",
            f"--service-account-signing-key-file={d / 'sa.key'}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=Node,RBAC",
            f"--disable-admission-plugins={','.join(self.admission_off)}",
            "--endpoint-reconciler-type=none",
            "--watch-cache-sizes=configmaps#0",
            "--profiling=false",
            "--v=1",
            *self.extra_args,
        )

    def _wait_ready(self) -> None:
        request = urllib.request.Request(
            f"{self.url}/readyz", headers={"Authorization": f"Bearer {self.admin.token}"}
        )
        self._wait_healthy("kube-apiserver", request, self.client_context())

    def _wait_healthy(
        self, name: str, request: urllib.request.Request | str, context: ssl.SSLContext
    ) -> None:
        """Until `name` answers 200 to `request` (`wait_until`)."""
        self._wait_until(name, lambda: answers(request, context))

    def _wait_until(self, name: str, done: Callable[[], bool]) -> None:
        """Until `done()`, which only `name` working brings about; ControlPlaneError,
        with its log, if it exits or ready_timeout_s goes by first."""
        deadline = time.monotonic() + self.ready_timeout_s
        while not done():
            self._alive(name)
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"{name} not ready in {self.ready_timeout_s:.0f} s:\n{self.log(name)}"
                )
            time.sleep(0.1)

    def stop(self, name: str) -> None:
        """Stop a process it runs, by its PID, as a fault or a test asks."""
        _stop(self._processes.pop(name))

    def restart(self, name: str, *, wait: bool = True) -> None:
        """Kill a process it runs (SIGKILL, by its PID: a crash, nothing flushed) and start
        it again as it was started, on the same ports and data; with `wait`, return once
        it serves (`wait_serving`). A fault the chaos bench injects."""
        process = self._processes[name]
        process.kill()
        process.wait()
        binary, args = self._commands[name]
        self._spawn(name, *args, binary=binary)
        if wait:
            self.wait_serving(name)

    def wait_serving(self, name: str) -> None:
        """Until etcd answers, or kube-apiserver is ready (other processes: at once)."""
        if name == "etcd":
            self._wait_until(name, self._etcd_answers)
        elif name == "kube-apiserver":
            self._wait_ready()

    def wait_answering(self) -> None:
        """Until kube-apiserver answers requests, which it does, and binds pods, before
        all its readiness checks pass (a restarted one, seconds before)."""
        request = urllib.request.Request(
            f"{self.url}/version", headers={"Authorization": f"Bearer {self.admin.token}"}
        )
        self._wait_healthy("kube-apiserver", request, self.client_context())

    def _spawn(self, name: str, *args: str, binary: str = "") -> None:
        """Start `binary` (`name`'s own by default) as `name`, its log in the folder
        (appended to: a restarted process's follows the one before)."""
        self._commands[name] = (binary, args)
        with open(self.dir / f"{name}.log", "ab") as log:
            self._processes[name] = subprocess.Popen(
                [str(self.bin_dir / (binary or name)), *args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a ^C to the tests is for them; we stop it
            )

    def _alive(self, name: str) -> None:
        process = self._processes[name]
        if process.poll() is not None:
            raise ControlPlaneError(f"{name} exited with {process.returncode}:\n{self.log(name)}")

    def _etcd(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            self.etcd_url + path, data=json.dumps(body).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=5) as reply:
            return dict(json.loads(reply.read()))


KubeScheduler = AbstractContextManager[int]


def start_kube_scheduler(
    kubeconfig: Path,
    folder: Path,
    configuration: Mapping[str, Any] | None = None,
    bin_dir: Path | None = None,
    port: int | None = None,
    name: str = "kube-scheduler",
    election: Mapping[str, Any] | None = None,
) -> tuple[subprocess.Popen[bytes], int]:
    """The real kube-scheduler (of `bin_dir`'s release) started against the server
    `kubeconfig` names, not waited for; the process and its port. `configuration` is a
    KubeSchedulerConfiguration document (its profiles; the one default-scheduler
    profile without it); the connection is set as scheduler_perf sets it, its client
    unthrottled (qps and burst 5000), and the election is `election` (a
    LeaderElectionConfiguration), none as scheduler_perf runs it by default. Its
    configuration, log and certificates go to `folder`, named `name` (two beside each
    other: two names). It serves on `port` (one free by default), /metrics to anyone
    on loopback as /healthz is."""
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        **(configuration or {}),
        "clientConnection": {"kubeconfig": str(kubeconfig), **SCHEDULER_PERF_CLIENT},
        "leaderElection": dict(election or {"leaderElect": False}),
    }
    config = folder / f"{name}.yaml"
    config.write_text(yaml.safe_dump(doc))
    port = port or free_port()
    with (folder / f"{name}.log").open("wb") as log:
        process = subprocess.Popen(
            [
                str((bin_dir or binaries()) / "kube-scheduler"),
                f"--config={config}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={folder / f'{name}-certs'}",
                "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
                "--v=1",
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return process, port


# kube-scheduler serves on its own certificate
OWN_CERTIFICATE = ssl.create_default_context()
OWN_CERTIFICATE.check_hostname, OWN_CERTIFICATE.verify_mode = False, ssl.CERT_NONE


@contextmanager
def kube_scheduler(
    kubeconfig: Path,
    folder: Path,
    configuration: Mapping[str, Any] | None = None,
    bin_dir: Path | None = None,
    ready_timeout_s: float = 120.0,
    port: int | None = None,
    name: str = "kube-scheduler",
) -> Iterator[int]:
    """kube-scheduler (`start_kube_scheduler`, without an election), for as long as the
    context lasts; yields the PID, once it answers /healthz."""
    process, port = start_kube_scheduler(kubeconfig, folder, configuration, bin_dir, port, name)
    try:
        deadline = time.monotonic() + ready_timeout_s
        while not answers(f"https://127.0.0.1:{port}/healthz", OWN_CERTIFICATE):
            if process.poll() is not None or time.monotonic() > deadline:
                log = (folder / f"{name}.log").read_text(errors="replace")
                raise ControlPlaneError(
                    f"kube-scheduler not healthy (exit {process.poll()}):\n{log[-4000:]}"
                )
            time.sleep(0.2)
        yield process.pid
    finally:
        _stop(process)


def answers(request: urllib.request.Request | str, context: ssl.SSLContext | None = None) -> bool:
    """Whether the server answers 200 now."""
    try:
        with urllib.request.urlopen(request, context=context, timeout=5) as reply:
            return bool(reply.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def _openssl(*args: object) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def stop_tree(
    process: subprocess.Popen[bytes],
    grace_s: float = 10.0,
    started: Iterable[psutil.Process] = (),
) -> None:
    """Stop a process and whatever it started: SIGTERM, SIGKILL after `grace_s`, then
    every descendant still alive, each by its PID. `started`: descendants seen earlier,
    which a process that died (SIGKILL gives it no time to stop them) left to init."""
    try:
        below = psutil.Process(process.pid).children(recursive=True)
    except psutil.Error:
        below = []
    _stop(process, grace_s)
    for child in [*below, *started]:
        try:
            if child.is_running():  # the same process: psutil compares its start time
                child.kill()
        except psutil.Error:
            continue


def _stop(process: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if it lingers: by PID, never by name."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def scheduler_perf_plane(
    kind: type[ControlPlane] = ControlPlane, version: str | None = None
) -> ControlPlane:
    """A control plane (of `kind`: a living one too; of the release `version`) as
    scheduler_perf's harness starts its own: throughput flags, and the Priority and
    StorageObjectInUseProtection admission plugins off."""
    return kind(
        extra_args=THROUGHPUT_FLAGS,
        admission_off=SCHEDULER_PERF_ADMISSION_OFF,
        bin_dir=binaries(version),
    )
