"""Benchmark 2: ``/sync`` through gunicorn against a no-op floor app, at concurrency 1, 5 and 20.

Both servers run with the production config (``hooks/server/gunicorn.conf.py``: gthread, 1 worker x 8
threads since issue 36 item 2, 2 x 4 before; ``WEB_CONCURRENCY`` in the environment sets more
workers). The hooks read a running 64-pod Job's pods from the wire-level fake API server
(``KUBECONFIG`` points at it) through a cache kept warm by a one-hour TTL, so each ``/sync`` is one
cache hit. The floor (``bench/floor_app.py``) parses the same body and answers a constant.

The typical body's status differs from the answer, so every call also reads the Job live (the
parent check, ``hooks.server.freshness``). At concurrency 1 the hooks are also loaded with
``settled_body``, the same Job once its answer was written long ago: no live read, the steady state
of a running Job. The difference between the two p50s is what the live read costs.

The load generator is a threaded Python client (one keep-alive ``http.client`` connection per
thread). It runs on the same 2 cores as the servers, so the throughput figures are the machine's,
shared between load and service; the ratio to the floor is what carries over.
"""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from bench.common import BenchResult, Figure, percentile
from bench.pods import realistic_job_pods
from hooks.server.config import GUNICORN_THREADS, GUNICORN_WORKERS
from tests.fakekube import FakeKubeServer
from tests.support import job_request, job_spec, jobset_child
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "team-a"
JOB = "llama"
PODS = 64


def sync_body() -> bytes:
    """A typical /sync: a running 64-worker Job whose JobSet is observed (row 10, one cached read).
    Its status is not the one the hooks answer, so every call also reads the Job live
    (``hooks.server.freshness``: the fake API server holds it), as a call that changes the status does."""
    status = {"phase": "Running", "attempt": 0, "restarts": 0, "workload": f"{JOB}-0", "activePods": PODS,
              "conditions": [], "message": "", "observedGeneration": 1}
    request = job_request(name=JOB, namespace=NAMESPACE, spec=job_spec(workers=PODS, max_restarts=2),
                          status=status, jobsets=[jobset_child(JOB, 0, namespace=NAMESPACE)])
    return orjson.dumps(request)


def settled_body() -> bytes:
    """``sync_body`` once the hooks' answer is written: its status is the one the hooks answer for it
    and was written (``managedFields``, subresource ``status``) long ago, so the answer changes
    nothing and no live Job read is made (``hooks.server.freshness.needs_check``): the steady state
    of a Job that runs, against which the live read's cost shows."""
    from datetime import UTC, datetime, timedelta

    from hooks.core.decide import decide
    from hooks.core.observed import parse_request
    from podread import reader_from_snapshot

    request = orjson.loads(sync_body())
    reader = reader_from_snapshot({"items": realistic_job_pods(JOB, PODS, NAMESPACE)})
    written = (datetime.now(UTC) - timedelta(hours=1)).replace(microsecond=0)  # answered and written then
    answer = decide(parse_request(request, "sync"), reader, written).response
    request["parent"]["status"] = answer["status"]
    request["parent"]["metadata"]["managedFields"] = [{"manager": "metacontroller", "operation": "Update",
                                                       "subresource": "status",
                                                       "time": written.strftime("%Y-%m-%dT%H:%M:%SZ")}]
    return orjson.dumps(request)


@contextmanager
def gunicorn(app: str, env: dict[str, str], log: Path) -> Any:
    """Serves ``app`` with ``hooks/server/gunicorn.conf.py`` on a free port; yields the port. Its
    master's ``/metrics`` takes a free port too (``NVCRE_METRICS_PORT``), never the default 9090 a
    ``make run`` beside the benchmark may hold."""
    port = free_port()
    command = [str(Path(sys.executable).parent / "gunicorn"), "--config", "hooks/server/gunicorn.conf.py",
               "--bind", f"127.0.0.1:{port}", app]
    env = {**env, "NVCRE_METRICS_PORT": str(free_port())}
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"gunicorn {app} exited: {log.read_text()[-2000:]}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                connection.request("GET", "/readyz")
                if connection.getresponse().status == 200:
                    connection.close()
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn {app} did not become ready: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def is_job_read(request: Any) -> bool:
    """Whether a request to the fake API server is the parent check's live Job GET."""
    return request.method == "GET" and request.path.endswith(f"/jobs/{JOB}")


def load(port: int, body: bytes, concurrency: int, seconds: float) -> dict[str, Any]:
    """``concurrency`` keep-alive clients POST ``body`` to /sync for ``seconds``; latencies and rate."""
    latencies: list[list[float]] = [[] for _ in range(concurrency)]
    errors = [0] * concurrency
    start = threading.Barrier(concurrency + 1)
    stop_at = [0.0]
    headers = {"Content-Type": "application/json"}

    def client(index: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine = latencies[index]
        start.wait()
        while True:
            began = time.perf_counter()
            if began >= stop_at[0]:
                break
            try:
                connection.request("POST", "/sync", body, headers)
                response = connection.getresponse()
                response.read()
                if response.status != 200:
                    errors[index] += 1
            except (OSError, http.client.HTTPException):
                errors[index] += 1
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                continue
            mine.append(time.perf_counter() - began)
        connection.close()

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    stop_at[0] = began + seconds
    start.wait()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    every = [value for mine in latencies for value in mine]
    return {"requests": len(every), "errors": sum(errors), "per_s": len(every) / elapsed,
            "p50_ms": percentile(every, 0.5) * 1000, "p99_ms": percentile(every, 0.99) * 1000}


def run(quick: bool = False, *, seconds: float | None = None,
        levels: tuple[int, ...] = (1, 5, 20)) -> BenchResult:
    """Serves the hooks and the floor in turn and loads each at every concurrency level."""
    seconds = seconds or (0.5 if quick else 3.0)
    result = BenchResult("sync_http", "/sync through gunicorn versus a no-op floor")
    body, settled = sync_body(), settled_body()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="nvcre-bench-") as tmp, FakeKubeServer() as server:
        server.put_pods(realistic_job_pods(JOB, PODS, NAMESPACE))
        server.put_job(orjson.loads(body)["parent"])
        env = {key: value for key, value in os.environ.items() if key != "PROMETHEUS_MULTIPROC_DIR"}
        env.update({"KUBECONFIG": server.write_kubeconfig(Path(tmp) / "kubeconfig"),
                    "NVCRE_CACHE_TTL_SECONDS": "3600", "PYTHONPATH": str(ROOT)})
        env.pop("NVCRE_HOOK_TOKEN_FILE", None)
        for name, app in (("floor", "bench.floor_app:create_app()"), ("sync", "hooks.wsgi:production_app()")):
            with gunicorn(app, env, Path(tmp) / f"{name}.log") as port:
                check = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                check.request("POST", "/sync", body, {"Content-Type": "application/json"})
                answer = check.getresponse()
                payload = orjson.loads(answer.read())
                check.close()
                if answer.status != 200:
                    raise RuntimeError(f"{name} answered {answer.status}: {payload}")
                if name == "sync" and payload["status"].get("activePods") != PODS:
                    raise RuntimeError(f"/sync did not read the 64 pods: {payload['status']}")
                load(port, body, 4, 0.3 if quick else 1.0)  # warm both workers (and their caches)
                for level in levels:
                    row = load(port, body, level, seconds)
                    rows.append({"app": name, "concurrency": level, **{k: round(v, 3) if isinstance(v, float) else v
                                                                       for k, v in row.items()}})
                if name == "sync" and 1 in levels:
                    reads_before = server.request_count(predicate=is_job_read)
                    row = load(port, settled, 1, seconds)
                    if server.request_count(predicate=is_job_read) != reads_before:
                        raise RuntimeError("a settled /sync read the Job live: it is not the steady state")
                    rows.append({"app": "sync (settled: no live Job read)", "concurrency": 1,
                                 **{k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}})
        lists = server.request_count(predicate=lambda r: r.path.endswith("/pods"))
        job_reads = server.request_count(predicate=is_job_read)
    result.tables["load"] = rows
    by = {(row["app"], row["concurrency"]): row for row in rows}
    for level in levels:
        sync, floor = by[("sync", level)], by[("floor", level)]
        target = "<= 1.5 x floor" if level == 1 else ""
        met = sync["p50_ms"] <= 1.5 * floor["p50_ms"] if level == 1 else None
        result.figures.append(Figure(f"/sync p50 latency, concurrency {level}", sync["p50_ms"], "ms",
                                     floor["p50_ms"], "floor app p50", target=target, met=met,
                                     note=f"p99 {sync['p99_ms']:.2f} ms vs floor {floor['p99_ms']:.2f} ms"))
    steady = by.get(("sync (settled: no live Job read)", 1))
    if steady is not None:
        result.figures.append(Figure("/sync p50 latency, concurrency 1, settled Job (no live Job read)",
                                     steady["p50_ms"], "ms", by[("floor", 1)]["p50_ms"], "floor app p50",
                                     note=f"p99 {steady['p99_ms']:.2f} ms; the live Job read of every other "
                                          f"/sync costs the difference"))
    best = max((by[("sync", level)] for level in levels), key=lambda row: row["per_s"])
    best_floor = max(by[("floor", level)]["per_s"] for level in levels)
    result.figures.append(Figure(f"/sync throughput (best, concurrency {best['concurrency']})", best["per_s"],
                                 "syncs/s", best_floor, "floor app best", target=">= 1000 syncs/s on 2 cores",
                                 met=best["per_s"] >= 1000))
    result.scale = {"seconds_per_level": seconds, "levels": list(levels), "pods": PODS, "body_bytes": len(body),
                    "workers": f"gthread, {os.environ.get('WEB_CONCURRENCY') or GUNICORN_WORKERS} process(es) x "
                               f"{GUNICORN_THREADS} threads (hooks/server/gunicorn.conf.py)",
                    "pod_list_requests_to_fake_api": lists, "live_job_reads_to_fake_api": job_reads,
                    "load_generator": "threaded http.client, same 2 cores"}
    result.notes.append("the load generator shares the 2 cores with gunicorn: throughput is for the machine "
                        "as a whole, latency includes the client's own time")
    return result
