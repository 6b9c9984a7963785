"""gunicorn configuration of the hook server:
``gunicorn --config hooks/server/gunicorn.conf.py 'hooks.wsgi:production_app()'``.

Read by the gunicorn master from the repository root (or /app in the image). Command-line options
(``--bind``, ``--workers``, ...) and ``GUNICORN_CMD_ARGS`` override what is set here.

Worker model, measured (see the table below): live pod reads block on the API server for up to
``NVCRE_API_TIMEOUT_SECONDS``, and Metacontroller calls with 5 concurrent workers, so a worker must
keep answering other calls while one waits on I/O. ``gthread`` gives threads in each process; the sync
worker gives one call per process. Shipped: 1 process x 8 threads ("One worker per pod" below).

Measured on this 2-core machine, gunicorn 27.0.1, Python 3.11, 5 concurrent keep-alive clients
(as Metacontroller's 5 workers) posting a valid /sync for 8 s each, against the real app with a
stub Reader without a cache (no JobSet observed). "io" adds 50 ms of blocking I/O to every read
(as a read going to the API server); "cpu" has none (as cache hits).
The load generator shared the 2 cores with the server and other jobs, so absolute numbers are low.

    worker model            cpu: req/s   p50     p99      | io: req/s   p50     p99
    sync, 2 workers             921-1030  5 ms    8-13 ms  |     13.4   320 ms  465 ms
    sync, 5 workers                  887  4 ms      19 ms  |     32.5   155 ms  159 ms
    gthread, 2 x 4 threads     1030-1360  3-4 ms  14-20 ms |     32.5   154 ms  159 ms
    (with 200 ms reads: sync 2 gave 3.9 req/s, p50 1210 ms; gthread 2 x 4 gave 8.8 req/s, p50 604 ms)

The decision for a new Job makes three reads (cache, live, cache), hence 150 ms per call in "io".
CPU-bound, the two models are within the noise of a shared machine (sync has the tighter p99, as
an earlier test found). With blocking reads, 2 sync workers queue Metacontroller's 5 concurrent
calls (2-2.5x the latency, 40 % of the throughput); gthread 2 x 4 answers them all at once, like
5 sync processes, with 2 Readers instead of 5 (each cache is shared by 4 threads, so it hits more,
and memory stays at two processes). Hence gthread, then 2 workers x 4 threads (8 >= 5 concurrent calls).

One worker per pod (issue 36 item 2). Each worker builds its own Reader and cache in
``production_app()`` (``preload_app = False``): nothing is shared across processes, so each worker
is one more pod watch on the API server and one more copy of every NVCRE pod watched. The default is
therefore 1 worker x 8 threads (``hooks.server.config.GUNICORN_WORKERS``/``GUNICORN_THREADS``; a large
install 1 x 20, ``manifests-large/``): 8 >= Metacontroller's 5 concurrent calls, as before. The CPU is
not the limit: the steady load at 1,000 Jobs is about 33 syncs/s over two replicas, and one worker
answered 300-390 syncs/s at 5-20 concurrent callers on this shared machine (2 workers: 300-570 in the
same minutes; ``bench sync_http``). What one process costs (a crash fails all the pod's calls in
flight; a long CPU-bound call slows the others through the GIL) and why availability rests on the 2
replicas and the PDB instead: docs/operations.md, "One worker per pod". ``WEB_CONCURRENCY``,
``--workers`` and ``GUNICORN_CMD_ARGS`` still set more workers; everything here works with any number.

Memory (issue 36 item 2; ``python -m bench.cache_memory pod``, BENCHMARKS.md section 4). A pod's
cgroup is charged each physical page once, so the pod's figure is the PSS of its processes summed
(a page master and worker share is split between them), not their RSS summed (which counts it
twice). With 8,000 realistic pods watched and 5 callers: 91 MiB PSS (the master 21, the worker 70;
118-120 before the first item below, 124-127 before the last two), against 112 MiB of RSS; the
pod's pages counted once each with the shared libraries' code in full (a pod alone on a node) 98
MiB. What keeps it there:

- the kubernetes client's ``ApiClient`` without its generated API classes (``podread.rest``): those
  imported 274 model modules and a pydantic validator per method, 27 MiB PSS;
- one worker (above): a second one was about 95 MiB PSS more;
- ``gc.freeze()`` in ``pre_fork``: the worker's collections do not walk, and so do not copy, the
  objects it inherits from the master (3-4 MiB);
- the image's ``MALLOC_ARENA_MAX=2`` and ``MALLOC_MMAP_THRESHOLD_=131072``
  (``hooks.server.config``): fewer malloc arenas, and large blocks (the watch's list pages) give
  their pages back when freed.

Importing the app's modules (Flask, the kubernetes client, the hooks) in the master before the fork,
for the worker to share them, was measured and is not done: the worker's reference counts write to
those pages, so most of them are copied anyway, and with one worker nothing was duplicated to begin
with: the pod's PSS was 5-6 MiB more (128-130 MiB); with 2 workers 7 MiB less (209 against 216).
What remains is the interpreter and its libraries before any pod (65 MiB PSS with 64 pods: the
worker 46, the master 19 with gunicorn and the metrics port) and about 3.3 KB per pod watched.

Metrics are served apart from the hooks: the master serves
``GET /metrics`` on ``NVCRE_METRICS_PORT`` (default 9090, on the host of the first ``--bind``
address) from a thread of its own, and a scrape sees every worker through prometheus-client's
multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, a fresh temporary directory when unset). The hook
port serves no /metrics, so the NetworkPolicy can admit Metacontroller to one port and Prometheus
to the other.

Keep-alive (issue 31). Metacontroller v4.17.2 calls the hooks with Go's ``http.Client`` over the
default transport: connections are kept alive, and an idle one is closed by the client after
``IdleConnTimeout`` = 90 s (``DefaultTransport``, net/http/transport.go; at most 2 stay idle per
host). A POST without an ``Idempotency-Key`` header is not ``isReplayable``, so when the server
closes a reused connection just as the client writes a call on it, Go does not retry: the sync
fails with ``Post ".../sync": EOF`` and is requeued with backoff. With ``keepalive = 5`` that
happened 5 times in one 12-Job run, at resync ticks: a Job resynced every 5 s
(``NVCRE_RESYNC_SECONDS``) reused its connection after about 5 s idle, when gunicorn (which looks
once a second) was closing it. Only the side that closes an idle connection cannot race with
itself, so that side must be the client: ``keepalive = 120`` > 90 s, and no call is ever written
to a connection the server is closing for idleness. The cost is nothing to speak of: Go keeps at
most 2 idle connections per Metacontroller replica, a gthread worker holds up to
``worker_connections - threads`` (996) idle ones without a thread each, and kubelet's probes do
not keep theirs alive.

Worker replacement. Nothing here recycles workers (no ``max_requests``: ``git log -S max_requests``
finds none, and gunicorn's default is 0). A planned stop (SIGTERM at the pod's end, a HUP, or
``--max-requests`` should an operator add it) is clean in gunicorn 27's gthread worker: it stops
accepting, finishes the calls in flight within ``graceful_timeout``, answers every call from then
on with ``Connection: close``, and keeps its idle kept-alive connections 2 s more, answering (with
``Connection: close``) a call that arrives on one, so a busy client moves to another worker
without a dropped call (tests/server/test_gunicorn.py replaces workers under keep-alive load). A
connection still idle after those 2 s is closed: a Go client sees the FIN and dials anew, except
for a call written in that very instant, which fails with ``EOF`` and is requeued as above. A
crash (a SIGSEGV, the OOM killer, a ``WORKER TIMEOUT`` kill) cannot be made clean: the calls in
flight on that worker fail with ``EOF`` or ``connection reset by peer``, its idle connections are
closed by the kernel (the client dials anew), Metacontroller requeues those syncs with backoff,
and the master starts a new worker. The one crash seen under load (threads making their first
msgspec conversion at once, which replaced a worker in tests/server/test_load.py) is gone:
``hooks.core.declared.prepare``.
"""

from __future__ import annotations

import atexit
import gc
import glob
import os
import shutil
import socket
import tempfile
from typing import Any

import orjson
from gunicorn.glogging import Logger, SafeAtoms

from hooks.server.config import GUNICORN_THREADS, GUNICORN_WORKERS, Settings
from hooks.server.logs import gunicorn_logging

_settings = Settings.from_env()  # a bad value stops the master here, naming the variable

# --- sockets and workers ---------------------------------------------------------------------------
bind = [f"127.0.0.1:{_settings.port}"]  # `make run` and the image pass --bind explicitly
worker_class = "gthread"
# One worker per hooks pod, so one pod watch and one cache (see "One worker per pod" above);
# WEB_CONCURRENCY, --workers or GUNICORN_CMD_ARGS still set more.
workers = int(os.environ.get("WEB_CONCURRENCY", str(GUNICORN_WORKERS)))
threads = GUNICORN_THREADS
preload_app = False
# Idle keep-alive connections: the client must be the one to close them (see "Keep-alive" above).
keepalive = 120  # seconds; above Go's 90 s IdleConnTimeout, with 30 s to spare

# Above NVCRE_API_TIMEOUT_SECONDS (under 10 s) and Metacontroller's 10 s hook timeout: a worker is
# only killed when it is truly stuck, never while a read may still time out on its own.
timeout = 30
# In-flight calls finish within Metacontroller's 10 s timeout; 15 s leaves room, and with the
# Deployment's 5 s preStop still fits the default 30 s termination grace period.
graceful_timeout = 15

# The control socket (gunicornc) would be created under $HOME, which the image's read-only root
# filesystem does not allow and parallel test servers would share.
control_socket_disable = True

# --- logs: JSON lines on stderr ----------------------------------------------------------------------
loglevel = _settings.log_level.lower()
logconfig_dict = gunicorn_logging(_settings.log_level)
access_log_format = (
    '{"time": "%(t)s", "level": "INFO", "logger": "gunicorn.access", "pid": "%(p)s", '
    '"remote": "%(h)s", "method": "%(m)s", "path": "%(U)s", "status": %(s)s, "bytes": "%(b)s", '
    '"duration_ms": %(M)s, "user_agent": "%(a)s"}'
)


class JsonSafeAtoms(SafeAtoms):
    """gunicorn's access-log atoms with every string JSON-escaped, so ``access_log_format`` stays
    valid JSON whatever a path or user agent holds (quotes, backslashes, control characters)."""

    def __init__(self, atoms: dict[str, Any]) -> None:
        dict.__init__(self)
        for key, value in atoms.items():
            self[key] = orjson.dumps(value).decode()[1:-1] if isinstance(value, str) else value


class JsonAccessLogger(Logger):
    """gunicorn's logger, with JSON-escaped access-log atoms."""

    atoms_wrapper_class = JsonSafeAtoms


logger_class = JsonAccessLogger

# --- metrics across worker processes ---------------------------------------------------------------
_METRIC_FILES = ("counter_*.db", "gauge_*.db", "histogram_*.db", "summary_*.db")
_owned_metrics_dir: str | None = None


def on_starting(server: Any) -> None:
    """In the master, before any worker starts: prepares prometheus-client's multiprocess directory.

    With ``PROMETHEUS_MULTIPROC_DIR`` set, removes metric files a previous run left there (only
    prometheus-client's own ``*.db`` files: the directory may be a shared /tmp). Without it,
    creates a temporary directory (removed on exit) and exports it, so the workers write their
    values there and the master's metrics port reads them (also with one worker: the master is
    another process). Runs before anything here imports prometheus_client, which picks its
    multiprocess mode at import (so the master imports no more than it needs: see "Memory" above).
    """
    global _owned_metrics_dir
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        os.makedirs(directory, exist_ok=True)
        for pattern in _METRIC_FILES:
            for path in glob.glob(os.path.join(directory, pattern)):
                os.remove(path)
    else:
        _owned_metrics_dir = tempfile.mkdtemp(prefix="nvcre-hooks-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = _owned_metrics_dir
        # a failed boot (a port that cannot be bound, a worker that cannot start) exits the master
        # without on_exit: remove the directory then too, but only in the master (workers, forked
        # from it, inherit this handler and also exit through sys.exit)
        atexit.register(_remove_owned_metrics_dir, os.getpid())
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        server.log.info("prometheus multiprocess metrics in %s", os.environ["PROMETHEUS_MULTIPROC_DIR"])


def pre_fork(server: Any, worker: Any) -> None:
    """In the master, right before it forks a worker: moves every object the master holds into the
    garbage collector's permanent generation (``gc.freeze``), so that the worker's collections do not
    walk them. A walk writes to each object's header, and the kernel then copies every page of the
    master's that holds one into the worker: pages the two processes shared become two (see "Memory"
    above). The master's own objects made until then are never collected (gunicorn and the metrics
    port: made once, kept for the master's life)."""
    gc.freeze()


def when_ready(server: Any) -> None:
    """In the master, once the hook sockets are bound: serves ``/metrics`` on ``NVCRE_METRICS_PORT``
    (``hooks.server.metrics.serve``). A port that cannot be bound stops the server at start-up,
    saying which port and why."""
    from hooks.server import metrics  # after on_starting exported PROMETHEUS_MULTIPROC_DIR

    host = _metrics_host(server)
    try:
        metrics.serve(host, _settings.metrics_port)
    except OSError as exc:
        server.log.error("cannot serve /metrics on %s:%s (NVCRE_METRICS_PORT): %s", host, _settings.metrics_port, exc)
        raise SystemExit(1) from None
    server.log.info("metrics at http://%s:%s/metrics", host, _settings.metrics_port)


def _metrics_host(server: Any) -> str:
    """The host of the first TCP address the hooks are bound to (``0.0.0.0`` in the image,
    ``127.0.0.1`` by default), so metrics listen where the hooks do; ``127.0.0.1`` without one."""
    for listener in getattr(server, "LISTENERS", []):
        sock = getattr(listener, "sock", None)
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            return str(sock.getsockname()[0])
    return "127.0.0.1"


def worker_exit(server: Any, worker: Any) -> None:
    """In the worker, as it exits: stops its Reader's pod watch (``Reader.close``), so the watch
    request is shut rather than cut by the process' end."""
    app = getattr(worker, "wsgi", None)
    reader = getattr(app, "extensions", {}).get("nvcre_reader") if app is not None else None
    if reader is not None and hasattr(reader, "close"):
        reader.close()


def child_exit(server: Any, worker: Any) -> None:
    """In the master, after a worker exited: tells prometheus-client that its process is dead."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


def on_exit(server: Any) -> None:
    """In the master, on shutdown: removes the metrics directory it created itself, if any."""
    _remove_owned_metrics_dir(os.getpid())


def _remove_owned_metrics_dir(master_pid: int) -> None:
    """Removes the metrics directory ``on_starting`` created, when called in the master
    (``master_pid``); also registered with ``atexit`` so that a failed boot leaves none behind."""
    if _owned_metrics_dir and os.getpid() == master_pid:
        shutil.rmtree(_owned_metrics_dir, ignore_errors=True)
