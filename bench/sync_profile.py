"""Where the time goes in ``/sync``: the Flask app in-process, called as WSGI, under cProfile.

The request is the typical one of benchmark 2 (a running 64-pod Job, its JobSet observed, the pods
in a warm cache). The app is ``hooks.server.app.create_app`` with the production Reader shape
``Reader(PodCache(source), live)`` and INFO logs formatted as JSON (written to /dev/null). The
floor is ``bench.floor_app`` called the same way, so the difference is the CPU a sync adds on top
of Flask and the body parse, without HTTP or gunicorn (since issue 32 item 4's fifth pass the hook's
``/sync`` is answered in front of Flask, ``hooks.server.app._HookCalls``: the hook pays no Flask
request handling, the floor does). Both are timed in CPU time, in alternating
batches (``cpu_per_call_alternating``), so a machine loaded by other work moves both alike. The app
is given no parent check (``parents``): the live Job read is over HTTP, in ``sync_http``. Metrics use
the in-process registry (gunicorn's multiprocess mode writes each value to an mmap file instead, a
little slower). The typical call is measured once more with production's default cache mode, its
pods answered by a watch-fed store (``build_watch_app``) instead of a TTL entry.
"""

from __future__ import annotations

import cProfile
import dataclasses
import io
import logging
import os
import pstats
import time
from collections.abc import Callable
from typing import Any

from bench.common import BenchResult, Figure
from bench.pods import realistic_job_pods
from bench.sync_http import JOB, NAMESPACE, PODS, settled_body, sync_body
from hooks.server import logs
from hooks.server.config import Settings
from podread import JOB_INDEX_FIELD, PodCache, Reader, ReadMetrics, SnapshotLister
from podread.slim import slim
from podread.watch import WatchedPods

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Any]


def wsgi_caller(app: WsgiApp, body: bytes) -> Callable[[], int]:
    """A function that POSTs ``body`` to ``/sync`` on ``app`` through WSGI and returns the status."""
    base = {
        "REQUEST_METHOD": "POST", "PATH_INFO": "/sync", "SCRIPT_NAME": "", "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8080", "SERVER_PROTOCOL": "HTTP/1.1",
        "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)), "REMOTE_ADDR": "127.0.0.1",
        "wsgi.version": (1, 0), "wsgi.url_scheme": "http", "wsgi.errors": io.StringIO(),
        "wsgi.multithread": True, "wsgi.multiprocess": True, "wsgi.run_once": False,
    }
    status: list[str] = []

    def start_response(code: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        status.append(code)

    def call() -> int:
        environ = dict(base)
        environ["wsgi.input"] = io.BytesIO(body)
        status.clear()
        chunks = app(environ, start_response)
        b"".join(chunks)
        if hasattr(chunks, "close"):
            chunks.close()
        return int(status[0].split()[0])

    return call


def cpu_per_call_alternating(first: Callable[[], object], second: Callable[[], object], *, batches: int = 7,
                             calls: int = 400) -> tuple[float, float]:
    """CPU seconds per call of ``first`` and of ``second`` (``time.process_time``), each the best of
    ``batches`` batches of ``calls`` calls, the two alternating batch by batch. On a machine other
    work loads, wall time counts the time the process waited for a core, and two figures measured one
    after the other see different loads; CPU time in alternating batches is what the two cost."""
    best = [float("inf"), float("inf")]
    for _ in range(batches):
        for index, fn in enumerate((first, second)):
            started = time.process_time()
            for _ in range(calls):
                fn()
            best[index] = min(best[index], (time.process_time() - started) / calls)
    return best[0], best[1]


def _group(filename: str, function: str) -> str:
    """The bucket a profiled function's own time goes to."""
    path = filename.replace(os.sep, "/")
    for package in ("hooks", "podread"):
        marker = f"/{package}/"
        if marker in path and "site-packages" not in path:
            return f"{package}.{path.rsplit('/', 1)[-1].removesuffix('.py')}"
    for library in ("flask", "werkzeug", "prometheus_client", "cachetools", "jinja2", "click"):
        if f"site-packages/{library}/" in path:
            return library
    if "/logging/" in path:
        return "logging"
    if filename == "~":
        if "orjson" in function:
            return "orjson (parse + encode)"
        return "other builtins"
    return "other stdlib"


def profile(call: Callable[[], int], calls: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], float]:
    """Profiles ``calls`` calls; returns (time by bucket, top functions, total profiled seconds)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call()
    profiler.disable()
    stats = pstats.Stats(profiler)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in raw.values())
    buckets: dict[str, float] = {}
    functions = []
    for (filename, line, function), (_, ncalls, tottime, cumtime, _) in raw.items():
        bucket = _group(filename, function)
        buckets[bucket] = buckets.get(bucket, 0.0) + tottime
        functions.append({"function": f"{os.path.basename(filename)}:{line}({function})", "calls_per_sync":
                          round(ncalls / calls, 1), "own_us_per_sync": round(tottime / calls * 1e6, 1),
                          "cum_us_per_sync": round(cumtime / calls * 1e6, 1)})
    by_bucket = [{"where": name, "own_us_per_sync": round(seconds / calls * 1e6, 1),
                  "share_pct": round(100 * seconds / total, 1)}
                 for name, seconds in sorted(buckets.items(), key=lambda item: -item[1])]
    functions.sort(key=lambda row: -row["own_us_per_sync"])
    return by_bucket, functions[:20], total


def key_paths(call: Callable[[], int], calls: int) -> list[dict[str, Any]]:
    """Cumulative time per sync of the main steps of the hook path."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call()
    profiler.disable()
    wanted = {
        ("app.py", "answered"): "answered (all of the hook: handle, metrics, log line)",
        ("app.py", "view"): "Flask view (a hook call Flask answers)", ("handler.py", "handle"): "handle",
        ("handler.py", "parse_json"): "parse_json (orjson + depth check)",
        ("observed.py", "parse_request"): "parse_request", ("decide.py", "decide"): "decide",
        ("jobset.py", "build_jobset"): "build_jobset", ("reader.py", "job_pods"): "Reader.job_pods (cache hit)",
        ("handler.py", "encode"): "encode response (orjson)", ("app.py", "_account"): "metrics + log line",
        ("logs.py", "log_hook_call"): "log_hook_call",
    }
    rows = []
    raw: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    for (filename, _, function), (_, _, _, cumtime, _) in raw.items():
        label = wanted.get((os.path.basename(filename), function))
        if label and "site-packages" not in filename:
            rows.append({"step": label, "cum_us_per_sync": round(cumtime / calls * 1e6, 1)})
    rows.sort(key=lambda row: -row["cum_us_per_sync"])
    return rows


def build_apps() -> tuple[WsgiApp, WsgiApp]:
    """The hook app (warm TTL cache of a running 64-pod Job) and the floor app, as WSGI callables."""
    from bench.floor_app import create_app as create_floor

    hook_app, _ = _hook_app(watched=False)
    return hook_app, create_floor().wsgi_app


class ListedOnce:
    """What ``PodCache`` asks of a pod watch (``store``, ``start``, ``stop``), for a store filled once:
    a ``podread.watch.WatchedPods`` given a whole list, as a ``PodWatch``'s first cycle gives it,
    confirmed for as long as its TTL. No thread, no request: what a sync costs when the watch
    answers, which production's default cache mode (``NVCRE_CACHE_MODE=watch``) does for a running Job."""

    def __init__(self, store: WatchedPods) -> None:
        self.store = store

    def start(self) -> None:
        """Nothing to start: the store was listed when built."""

    def stop(self, timeout: float = 5.0) -> None:
        """Nothing to stop."""


def build_watch_app() -> tuple[WsgiApp, Callable[[], float]]:
    """The hook app of ``build_apps`` with the production cache mode: the Job's pods answered from a
    watch-fed store (``ListedOnce``, slim as the watch keeps them, confirmed for an hour) instead of a
    TTL entry. Also returns how many cache lookups the store has answered so far."""
    hook_app, registry = _hook_app(watched=True)
    return hook_app, lambda: registry.get_sample_value("podread_cache_lookups_total",
                                                       {"index": JOB_INDEX_FIELD, "result": "watch"}) or 0.0


def _hook_app(*, watched: bool) -> tuple[WsgiApp, Any]:
    """The hook app answering from a cache of the typical call's 64 pods, kept an hour: a TTL entry,
    or with ``watched`` a ``ListedOnce`` watch store in front of it; and the registry of its read
    metrics. INFO logs are JSON lines to /dev/null unless the process logs elsewhere already."""
    from hooks.server.app import create_app

    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(open(os.devnull, "w"))  # noqa: SIM115 (kept for the process)
        handler.setFormatter(logs.JsonFormatter())
        root.addHandler(handler)
    root.setLevel(logging.INFO)
    pods = realistic_job_pods(JOB, PODS, NAMESPACE)
    registry = _registry()
    metrics = ReadMetrics(registry=registry)
    watches = []
    if watched:
        store = WatchedPods(None, ttl_seconds=3600, metrics=metrics)
        store.replace([slim(pod) for pod in pods], "1")
        watches.append(ListedOnce(store))
    cache = PodCache(SnapshotLister(pods), ttl_seconds=3600, metrics=metrics, watches=watches)
    app = create_app(Reader(cache, SnapshotLister(pods), metrics=metrics), settings=Settings(log_level="INFO"))
    return app.wsgi_app, registry


def _against_floor(name: str, call: Callable[[], object], floor: Callable[[], object], quick: bool, *,
                   note: str = "", target: str = "") -> Figure:
    """The figure of ``call``'s CPU per call against the floor's, the two measured in alternating
    batches (``cpu_per_call_alternating``); with ``target``, met at 2.5x the floor (issue 32)."""
    call_s, floor_s = cpu_per_call_alternating(call, floor, batches=3 if quick else 7, calls=50 if quick else 400)
    return Figure(name, call_s * 1e6, "us", floor_s * 1e6, "floor app, same call", target=target,
                  met=call_s <= 2.5 * floor_s if target else None, note=note)


def _registry() -> Any:
    from prometheus_client import CollectorRegistry

    return CollectorRegistry()


def run(quick: bool = False) -> BenchResult:
    """CPU per sync in-process against the floor, and the cProfile breakdown."""
    result = BenchResult("sync_profile", "Where the time goes in /sync (in-process, cProfile)")
    hook_app, floor_app = build_apps()
    body = sync_body()
    sync, floor = wsgi_caller(hook_app, body), wsgi_caller(floor_app, body)
    if sync() != 200 or floor() != 200:
        raise RuntimeError("the in-process apps did not answer 200")
    for _ in range(20):  # warm both
        sync(), floor()
    typical = _against_floor("in-process /sync CPU per call (WSGI, no HTTP)", sync, floor, quick,
                             target="<= 2.5 x floor")
    calls = 200 if quick else 3000
    by_bucket, top, _ = profile(sync, calls)
    result.tables["by_package"] = by_bucket
    result.tables["top_functions"] = top
    result.tables["steps"] = key_paths(sync, calls)
    typical = dataclasses.replace(typical, note=f"2 cores / CPU per sync = {2e6 / typical.value:,.0f} syncs/s ceiling")
    settled = wsgi_caller(hook_app, settled_body())
    if settled() != 200:
        raise RuntimeError("the in-process hook did not answer the settled call 200")
    watch_app, answered_by_watch = build_watch_app()
    watched = wsgi_caller(watch_app, body)
    if watched() != 200 or answered_by_watch() < 1:
        raise RuntimeError("the in-process hook with a watch-fed cache did not answer 200 from the watch")
    result.figures += [
        typical,
        _against_floor("in-process /sync CPU per call, settled Job (its own answer fed back)", settled, floor, quick,
                       note="the steady state: Metacontroller's resync of a Job whose status is the hooks' last "
                            "answer"),
        _against_floor("in-process /sync CPU per call, watch-fed cache (production's default cache mode)", watched,
                       floor, quick,
                       note="the typical call with its pods answered by the pod watch's store instead of a TTL entry"),
    ]
    result.scale = {"profiled_calls": calls, "body_bytes": len(body), "pods": PODS}
    return result
