"""The real server: gunicorn with hooks/server/gunicorn.conf.py (its default layout, one worker process;
``WEB_CONCURRENCY=2`` where several are tested), no cluster configured.

One server is started for the module; the tests talk HTTP to it, and the last one stops it with
SIGTERM and reads its logs.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import runpy
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hooks.server.config import GUNICORN_WORKERS
from tests.server.test_app_http import job_request
from tests.support.ports import free_port

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_gunicorn")]
"""One pytest-xdist worker runs the whole module, in order (``make test``: ``--dist loadgroup``): its
tests share one server (``server``, module scope), count the calls the ones before made, and stop it."""

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "gunicorn-test-token"
MAX_BODY = 65536


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    log: Path
    metrics_port: int

    def request(self, method: str, path: str, body: bytes | None = None, *, token: str | None = TOKEN,
                chunked: bool = False, port: int | None = None) -> tuple[int, dict[str, str], bytes]:
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        connection = http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=10)
        try:
            if chunked:
                connection.request(method, path, iter([body or b""]), headers, encode_chunked=True)
            else:
                connection.request(method, path, body, headers)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines()


def no_cluster_env(tmp: Path, metrics_port: int) -> dict[str, str]:
    """The parent's environment with every source of cluster configuration taken away."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KUBERNETES_", "NVCRE_", "PROMETHEUS_", "GUNICORN_")) and k != "WEB_CONCURRENCY"}
    (tmp / "token").write_text(TOKEN + "\n")
    env.update({
        "KUBECONFIG": str(tmp / "no-such-kubeconfig"),
        "HOME": str(tmp),
        "NVCRE_HOOK_TOKEN_FILE": str(tmp / "token"),
        "NVCRE_RESYNC_SECONDS": "3",
        "NVCRE_MAX_BODY_BYTES": str(MAX_BODY),
        "PYTHONUNBUFFERED": "1",
        "NVCRE_METRICS_PORT": str(metrics_port),
    })
    return env


@contextlib.contextmanager
def started(tmp: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Server]:
    """gunicorn with the production config, extra command-line ``args`` and environment ``env``, no
    cluster, ready (``/readyz`` 200); killed on exit if it still runs."""
    port, metrics_port = free_port(), free_port()
    log = tmp / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--config", "hooks/server/gunicorn.conf.py",
             "--bind", f"127.0.0.1:{port}", *args, "hooks.wsgi:production_app()"],
            cwd=ROOT, env={**no_cluster_env(tmp, metrics_port), **(env or {})}, stdout=out,
            stderr=subprocess.STDOUT,
        )
    running = Server(process, port, log, metrics_port)
    try:
        deadline = time.monotonic() + 10
        while True:
            assert process.poll() is None, f"gunicorn exited:\n{log.read_text()}"
            try:  # ready, and this gunicorn's: one that could not bind the port (another test's server
                # took it after ``free_port``) retries for seconds while that server answers /readyz
                if listening(running) and running.request("GET", "/readyz", token=None)[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"gunicorn not ready after 10 s:\n{log.read_text()}"
            time.sleep(0.1)
        yield running
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def listening(server: Server) -> bool:
    """Whether this server's master logged that it listens on its own port (gunicorn's "Listening at")."""
    wanted = f"Listening at: http://127.0.0.1:{server.port} ({server.process.pid})"
    return any(wanted in line for line in server.lines())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with started(tmp_path_factory.mktemp("gunicorn")) as running:
        yield running


def test_a_sync_without_a_cluster_is_not_answered(server: Server) -> None:
    """No cluster: every pod read fails, so the decision holds (design §5), and the request's Job
    cannot be checked against the live one before an answer that writes a status is sent
    (hooks.server.freshness): a 503 that says why, nothing written; Metacontroller calls again."""
    status, headers, body = server.request("POST", "/sync", json.dumps(job_request()).encode())
    assert status == 503, body
    assert headers["Content-Type"] == "application/json"
    error = json.loads(body)["error"]
    assert "could not read Job team-a/llama" in error and "no cluster configuration" in error


def test_bad_requests_through_the_real_server(server: Server) -> None:
    assert server.request("POST", "/sync", b"{}", token=None)[0] == 401
    assert server.request("POST", "/sync", b"{}", token="wrong")[0] == 401
    assert server.request("POST", "/sync", b"not json")[0] == 400
    status, headers, _ = server.request("GET", "/sync")
    assert status == 405 and headers["Allow"] == "POST"
    too_big = json.dumps(job_request(padding="x" * MAX_BODY)).encode()
    assert server.request("POST", "/sync", too_big)[0] == 413
    status, _, body = server.request("POST", "/sync", too_big, chunked=True)
    assert status == 413 and "error" in json.loads(body)
    status, _, body = server.request("GET", '/odd"path\\')
    assert status == 404 and "error" in json.loads(body)


def test_metrics_see_every_worker(server: Server) -> None:
    """The master's metrics port answers the scrape with the calls the worker served (multiprocess
    mode, also with one worker: the master is another process; several workers:
    ``test_workers_replaced_under_keepalive_load_drop_no_call``); the hook port serves no /metrics,
    with or without the token."""
    for token in (None, TOKEN):
        status, _, body = server.request("GET", "/metrics", token=token)
        assert status == 404 and "error" in json.loads(body)
    for _ in range(4):
        status, headers, body = server.request("GET", "/metrics", token=None, port=server.metrics_port)
        assert status == 200 and headers["Content-Type"].startswith("text/plain")
        text = body.decode()
        assert _sample(text, "nvcre_hook_requests_total", hook="sync", code="503") == 1.0
        assert _sample(text, "nvcre_hook_requests_total", hook="sync", code="401") == 2.0
        assert _sample(text, "nvcre_hook_auth_failures_total") == 2.0
        assert _sample(text, "nvcre_hook_request_duration_seconds_count", hook="sync") >= 1.0
        assert _sample(text, "podread_reads_total", method="active_job_pods", source="cache", outcome="error") >= 1


GO_IDLE_CONN_TIMEOUT = 90.0
"""Go's ``http.DefaultTransport.IdleConnTimeout``: how long Metacontroller's hook client keeps an idle
connection before it closes it itself (/usr/local/go/src/net/http/transport.go)."""
OLD_KEEPALIVE = 5.0
"""The keep-alive the conf had before issue 31: gunicorn closed a connection idle this long (checked
once a second), the very moment a 5 s resync reused it."""


def closed_by_server(connection: http.client.HTTPConnection) -> bool:
    """Whether the server has closed this idle connection (its socket reads EOF), as Go's transport
    notices before it reuses one."""
    sock = connection.sock
    return sock is None or bool(select.select([sock], [], [], 0)[0])


def test_an_idle_keepalive_connection_outlives_the_clients_idle_timeout(server: Server) -> None:
    """The server keeps an idle connection open longer than Go's client does (the client closes
    first, so it never writes to a connection the server is closing), and connections idle around
    and past the old 5 s keep-alive are reused, each answered on the same socket."""
    conf = runpy.run_path(str(ROOT / "hooks" / "server" / "gunicorn.conf.py"))
    assert conf["keepalive"] > GO_IDLE_CONN_TIMEOUT
    idles = [OLD_KEEPALIVE + extra for extra in (0.0, 0.5, 1.0, 1.5)]  # gunicorn looks every 1 s
    connections = [http.client.HTTPConnection("127.0.0.1", server.port, timeout=10) for _ in idles]
    try:
        for connection in connections:
            connection.request("GET", "/readyz")
            response = connection.getresponse()
            response.read()
            assert response.status == 200 and response.getheader("Connection", "").lower() != "close"
        went_idle = time.monotonic()
        for idle, connection in zip(idles, connections, strict=True):
            time.sleep(max(0.0, went_idle + idle - time.monotonic()))
            sock = connection.sock
            assert not closed_by_server(connection), f"the server closed a connection idle {idle} s"
            connection.request("GET", "/readyz")
            response = connection.getresponse()
            response.read()
            assert response.status == 200 and connection.sock is sock, f"idle {idle} s: not answered on it"
    finally:
        for connection in connections:
            connection.close()


def test_workers_replaced_under_keepalive_load_drop_no_call(tmp_path: Path) -> None:
    """Planned worker replacements (every 40 requests, and a HUP) while 5 clients post on kept-alive
    connections, as Metacontroller's workers do: every call is answered. A retiring worker answers
    its last requests with ``Connection: close`` and serves what arrives on its idle connections
    while it stops (gunicorn 27's gthread worker), so no client writes to a closed connection.
    Two workers (``WEB_CONCURRENCY``, which still overrides the one-worker default): the master's
    metrics port counts every call, those of the workers that retired included (multiprocess mode)."""
    clients, seconds = 5, 2.0
    with started(tmp_path, "--max-requests", "40", env={"WEB_CONCURRENCY": "2"}) as running:
        first_workers = set(_children(running.process.pid))
        assert len(first_workers) == 2, first_workers
        errors: list[str] = []
        answered: list[int] = []
        closes: list[int] = []
        deadline = time.monotonic() + seconds

        def client() -> None:
            connection = http.client.HTTPConnection("127.0.0.1", running.port, timeout=10)
            try:
                while time.monotonic() < deadline:
                    try:
                        connection.request("POST", "/sync", b"{}", {"Content-Type": "application/json"})
                        response = connection.getresponse()
                        response.read()
                        answered.append(response.status)
                        if response.getheader("Connection", "").lower() == "close":
                            closes.append(1)  # http.client opens a new connection for the next call
                    except (OSError, http.client.HTTPException) as exc:
                        errors.append(repr(exc))
                        connection.close()
            finally:
                connection.close()

        threads = [threading.Thread(target=client) for _ in range(clients)]
        for thread in threads:
            thread.start()
        time.sleep(seconds / 2)
        running.process.send_signal(signal.SIGHUP)  # a reload: every worker replaced at once
        for thread in threads:
            thread.join()
        last_workers = set(_children(running.process.pid))
        log = running.log.read_text()
        status, _, metrics = running.request("GET", "/metrics", token=None, port=running.metrics_port)
    assert status == 200
    assert _sample(metrics.decode(), "nvcre_hook_requests_total", hook="sync", code="401") == len(answered)
    assert errors == [], errors[:5]
    assert len(answered) > 40 and set(answered) == {401}, (len(answered), set(answered))  # no token sent
    assert closes, "no worker retired during the load"
    assert not first_workers & last_workers, log[-3000:]
    assert "SIGSEGV" not in log and "WORKER TIMEOUT" not in log


def _children(pid: int) -> list[int]:
    """The pids of ``pid``'s child processes (gunicorn's workers)."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            children += [int(child) for child in (task / "children").read_text().split()]
    return children


def test_sigterm_stops_cleanly_and_every_log_line_is_json(server: Server) -> None:
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=20) == 0
    records = [json.loads(line) for line in server.lines() if line.strip()]
    assert records, "no log lines"
    messages = [str(record.get("message", "")) for record in records]
    workers = {record["pid"] for record in records if str(record.get("message", "")).startswith("Booting worker")}
    assert len(workers) == GUNICORN_WORKERS == 1  # the default layout: one worker, one pod watch
    assert sum("no cluster configuration found" in message for message in messages) == len(workers)  # once per worker
    calls = [r for r in records if r.get("logger") == "nvcre.hooks" and r.get("code") == 503]
    assert calls and calls[0]["job"] == "llama" and calls[0]["namespace"] == "team-a", (
        f"no line of the 503 answer among {len(records)} records:\n" + "\n".join(server.lines()[-60:]))
    access = [r for r in records if r.get("logger") == "gunicorn.access"]
    assert any(r["path"] == '/odd"path\\' and r["status"] == 404 for r in access)
    metrics_dir = next(re.search(r"metrics in (\S+)", m).group(1) for m in messages if "multiprocess metrics in" in m)
    assert not Path(metrics_dir).exists(), "the temporary metrics directory was left behind"


def _sample(text: str, name: str, **labels: Any) -> float:
    """The value of one sample in Prometheus text, matching all ``labels`` (0.0 when absent)."""
    for line in text.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        metric, _, label_text = series.partition("{")
        found = dict(re.findall(r'(\w+)="([^"]*)"', label_text))
        if metric == name and all(found.get(k) == str(v) for k, v in labels.items()):
            return float(value)
    return 0.0


def test_worker_exit_closes_the_workers_reader_so_its_pod_watch_stops() -> None:
    import runpy

    conf = runpy.run_path(str(Path(__file__).resolve().parents[2] / "hooks" / "server" / "gunicorn.conf.py"))
    closed: list[bool] = []

    class Reader:
        def close(self) -> None:
            closed.append(True)

    class App:
        extensions = {"nvcre_reader": Reader()}

    class Worker:
        wsgi = App()

    conf["worker_exit"](None, Worker())
    assert closed == [True]
    conf["worker_exit"](None, object())  # a worker without an app (it failed to boot): nothing to close


def test_the_master_freezes_its_objects_before_each_fork_and_imports_no_part_of_the_app() -> None:
    """``pre_fork`` (in the master, right before each fork) moves the master's objects into the
    garbage collector's permanent generation, so a worker's collections do not walk and copy the pages
    it shares with the master; and ``on_starting`` leaves the app's modules (Flask, the kubernetes
    client, the hooks) to the worker: imported in the master they made the pod larger (the conf's
    "Memory"). In a fresh interpreter, as the master is, so that this process is not frozen."""
    code = (
        "import gc, logging, runpy, sys\n"
        "conf = runpy.run_path('hooks/server/gunicorn.conf.py')\n"
        "class Server:\n"
        "    log = logging.getLogger('test')\n"
        "    class app:\n"
        "        app_uri = 'hooks.wsgi:production_app()'\n"
        "conf['on_starting'](Server())\n"
        "print(sorted(m for m in ('flask', 'kubernetes', 'hooks.wsgi', 'podread') if m in sys.modules))\n"
        "before = gc.get_freeze_count()\n"
        "conf['pre_fork'](Server(), object())\n"
        "print(before, gc.get_freeze_count())\n"
        "conf['on_exit'](Server())\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NVCRE_", "PROMETHEUS_"))}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    imported, counts = done.stdout.splitlines()
    assert imported == "[]", f"the master imported {imported}"
    before, after = map(int, counts.split())
    assert before == 0 and after > 1000, (before, after)  # every object of the master, gunicorn's config's included


@pytest.mark.parametrize("taken", ["hooks", "metrics"])
def test_a_failed_boot_leaves_no_temporary_metrics_directory(tmp_path: Path, taken: str) -> None:
    """A port that cannot be bound stops the server at start-up (the hook port: gunicorn
    exits; the metrics port: ``when_ready``), and the metrics directory it made is removed too."""
    import socket

    port, metrics_port = free_port(), free_port()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**no_cluster_env(tmp_path, metrics_port), "TMPDIR": str(scratch)}
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port if taken == "hooks" else metrics_port))
        holder.listen()
        result = subprocess.run(
            [sys.executable, "-m", "gunicorn", "--config", "hooks/server/gunicorn.conf.py",
             "--bind", f"127.0.0.1:{port}", "hooks.wsgi:production_app()"],
            cwd=ROOT, env=env, capture_output=True, timeout=60)
    log = result.stdout.decode() + result.stderr.decode()
    assert result.returncode != 0, log
    assert "prometheus multiprocess metrics in" in log  # the directory had been made
    assert sorted(p.name for p in scratch.iterdir()) == [], log
