"""Start the real hook server (gunicorn with ``hooks/server/gunicorn.conf.py``) as a subprocess for tests.

``HookServer`` runs ``python -m gunicorn --config hooks/server/gunicorn.conf.py --bind 127.0.0.1:<port>
'hooks.wsgi:production_app()'`` from the repository root with a kubeconfig for a ``FakeKubeServer`` (or
any ``KubeconfigWriter``: the cluster tier's real API server) and
small timeouts, waits for ``/readyz``, captures stderr (the JSON logs) to a file and stops with
SIGTERM. Nothing but 127.0.0.1 is used.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Protocol

from hooks.server.config import GUNICORN_WORKERS
from tests.e2e.driver import HttpTransport
from tests.fakekube import FakeKubeServer
from tests.support.ports import free_port

REPO = Path(__file__).resolve().parents[2]

DEFAULT_ENV = {
    "NVCRE_CACHE_TTL_SECONDS": "0.3",
    "NVCRE_RESYNC_SECONDS": "0.5",
    "NVCRE_API_TIMEOUT_SECONDS": "1",
    "NVCRE_LOG_LEVEL": "INFO",
}
"""Small timeouts so staleness and failed reads show up within a test's lifetime."""


class KubeconfigWriter(Protocol):
    """What the hook server needs of the API server it reads: a kubeconfig written to ``path``."""

    def write_kubeconfig(self, path: str | Path) -> str: ...


class HookServer:
    """The real gunicorn hook server in a subprocess, pointed at ``fake`` (a started FakeKubeServer,
    or any ``KubeconfigWriter``).

    ``env`` adds or overrides environment variables (``DEFAULT_ENV`` first); ``args`` are extra
    gunicorn command-line options (e.g. ``["--workers", "1"]``). Use as a context manager.
    """

    def __init__(
        self,
        fake: KubeconfigWriter,
        *,
        env: Mapping[str, str] | None = None,
        args: list[str] | None = None,
        token: str | None = None,
        startup_timeout: float = 30.0,
    ) -> None:
        self.fake = fake
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.metrics_port = free_port()
        self.metrics_url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        """The master serves /metrics on a port of its own (``NVCRE_METRICS_PORT``), not the hook port."""
        self.token = token
        self._dir = tempfile.TemporaryDirectory(prefix="nvcre-e2e-")
        workdir = Path(self._dir.name)
        self.log_path = workdir / "gunicorn.log"
        self.kubeconfig = fake.write_kubeconfig(workdir / "kubeconfig")
        self._env = dict(os.environ)
        for name in list(self._env):
            if name.startswith(("NVCRE_", "PROMETHEUS_MULTIPROC", "GUNICORN_CMD_ARGS", "WEB_CONCURRENCY")):
                del self._env[name]
        self._env.update(DEFAULT_ENV)
        self._env.update({"KUBECONFIG": self.kubeconfig, "PYTHONUNBUFFERED": "1",
                          "NVCRE_METRICS_PORT": str(self.metrics_port)})
        if token is not None:
            token_file = workdir / "hook-token"
            token_file.write_text(token + "\n")
            self._env["NVCRE_HOOK_TOKEN_FILE"] = str(token_file)
        self._env.update(env or {})
        self._args = list(args or [])
        self._startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self._log_handle: object | None = None
        self._transports: list[HttpTransport] = []

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> HookServer:
        """Starts gunicorn and waits until ``/readyz`` answers 200 (raises with the log otherwise)."""
        command = [
            sys.executable, "-m", "gunicorn", "--config", "hooks/server/gunicorn.conf.py",
            "--bind", f"127.0.0.1:{self.port}", *self._args, "hooks.wsgi:production_app()",
        ]
        log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self._log_handle = log
        self.process = subprocess.Popen(
            command, cwd=REPO, env=self._env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + self._startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}:\n{self.logs()}")
            with contextlib.suppress(OSError, http.client.HTTPException):
                if self.get("/readyz")[0] == 200 and len(self.worker_pids()) >= self._expected_workers():
                    return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"gunicorn did not become ready in {self._startup_timeout}s:\n{self.logs()}")

    def _expected_workers(self) -> int:
        if "--workers" in self._args:
            return int(self._args[self._args.index("--workers") + 1])
        return int(self._env.get("WEB_CONCURRENCY", str(GUNICORN_WORKERS)))

    def stop(self) -> int | None:
        """SIGTERM to the master, wait for a graceful exit (SIGKILL after 20 s); returns the exit code."""
        code = None
        for transport in self._transports:
            transport.close()  # else each stopping worker keeps its idle connections 2 s more
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                code = self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                code = self.process.wait(timeout=5)
        elif self.process is not None:
            code = self.process.returncode
        if self._log_handle is not None:
            self._log_handle.close()  # type: ignore[attr-defined]
            self._log_handle = None
        return code

    def close(self) -> None:
        """Stops the server and removes its temporary directory."""
        self.stop()
        self._dir.cleanup()

    def __enter__(self) -> HookServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- observation -------------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        """The gunicorn master's pid."""
        assert self.process is not None
        return self.process.pid

    def worker_pids(self) -> list[int]:
        """The pids of the master's live child processes (the gunicorn workers)."""
        children: list[int] = []
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{self.pid}/task").iterdir():
                with contextlib.suppress(OSError):
                    children += [int(p) for p in (task / "children").read_text().split()]
        return sorted(children)

    def rss_kib(self) -> dict[int, int]:
        """VmRSS (KiB) of each worker process, from /proc/<pid>/status."""
        sizes: dict[int, int] = {}
        for pid in self.worker_pids():
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        sizes[pid] = int(line.split()[1])
        return sizes

    def logs(self) -> str:
        """Everything gunicorn wrote to stdout and stderr so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    # -- HTTP --------------------------------------------------------------------------------------

    def transport(self) -> HttpTransport:
        """Metacontroller's hook client to this server (``tests.e2e.driver.HttpTransport``: kept-alive
        connections, as Go's transport); its idle connections are closed when the server stops."""
        transport = HttpTransport("127.0.0.1", self.port)
        self._transports.append(transport)
        return transport

    def connection(self, timeout: float = 10.0) -> http.client.HTTPConnection:
        """A new HTTP connection to the server."""
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 10.0,
    ) -> tuple[int, bytes, dict[str, str]]:
        """One request on a fresh connection: ``(status, body, headers)``."""
        connection = self.connection(timeout)
        try:
            connection.request(method, path, body=body, headers=dict(headers or {}))
            response = connection.getresponse()
            return response.status, response.read(), {k.lower(): v for k, v in response.getheaders()}
        finally:
            connection.close()

    def metrics(self) -> str:
        """The Prometheus text the metrics port serves now (every worker's values)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=10.0)
        try:
            connection.request("GET", "/metrics")
            response = connection.getresponse()
            body = response.read()
            assert response.status == 200, (response.status, body[:300])
            return body.decode()
        finally:
            connection.close()

    def get(self, path: str) -> tuple[int, bytes]:
        """``GET path``: ``(status, body)``."""
        status, body, _ = self.request("GET", path, timeout=5.0)
        return status, body

    def post(self, path: str, body: bytes, *, token: str | None = None, timeout: float = 10.0) -> tuple[int, bytes]:
        """``POST path`` with a JSON body and, when given, ``Authorization: Bearer <token>``."""
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        status, data, _ = self.request("POST", path, body, headers, timeout)
        return status, data


@contextlib.contextmanager
def running_stack(
    *, env: Mapping[str, str] | None = None, args: list[str] | None = None, token: str | None = None
) -> Iterator[tuple[FakeKubeServer, HookServer]]:
    """A started FakeKubeServer and a HookServer reading from it; both stopped on exit."""
    with FakeKubeServer() as fake, HookServer(fake, env=env, args=args, token=token) as server:
        yield fake, server
