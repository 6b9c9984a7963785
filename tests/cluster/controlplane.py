"""A real Kubernetes control plane on loopback: etcd, kube-apiserver and kube-controller-manager.

The binaries come from ``tests/cluster/controlplane/build.sh`` (built from Go modules into a cache
outside the work tree, once). ``ControlPlane`` starts them as subprocesses on free 127.0.0.1 ports
with a temporary folder for etcd's data, the certificates, the keys and the logs:

- etcd: one member, no fsync (tests need no durability), its data dir kept across a restart;
- kube-apiserver: TLS with a self-signed certificate (``--cert-dir``; clients verify it), RBAC
  authorization, a static token file with an admin user in ``system:masters``, and a generated
  service-account signing key, so TokenRequest issues real, verifiable ServiceAccount tokens;
- kube-controller-manager: the garbage collector, the Job controller, the ServiceAccount
  controllers (``default`` accounts, token Secrets) and the PodGroup protection controller; with
  ``GANG_FLAGS`` on it and on the API server (which also serves ``scheduling.k8s.io/v1beta1``: the
  PodGroups of gang scheduling, issue 22); no node lifecycle or pod GC controller, so a
  lost node's pods stay terminating until the test lets them go (as they would on a real cluster
  until someone acts).

``start()`` waits until ``/readyz`` answers ``ok`` and the ``default`` ServiceAccount exists;
``stop()`` ends every process (SIGTERM, then SIGKILL) and is safe to call twice. Every failure
message names the folder that holds the logs (``logs_dir``). ``stop_apiserver``/``start_apiserver``
and ``stop_etcd``/``start_etcd`` restart one component on the same port (for fault tests);
``restart_controller_manager`` runs kube-controller-manager again with other controllers (a test
without the garbage collector).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import kubernetes
import yaml

from tests.support.ports import free_port

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "tests" / "cluster" / "controlplane" / "build.sh"
ADMIN_USER = "nvcre-admin"
CONTROLLERS = "garbagecollector,job,serviceaccount,serviceaccount-token,podgroup-protection-controller"
GANG_FLAGS = ("--feature-gates=GenericWorkload=true",)
APISERVER_STOP_SECONDS = 2.0
"""How long a stop waits for kube-apiserver after SIGTERM before SIGKILL. Its graceful shutdown closes
the listener at once (no ``--shutdown-delay-duration``) and then waits for the requests in flight up to
``--request-timeout`` (60 s), open watches included, so a stop always ran into the 15 s kill: the
outage tests' outages were 15 s longer than written, and every control plane's close took 15 s more.
It keeps no state of its own (etcd does; the audit log is written blocking), so it is killed sooner."""
"""Issue 22: the PodGroup API (scheduling.k8s.io/v1beta1) and gang scheduling, on kube-apiserver (with
``--runtime-config``), kube-scheduler (the GangScheduling plugin) and kube-controller-manager (whose
``podgroup-protection-controller`` lets a deleted PodGroup go once its pods are gone)."""
SERVICE_CIDR = "10.96.0.0/24"
HOOKS_USER = "system:serviceaccount:nvcre-system:nvcre-hooks"
"""The hooks' identity on the tier (manifests/rbac.yaml's ServiceAccount): the one user the API
server's audit log records (``ControlPlane.audit_events``), so tests count the hooks' own requests
as the API server saw them."""
AUDIT_POLICY = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
                "rules": [{"level": "Metadata", "users": [HOOKS_USER]}, {"level": "None"}]}
"""Never routed: the API server only needs a range to allocate the kubernetes Service from."""


class ControlPlaneError(RuntimeError):
    """A component did not build, start or become ready; the message names the logs folder."""


def cached_build(script: Path, *, override_env: str, no_build_env: str, build: bool,
                 error: type[RuntimeError]) -> Path:
    """The folder a build script (tests/cluster/*/build.sh) leaves its output in: ``$override_env``
    when set, else the last line the script prints (it builds once, then only prints the cached
    folder). With ``build=False`` the script is told (``$no_build_env``) to fail on a cache miss
    instead. A failed script raises ``error`` with the end of its stderr."""
    override = os.environ.get(override_env)
    if override:
        return Path(override)
    env = dict(os.environ)
    if not build:
        env[no_build_env] = "1"
    result = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        raise error(f"{script} failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return Path(result.stdout.strip().splitlines()[-1])


def binaries_dir(*, build: bool = True) -> Path:
    """The folder holding etcd, kube-apiserver, kube-controller-manager and kube-scheduler.

    ``NVCRE_CONTROL_PLANE_BIN`` (a folder with the four binaries) wins; otherwise build.sh is run,
    which builds once and then only prints the cached folder. With ``build=False`` a cache miss
    raises instead of building. Raises ``ControlPlaneError`` when the binaries cannot be had.
    """
    folder = cached_build(BUILD_SCRIPT, override_env="NVCRE_CONTROL_PLANE_BIN",
                          no_build_env="NVCRE_CONTROL_PLANE_NO_BUILD", build=build, error=ControlPlaneError)
    missing = [name for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
               if not os.access(folder / name, os.X_OK)]
    if missing:
        raise ControlPlaneError(f"{folder} lacks {', '.join(missing)}")
    return folder


class _Process:
    """One component: its command, its log file, its subprocess."""

    def __init__(self, name: str, command: list[str], log_path: Path, stop_seconds: float = 15.0) -> None:
        self.name, self.command, self.log_path = name, command, log_path
        self.stop_seconds = stop_seconds
        """How long ``stop`` waits after SIGTERM before SIGKILL."""
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            log.write(f"\n==== start {time.strftime('%H:%M:%S')}: {' '.join(self.command)}\n".encode())
            log.flush()
            self.popen = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True)

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, timeout: float | None = None) -> None:
        """SIGTERM to the process group, then SIGKILL after ``timeout`` (``stop_seconds`` by default)."""
        timeout = self.stop_seconds if timeout is None else timeout
        if self.popen is None:
            return
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout=5)
        self.popen = None

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager on loopback. Use as a context manager.

    ``workdir`` (default: a new temporary folder, removed by ``close()`` unless ``keep`` is set or a
    start failed) holds ``etcd-data/``, ``certs/``, the keys, the token file, kubeconfigs and
    ``logs/``. ``url`` is the API server's ``https://127.0.0.1:<port>``; ``admin_token`` its
    admin's bearer token; ``ca_file`` the certificate clients verify it with.
    """

    def __init__(self, binaries: Path | None = None, workdir: Path | None = None, *, keep: bool = False,
                 apiserver_args: Sequence[str] = (), controller_manager_args: Sequence[str] = ()) -> None:
        self.binaries = binaries or binaries_dir()
        self.apiserver_args = list(apiserver_args)
        """Flags added to kube-apiserver's command line (a test that needs, say, a short
        ``--etcd-compaction-interval``)."""
        self.controller_manager_args = list(controller_manager_args)
        """Flags added to kube-controller-manager's (the scale benchmark raises its client's QPS)."""
        self._own_dir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="nvcre-cluster-"))
        self.keep = keep
        self.logs_dir = self.workdir / "logs"
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self.etcd_port, self.etcd_peer_port = free_port(), free_port()
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.admin_token = os.urandom(16).hex()
        self.audit_log = self.logs_dir / "audit.log"
        """The API server's audit log of the hooks' requests (``AUDIT_POLICY``), one JSON event a line."""
        (self.workdir / "audit-policy.yaml").write_text(yaml.safe_dump(AUDIT_POLICY))
        self.cert_dir = self.workdir / "certs"
        self.ca_file = self.cert_dir / "apiserver.crt"
        self.started_in: float | None = None
        """Seconds from the first process start to a ready API server (set by ``start``)."""
        self._etcd = _Process("etcd", self._etcd_command(), self.logs_dir / "etcd.log")
        self._apiserver = _Process("kube-apiserver", self._apiserver_command(), self.logs_dir / "kube-apiserver.log",
                                   stop_seconds=APISERVER_STOP_SECONDS)
        self._kcm = _Process("kube-controller-manager", self._kcm_command(),
                             self.logs_dir / "kube-controller-manager.log")

    # -- commands ----------------------------------------------------------------------------------

    def _etcd_command(self) -> list[str]:
        client, peer = f"http://127.0.0.1:{self.etcd_port}", f"http://127.0.0.1:{self.etcd_peer_port}"
        return [str(self.binaries / "etcd"), "--name=nvcre", f"--data-dir={self.workdir / 'etcd-data'}",
                f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=nvcre={peer}", "--unsafe-no-fsync", "--log-level=warn"]

    def _apiserver_command(self) -> list[str]:
        return [str(self.binaries / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={self.port}",
                f"--cert-dir={self.cert_dir}", "--authorization-mode=RBAC",
                f"--token-auth-file={self.workdir / 'tokens.csv'}",
                f"--service-account-key-file={self.workdir / 'sa.pub'}",
                f"--service-account-signing-key-file={self.workdir / 'sa.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--api-audiences=https://kubernetes.default.svc.cluster.local",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                # the loopback address cannot be published in the kubernetes Endpoints
                "--endpoint-reconciler-type=none", "--profiling=false", "--v=1",
                "--runtime-config=scheduling.k8s.io/v1beta1=true", *GANG_FLAGS,
                f"--audit-policy-file={self.workdir / 'audit-policy.yaml'}", f"--audit-log-path={self.audit_log}",
                # never rotated (0; the default rotates at 100 MB, which a 1,000-Job pass passes): readers
                # keep byte offsets into the one file (``audit_events``)
                "--audit-log-format=json", "--audit-log-mode=blocking", "--audit-log-maxsize=0",
                *self.apiserver_args]

    def _kcm_command(self, controllers: str = CONTROLLERS) -> list[str]:
        return [str(self.binaries / "kube-controller-manager"),
                f"--kubeconfig={self.workdir / 'kcm.kubeconfig'}", f"--controllers={controllers}",
                f"--service-account-private-key-file={self.workdir / 'sa.key'}",
                f"--root-ca-file={self.ca_file}", "--leader-elect=false", "--secure-port=0",
                "--concurrent-gc-syncs=10", "--concurrent-job-syncs=10", "--v=1", *GANG_FLAGS,
                *self.controller_manager_args]

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self, timeout: float = 90.0) -> ControlPlane:
        """Starts the three components and waits until the API server is ready and the
        ``default`` ServiceAccount exists in ``default``. Raises ``ControlPlaneError`` (everything
        stopped) naming the logs folder."""
        began = time.monotonic()
        try:
            self._write_credentials()
            self.start_etcd()
            self.start_apiserver(timeout=timeout)
            self.started_in = time.monotonic() - began
            self.write_kubeconfig(self.workdir / "kcm.kubeconfig")
            self._kcm.start()
            self._wait_default_service_account(timeout=max(10.0, timeout - (time.monotonic() - began)))
        except BaseException:
            self.keep = True
            self.stop()
            raise
        return self

    def start_etcd(self) -> None:
        """Starts etcd (again) on its port and data dir."""
        self._etcd.start()

    def stop_etcd(self) -> None:
        """Stops etcd; the API server stays up and its storage calls fail until ``start_etcd``."""
        self._etcd.stop()

    def start_apiserver(self, timeout: float = 60.0) -> None:
        """Starts the API server (again) on its port and waits for ``/readyz``."""
        self._apiserver.start()
        self.wait_ready(timeout=timeout)

    def stop_apiserver(self) -> None:
        """Stops the API server; every client then sees a refused connection."""
        self._apiserver.stop()

    def extra_controller_manager(self, controllers: str, name: str) -> _Process:
        """Starts a second kube-controller-manager running only ``controllers`` (its ``--controllers``,
        none of ``CONTROLLERS``), logging to ``<name>.log``; the caller stops it (``_Process.stop``)
        when done. The fault suite runs the taint eviction and pod GC controllers so, for its module
        only: the other tests rely on a lost node's pods staying where they are."""
        process = _Process(name, self._kcm_command(controllers), self.logs_dir / f"{name}.log")
        process.start()
        return process

    def restart_controller_manager(self, controllers: str = CONTROLLERS) -> None:
        """Stops kube-controller-manager and starts it again running ``controllers`` (its
        ``--controllers``): a test that needs the garbage collector away restarts it without
        ``garbagecollector``, and restores ``CONTROLLERS`` when done (in a ``finally``)."""
        self._kcm.stop()
        self._kcm = _Process("kube-controller-manager", self._kcm_command(controllers),
                             self.logs_dir / "kube-controller-manager.log")
        self._kcm.start()

    def stop(self) -> None:
        """Ends every process (controller manager, API server, etcd). Idempotent."""
        for process in (self._kcm, self._apiserver, self._etcd):
            process.stop()

    def audit_events(self, start: int = 0) -> tuple[list[dict[str, Any]], int]:
        """The hooks' requests the API server finished (stage ``ResponseComplete``) from byte
        ``start`` of the audit log on, and the offset to read from next time."""
        data = read_audit_log(self.audit_log, start)
        complete = data[:data.rfind(b"\n") + 1]
        events = [json.loads(line) for line in complete.splitlines() if line.strip()]
        return [e for e in events if e.get("stage") == "ResponseComplete"], start + len(complete)

    def close(self) -> None:
        """Stops and removes the working folder (kept when ``keep`` is set)."""
        self.stop()
        if self._own_dir and not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is not None:
            self.keep = True
        self.close()

    # -- readiness ---------------------------------------------------------------------------------

    def ready(self) -> bool:
        """Whether ``/readyz`` answers 200 ``ok`` now."""
        if not self.ca_file.exists():
            return False
        request = urllib.request.Request(f"{self.url}/readyz",
                                         headers={"Authorization": f"Bearer {self.admin_token}"})
        try:
            # the API server writes its self-signed certificate as it starts: a file still being
            # written holds no certificate yet (SSLError), which is "not ready", not a failure
            context = ssl.create_default_context(cafile=str(self.ca_file))
            with urllib.request.urlopen(request, context=context, timeout=2) as response:
                return response.status == 200 and response.read().strip() == b"ok"
        except (OSError, ssl.SSLError):
            return False

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Waits until ``ready()``; raises ``ControlPlaneError`` with the logs' tails on timeout or
        when a component exits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for process in (self._etcd, self._apiserver):
                if process.popen is not None and not process.alive():
                    raise self._error(f"{process.name} exited")
            if self.ready():
                return
            time.sleep(0.2)
        raise self._error(f"kube-apiserver not ready after {timeout:g}s")

    def _wait_default_service_account(self, timeout: float) -> None:
        core = kubernetes.client.CoreV1Api(self.api_client())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._kcm.alive():
                raise self._error("kube-controller-manager exited")
            with contextlib.suppress(kubernetes.client.ApiException):
                core.read_namespaced_service_account("default", "default", _request_timeout=5)
                return
            time.sleep(0.2)
        raise self._error(f"no default ServiceAccount after {timeout:g}s (is the controller manager running?)")

    def _error(self, what: str) -> ControlPlaneError:
        self.keep = True
        tails = "\n".join(f"--- {p.name} (last lines of {p.log_path}):\n{p.tail()}"
                          for p in (self._etcd, self._apiserver, self._kcm))
        return ControlPlaneError(f"{what}; logs in {self.logs_dir}\n{tails}")

    # -- credentials and clients -------------------------------------------------------------------

    def _write_credentials(self) -> None:
        key = self.workdir / "sa.key"
        if not key.exists():
            subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                            "-out", str(key)], check=True, capture_output=True)
            subprocess.run(["openssl", "pkey", "-in", str(key), "-pubout", "-out", str(self.workdir / "sa.pub")],
                           check=True, capture_output=True)
        (self.workdir / "tokens.csv").write_text(f'{self.admin_token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n')

    def kubeconfig_dict(self, token: str | None = None, user: str = ADMIN_USER) -> dict[str, object]:
        """A kubeconfig for the API server with ``token`` (default: the admin's)."""
        return {
            "apiVersion": "v1", "kind": "Config", "current-context": "nvcre",
            "clusters": [{"name": "nvcre", "cluster": {"server": self.url,
                                                       "certificate-authority": str(self.ca_file)}}],
            "users": [{"name": user, "user": {"token": token or self.admin_token}}],
            "contexts": [{"name": "nvcre", "context": {"cluster": "nvcre", "user": user}}],
        }

    def write_kubeconfig(self, path: str | Path, token: str | None = None, user: str = ADMIN_USER) -> str:
        """Writes ``kubeconfig_dict(token, user)`` to ``path``; returns the path."""
        Path(path).write_text(yaml.safe_dump(self.kubeconfig_dict(token, user)))
        return str(path)

    def api_client(self, token: str | None = None) -> kubernetes.client.ApiClient:
        """A real ``kubernetes`` ApiClient for the API server (admin unless ``token`` is given),
        with no retries of its own."""
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config_from_dict(self.kubeconfig_dict(token), client_configuration=configuration)
        configuration.retries = False
        return kubernetes.client.ApiClient(configuration)


def read_audit_log(path: Path, start: int) -> bytes:
    """The audit log's bytes from offset ``start`` on (none while the file does not exist). Raises
    ``ControlPlaneError`` when the file is shorter than ``start``: it was replaced (rotated or cut),
    and counting from that offset would silently miss requests."""
    if not path.is_file():
        return b""
    with path.open("rb") as log:
        size = log.seek(0, os.SEEK_END)
        if size < start:
            raise ControlPlaneError(f"the audit log {path} is {size} bytes, shorter than the offset {start} read "
                                    "from: it was rotated or cut, so its requests cannot be counted")
        log.seek(start)
        return log.read()


@contextlib.contextmanager
def running_control_plane(**kwargs: object) -> Iterator[ControlPlane]:
    """A started ``ControlPlane``, stopped (and its folder removed unless something failed) on exit."""
    plane = ControlPlane(**kwargs)  # type: ignore[arg-type]
    with plane:
        yield plane
