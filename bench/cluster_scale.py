"""``python -m bench cluster_scale`` / ``make bench-cluster``: the hooks at scale on the real control plane.

What a platform team asks before installing a controller: what it costs their API server and how it
behaves at their size. This benchmark runs, on one real control plane (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, the real JobSet controller, kwok's GPU nodes; the parts of
the cluster tier, tests/cluster/), the hooks under gunicorn as deployed (hooks/server/gunicorn.conf.py,
the hooks' ServiceAccount and RBAC, the production defaults of docs/operations.md) driven by the
Metacontroller stand-in (tests/cluster/metacontroller.py: informer caches, one resync timer for all
parents, independent workers, client-go's QPS/burst on its own calls), in passes (``PASSES``):

- ``large-install``: the flags docs/operations.md recommends for a large install (Metacontroller 20
  workers, QPS 50, burst 100; gunicorn 1 worker x 20 threads, ``manifests-large/``), the hooks'
  watch-fed pod cache;
- ``large-install-2x10`` (asked for by name): the same with the layout before issue 36 item 2
  (2 workers x 10 threads, so two pod watches and two caches per hooks pod), for the comparison of
  latency, the wait inside the hooks pod, its memory and the watches it opens;
- ``ttl-cache`` and ``live-only``: the same with ``NVCRE_CACHE_MODE=ttl`` and ``=live``, the baselines
  the cache's figures are compared with, measured in the same run on the same machine;
- ``defaults``: Metacontroller's defaults (5 workers, QPS 5, burst 10, resync 30 s) and the hooks as
  shipped (1 gunicorn worker x 8 threads), compared with ``large-install``: where the defaults limit.
- ``large-install-resync120`` (asked for by name): ``large-install`` with Metacontroller's
  ``resyncPeriodSeconds`` 120 (``manifests-large/``), to compare with ``large-install``'s 30 s:
  queue wait, restart and delete latency, requests per Job-minute (issue 36 item 5).

Every pass also runs a few timed Jobs (``TimedJobs``), created when the transitions begin: some with
``activeDeadlineSeconds``, some with ``ttlSecondsAfterFinished``, and one whose drain gets stuck on a
lost node of its own (``spec.drain.stuckAfterSeconds``); the notes say how late each fired (p50/max),
the proof that the hooks' ``resyncAfterSeconds``, not Metacontroller's resync, times them.

- ``kueue`` and ``kueue-checkpoint`` (asked for by name, ``--passes``; they need ``make kueue``): the
  large-install flags behind the real Kueue, every Job in one LocalQueue whose ClusterQueue fits them
  exactly; at the transitions one high-priority Job per ten preempts one of them, with
  ``spec.checkpoint`` in the second (a stand-in trainer acknowledges each request after
  ``ACK_AFTER_SECONDS``): request (or eviction) to quota release p50/p99, every request's outcome
  and whether it ended within its grace plus one resync, and the steady requests per Job-minute of
  the two passes side by side (issue 33 item 5).

The cache baselines run with the large-install flags because Metacontroller's defaults are the first
limit (QPS 5: about 5 syncs a second, each costing it a GET of the Job): under them every pass would
measure Metacontroller's queue, and the three would take most of the run. The ``defaults`` pass runs
last, with whatever time is left, and reports how far it got.

Each pass runs in a namespace of its own: it creates N Jobs of 8 one-GPU pods (``PODS_PER_JOB``),
waits until every one runs, holds them steady for a resync period and more (``steady``), then, at
once (``transitions``): fails one pod of one Job in ten (a restart, ``maxRestarts: 1``), suspends one
in ten and resumes it once Suspended, deletes one in ten, and completes the pods of the rest (and of
the restarted and resumed ones once their new attempt runs). It ends when every Job has Succeeded
or is gone, or at its deadline (then the figures say it did not finish).

Figures, per pass (``PassResult``), as printed and written to bench/results.json and BENCHMARKS.md:

- the hooks' requests to the API server by verb and resource, as its audit log counts them
  (``bench.cluster_measures``), per hook call and per Job-minute, in the steady window and in the
  transitions window (where every drain waits);
- hook latency p50/p99 and the share of calls over 1 s, from the hooks' own histogram; and where the
  slow calls are (``PassResult.tail_rows``, printed after each pass: the answers by what they did,
  each read on an answer's path, the effects thread's writes, the stand-in's wall time of each call
  and the part of it outside the hooks' handler, ``TimedTransport``; issue 36 item 8);
- each gunicorn worker's RSS at the end of the steady window, against the pods its cache holds, and
  the whole hooks pod's (master and workers, VmRSS summed);
- the pod watches open on the API server at the end of the steady window (the audit log's watch
  requests on pods begun and not ended): one per gunicorn worker;
- the time a call spent outside the hooks' own handling (``outside hook``): the mean of each call's
  wall time as the stand-in saw it less the hooks' own ``Server-Timing`` of it, so gunicorn's queue
  (a call waiting for a free thread), HTTP and the GIL shared by the threads;
- restart latency (the old attempt's last pod gone -> the next JobSet added) and delete latency
  (the last pod gone -> the Job gone), p50/p99, from watches (``bench.cluster_timeline``);
- Metacontroller's queue wait (a parent ready -> a worker takes it), as the stand-in measures it;
- the invariants of the tier (no JobSet created or deleted, no ``finalized``, while a pod of
  another attempt is active; status never backwards): violations must be 0 at any scale.

The run stops by itself (each pass has a deadline, its share of what is left of ``--budget``, 3,600 s
by default) and stops every process it started (context managers), also on Ctrl-C. On the 2-core
machine the four passes take 14 minutes at 100 Jobs (``--quick``); at 1,000 Jobs one pass takes 19
minutes, so the four do not fit 20 minutes there (BENCHMARKS.md §5, finding 10).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import kubernetes
from prometheus_client.parser import text_string_to_metric_families

from bench.cache_memory import pod_processes, unique_kib
from bench.cluster_measures import (
    ApiServerMetrics,
    HookMetrics,
    Usage,
    add_buckets,
    count_requests,
    over,
    quantile,
    server_seconds,
    usage_of,
)
from bench.cluster_timeline import Timeline, wait_for
from bench.common import BenchResult, Figure, fmt, percentile, render_table
from hooks.core.checkpoint import ACK_ANNOTATION
from hooks.core.deadlines import parse_time
from hooks.server.config import GUNICORN_THREADS, GUNICORN_WORKERS, Settings
from hooks.server.freshness import RECENT_STATUS_SECONDS
from podread import JOB_LABEL, JOBSET_NAME_LABEL, LAUNCHER_LABEL
from tests.cluster.controlplane import ControlPlane, read_audit_log
from tests.cluster.dev import PRODUCTION_ENV, Installed, Options, install
from tests.cluster.kube import REQUEST_TIMEOUT, SERVER_ERRORS, ensure_namespace
from tests.cluster.kueue import PRIORITY_LABEL, QUEUE_LABEL, Kueue
from tests.cluster.kwokctl import (
    COMPLETE_LABEL,
    EXIT_CODE_ANNOTATION,
    FAIL_LABEL,
    NODE_LABEL,
    NOT_READY_TAINT,
    Kwok,
    node_body,
)
from tests.cluster.metacontroller import ApiBackend, Metacontroller
from tests.cluster.metacontroller_parts import FRESH
from tests.cluster.scheduler import Scheduler
from tests.cluster.world import KubeconfigSource, ServerView
from tests.e2e.driver import Reply, Transport
from tests.e2e.harness import job_spec
from tests.e2e.invariants import Invariants
from tests.e2e.server import HookServer

RESULTS = Path(__file__).resolve().parent / "results.json"
REPORT = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
DEFAULT_JOBS, QUICK_JOBS = 1000, 100
PODS_PER_JOB = 8
GPUS_PER_NODE = 64
"""kwok nodes are large (64 GPUs, 110 pods): N Jobs of 8 one-GPU pods need N/8 nodes, few enough
for kwok's heartbeats not to load the 2-core machine."""
NAMESPACE_PREFIX = "scale-"
REQUESTS_TABLE = "the hooks' requests per hook call, by verb and resource (audit log)"
SETTLE_SECONDS = RECENT_STATUS_SECONDS + 2
"""After every Job runs, the statuses settle: until then a sync checks the Job live (its status was
written less than ``RECENT_STATUS_SECONDS`` ago, hooks.server.freshness); the steady window starts after."""
SLOW_CALL_SECONDS = 1.0
TAIL_SECONDS = 0.25
"""Issue 36 item 8: hook p99 at most this at 100 Jobs under the large-install flags; the "where the tail
is" table counts, per kind of call and read, the ones slower than it (a bucket bound of every histogram)."""
TAIL_TABLE = "where the tail is"
CONTROLLER_MANAGER_ARGS = ("--kube-api-qps=200", "--kube-api-burst=400")
"""The Job controller creates every pod and the garbage collector deletes them: at its default client
QPS (20) 8,000 pods take minutes to appear, which the benchmark would measure instead of the hooks."""


@dataclass(frozen=True)
class Install:
    """What one pass runs with: the hooks' pod cache and gunicorn workers and threads,
    ``resyncAfterSeconds``, and Metacontroller's workers, client QPS and burst, and resync period."""

    name: str
    cache_mode: str = "watch"
    hook_workers: int = GUNICORN_WORKERS
    hook_threads: int = GUNICORN_THREADS
    resync_after: float = Settings().resync_seconds
    mc_workers: int = 5
    mc_qps: float = 5.0
    mc_burst: int = 10
    resync_period: float = 30.0
    kueue: bool = False
    """Behind the real Kueue (issue 33 item 5): every Job in one LocalQueue whose ClusterQueue fits
    them exactly, and at the transitions one high-priority Job per ten preempts one of them
    (``KueueScenario``) instead of the failures, suspends and deletes."""
    checkpoint: bool = False
    """The low-priority Jobs ask for a checkpoint before the drain (``spec.checkpoint``), which a
    stand-in trainer acknowledges ``ACK_AFTER_SECONDS`` after each request."""
    about: str = ""

    def hook_env(self, namespace: str) -> dict[str, str]:
        """The hooks' environment: the production defaults, this cache mode and resync, and one
        watch scope (the pass's namespace: an earlier pass's pods, still being collected, stay out
        of this pass's cache and memory figure)."""
        return {**PRODUCTION_ENV, "NVCRE_CACHE_MODE": self.cache_mode, "NVCRE_RESYNC_SECONDS": f"{self.resync_after:g}",
                "NVCRE_WATCH_NAMESPACES": namespace, "NVCRE_LOG_LEVEL": "WARNING"}

    def flags(self) -> str:
        return (f"cache={self.cache_mode} gunicorn={self.hook_workers}x{self.hook_threads} "
                f"resyncAfter={self.resync_after:g}s | metacontroller workers={self.mc_workers} "
                f"qps={self.mc_qps:g} burst={self.mc_burst} resync={self.resync_period:g}s"
                + (" | kueue" + (" checkpoint" if self.checkpoint else "") if self.kueue else ""))


DEFAULTS = Install("defaults", about="Metacontroller's defaults; the hooks as shipped (watch cache)")
LARGE = replace(DEFAULTS, name="large-install", hook_workers=1, hook_threads=20, mc_workers=20, mc_qps=50.0,
                mc_burst=100, about="docs/operations.md's large-install flags")
PASSES: dict[str, Install] = {
    "large-install": LARGE,
    "large-install-2x10": replace(LARGE, name="large-install-2x10", hook_workers=2, hook_threads=10,
                                  about="the large-install layout before issue 36 item 2: 2 workers x 10 threads"),
    "ttl-cache": replace(LARGE, name="ttl-cache", cache_mode="ttl", about="baseline: the TTL cache"),
    "live-only": replace(LARGE, name="live-only", cache_mode="live", about="baseline: no cache, every read live"),
    "defaults": DEFAULTS,
    "kueue": replace(LARGE, name="kueue", kueue=True,
                     about="behind Kueue, one Job in ten preempted (baseline of kueue-checkpoint)"),
    "kueue-checkpoint": replace(LARGE, name="kueue-checkpoint", kueue=True, checkpoint=True,
                                about="behind Kueue, one Job in ten preempted after a checkpoint"),
    "large-install-resync120": replace(LARGE, name="large-install-resync120", resync_period=120.0,
                                       about="large-install with Metacontroller's resyncPeriodSeconds 120 (issue 36 "
                                             "item 5): the timed Jobs show the hooks' resyncAfterSeconds still "
                                             "fire deadlines and TTLs on time"),
}
DEFAULT_PASSES = ("large-install", "ttl-cache", "live-only", "defaults")
"""What ``make bench-cluster`` runs unless ``--passes`` says otherwise: the Kueue passes need the
Kueue build (``make kueue``) and are asked for by name."""
ACK_AFTER_SECONDS = 2.0
"""How long the stand-in trainer takes to save before it acknowledges a request."""
CHECKPOINT_GRACE_SECONDS = 30
CACHE_PASS = "large-install"
"""The pass whose figures the cache baselines (``ttl-cache``, ``live-only``) are compared with."""


@dataclass
class Window:
    """One stretch of a pass: its seconds, the hook calls answered in it (the hooks' counter), the
    hooks' requests to the API server (audit log) and the latency histogram's change."""

    seconds: float = 0.0
    calls: float = 0.0
    requests: Counter[str] = field(default_factory=Counter)
    metrics: HookMetrics = field(default_factory=HookMetrics)
    queue_waits: list[float] = field(default_factory=list)
    usage: dict[str, Usage] = field(default_factory=dict)
    """Each part's CPU seconds in the window and its memory at the window's end (``Clocked``)."""
    walls: list[tuple[float, float]] = field(default_factory=list)
    """Each hook call as the stand-in saw it (``TimedTransport``): its wall time and the hooks' own time
    of it (``Server-Timing``; ``nan`` when the answer did not say), seconds."""
    load: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """The machine's load average (1, 5, 15 min) at the window's end."""
    server: dict[str, list[float]] = field(default_factory=dict)
    """The API server's own seconds for each of the hooks' requests, by request (``server_seconds``)."""
    apiserver: ApiServerMetrics = field(default_factory=ApiServerMetrics)
    """API Priority and Fairness's queue wait and execution time in the window, by priority level."""

    def per_call(self, key: str | None = None) -> float | None:
        total = self.requests[key] if key else sum(self.requests.values())
        return total / self.calls if self.calls else None

    def per_job_minute(self, jobs: int, key: str | None = None) -> float | None:
        total = self.requests[key] if key else sum(self.requests.values())
        return total / (jobs * self.seconds / 60) if self.seconds and jobs else None


@dataclass
class PassResult:
    """What one pass measured (module doc)."""

    install: Install
    jobs: int
    finished: bool = False
    all_running: bool = False
    windows: dict[str, Window] = field(default_factory=dict)
    rss_kib: list[int] = field(default_factory=list)
    pod_rss_kib: int = 0
    """The whole hooks pod's VmRSS at the end of the steady window: the gunicorn master and its workers."""
    pod_memory: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)
    """The hooks pod's memory each page once, by when it was taken (``steady``: the end of the steady
    window; ``load``: the end of the transitions, after the pass's busiest minute): (its PSS summed
    over the master and the workers, the pages resident in any of them counted once: what the pod's
    cgroup is charged for them), KiB; ``None`` where the kernel does not show it (issue 36 item 2:
    the RSS sum counts the pages the master and a worker share twice)."""
    open_watches: int | None = None
    """Pod watches open on the API server at the end of the steady window (``open_pod_watches``)."""
    watched_pods: float = 0.0
    restart_latencies: list[float] = field(default_factory=list)
    delete_latencies: list[float] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    sync_errors: int = 0
    stale_refusals: int = 0
    answers: Counter[str] = field(default_factory=Counter)
    """The hooks' answers to the stand-in's /sync and /finalize calls, by HTTP status (issue 36 item 1)."""
    refusal_causes: Counter[str] = field(default_factory=Counter)
    """The hooks' 409s by cause (``nvcre_hook_refusals_total``), scraped at the end of the pass."""
    unfinished: list[str] = field(default_factory=list)
    seconds: float = 0.0
    preempted: list[str] = field(default_factory=list)
    """Behind Kueue: the Jobs Kueue preempted at the transitions."""
    release_latencies: list[float] = field(default_factory=list)
    """Behind Kueue, per preempted Job: from the eviction (``Evicted``'s time), or with a checkpoint
    from the request (``requestedAt``), to its quota released (its Workload seen gone), seconds."""
    checkpoint_outcomes: Counter[str] = field(default_factory=Counter)
    late_ends: list[str] = field(default_factory=list)
    """Requests that ended (acknowledged or expired) later than their grace plus one resync."""
    timed: TimedJobs = field(default_factory=lambda: TimedJobs())
    """The timed Jobs (deadline, TTL) and how late each fired (``TimedJobs``)."""

    def row(self) -> dict[str, Any]:
        """The pass as one table row (the figures the report compares)."""
        steady, busy = self.windows.get("steady", Window()), self.windows.get("transitions", Window())
        every = self.everything()
        return {
            "pass": self.install.name, "jobs": self.jobs, "finished": "yes" if self.finished else "NO",
            "to running s": (_num(self.windows["start"].seconds) + ("" if self.all_running else " (not all)")
                             if "start" in self.windows else "-"),
            "transitions s": _num(busy.seconds) if "transitions" in self.windows else "-",
            "steady pod lists/call": _num(steady.per_call("list pods")),
            "steady req/call": _num(steady.per_call()),
            "steady req/Job-min": _num(steady.per_job_minute(self.jobs)),
            "drain req/call": _num(busy.per_call()),
            "drain req/Job-min": _num(busy.per_job_minute(self.jobs)),
            "hook p50 ms": _ms(every.metrics.quantile(0.5)), "hook p99 ms": _ms(every.metrics.quantile(0.99)),
            "calls >1s %": _pct(every.metrics.share_over(SLOW_CALL_SECONDS) if every.metrics.buckets else None),
            "RSS/worker MiB": _num(max(self.rss_kib) / 1024 if self.rss_kib else None),
            "RSS/pod MiB": _num(self.pod_rss_kib / 1024 if self.pod_rss_kib else None),
            "PSS/pod MiB steady, load": _pair_kib(self.pod_memory, 0),
            "pages once/pod MiB steady, load": _pair_kib(self.pod_memory, 1),
            "pods watched": int(self.watched_pods),
            "open pod watches": "-" if self.open_watches is None else self.open_watches,
            "outside hook ms": _ms(self.outside_hook()),
            "restart p50/p99 s": _pair(self.restart_latencies),
            "delete p50/p99 s": _pair(self.delete_latencies),
            "queue wait p50/p99 s": _pair(every.queue_waits),
            **({"preempted": len(self.preempted), "to quota release p50/p99 s": _pair(self.release_latencies)}
               if self.install.kueue else {}),
            "violations": len(self.violations),
        }

    def outside_hook(self) -> float | None:
        """Seconds a call spent outside the hooks' own handling, on average over the calls whose
        answer said its ``Server-Timing``: the stand-in's wall time of the call less the hooks' own
        time of it (gunicorn's queue, HTTP, the GIL); ``None`` without such a call."""
        outside = [wall - own for wall, own in self.everything().walls if not math.isnan(own)]
        return sum(outside) / len(outside) if outside else None

    def everything(self) -> Window:
        """Every window of the pass together."""
        whole = Window()
        buckets: dict[float, float] = {}
        for window in self.windows.values():
            whole.seconds += window.seconds
            whole.calls += window.calls
            whole.requests.update(window.requests)
            whole.queue_waits += window.queue_waits
            whole.walls += window.walls
            whole.load = window.load
            for key, seconds in window.server.items():
                whole.server.setdefault(key, []).extend(seconds)
            for name, series in window.apiserver.series.items():
                whole.apiserver.series[name] = add_buckets(whole.apiserver.series.get(name, []), series)
            for name, series in window.metrics.series.items():
                whole.metrics.series[name] = add_buckets(whole.metrics.series.get(name, []), series)
            for name, used in window.usage.items():
                whole.usage[name] = Usage(whole.usage.get(name, Usage()).cpu_seconds + used.cpu_seconds, used.rss_kib)
            for bound, count in window.metrics.buckets:
                buckets[bound] = buckets.get(bound, 0.0) + count
        whole.metrics = HookMetrics(buckets=sorted(buckets.items()), series=whole.metrics.series)
        return whole

    def tail_rows(self) -> list[dict[str, Any]]:
        """Where the slow calls of the pass are (issue 36 item 8): every hook call (the hooks' own
        histogram), by what the answer did, each read made on an answer's path (podread's reads, the
        live Job GETs), the writes of the effects thread (off the path), and each call as the stand-in
        timed it: its wall time, and the part of it outside the hooks' handler (the wall time less the
        hooks' ``Server-Timing``: waiting for a gunicorn thread, the HTTP exchange, the stand-in's own
        scheduling); the API server's own time of the hooks' reads (its audit log: received to
        response complete), and API Priority and Fairness's queue wait and execution time by priority
        level (every client's, from its ``/metrics``). Counts, p50 and p99 (interpolated in the
        buckets), and how many took more than ``TAIL_SECONDS`` and ``SLOW_CALL_SECONDS``."""
        every = self.everything()
        slow_calls = over(every.metrics.buckets, TAIL_SECONDS)

        def row(what: str, count: float, p50: float | None, p99: float | None, slow: float | None,
                slower: float | None, answer: bool = False) -> dict[str, Any]:
            return {"pass": self.install.name, "what": what, "count": int(count), "p50 ms": _ms(p50),
                    "p99 ms": _ms(p99), f">{TAIL_SECONDS:g}s": "-" if slow is None else int(slow),
                    f">{SLOW_CALL_SECONDS:g}s": "-" if slower is None else int(slower),
                    f"of calls >{TAIL_SECONDS:g}s %": _pct((slow or 0.0) / slow_calls if answer and slow_calls
                                                           else None)}

        def hist(what: str, buckets: Sequence[tuple[float, float]], answer: bool = False) -> dict[str, Any]:
            bounds = {bound for bound, _ in buckets}  # the API server's histograms have other bounds: "-"
            return row(what, buckets[-1][1] if buckets else 0, quantile(buckets, 0.5), quantile(buckets, 0.99),
                       over(buckets, TAIL_SECONDS) if TAIL_SECONDS in bounds else None,
                       over(buckets, SLOW_CALL_SECONDS) if SLOW_CALL_SECONDS in bounds else None, answer)

        def listed(what: str, values: Sequence[float]) -> dict[str, Any]:
            return row(what, len(values), percentile(values, 0.5) if values else None,
                       percentile(values, 0.99) if values else None, sum(v > TAIL_SECONDS for v in values),
                       sum(v > SLOW_CALL_SECONDS for v in values))

        rows = [hist("every hook call (hooks' histogram)", every.metrics.buckets, answer=True)]
        series = {name: b for name, b in every.metrics.series.items() if b and b[-1][1] > 0}
        rows += [hist(name, b, answer=name.startswith("answer ")) for name, b in series.items()
                 if name.startswith("answer ")]
        rows += [hist(name, b) for name, b in series.items() if not name.startswith("answer ")]
        rows += [listed(f"API server's own time: {key}", seconds) for key, seconds in sorted(every.server.items())
                 if not key.startswith(("create ", "delete ", "patch ", "update "))]
        rows += [hist(f"API server: {name}", b) for name, b in every.apiserver.series.items() if b and b[-1][1] > 0]
        walls = [wall for wall, _ in every.walls]
        rows.append(listed("stand-in: wall time of a call", walls))
        rows.append(listed("stand-in: outside the handler (wall - Server-Timing)",
                           [wall - hook for wall, hook in every.walls if not math.isnan(hook)]))
        return rows

    def as_dict(self) -> dict[str, Any]:
        return {"install": asdict(self.install), "jobs": self.jobs, "finished": self.finished,
                "all_running": self.all_running,
                "seconds": round(self.seconds, 1), "row": self.row(),
                "windows": {name: {"seconds": round(w.seconds, 1), "hook_calls": w.calls,
                                   "requests": dict(sorted(w.requests.items())),
                                   "latency_buckets": w.metrics.buckets,
                                   "queue_wait_p50": percentile(w.queue_waits, 0.5),
                                   "queue_wait_p99": percentile(w.queue_waits, 0.99),
                                   "usage": {name: {"cpu_seconds": round(u.cpu_seconds, 2), "rss_kib": u.rss_kib}
                                             for name, u in w.usage.items()}}
                            for name, w in self.windows.items()},
                "rss_kib": self.rss_kib, "pod_rss_kib": self.pod_rss_kib, "pod_memory": self.pod_memory,
                "open_watches": self.open_watches,
                "outside_hook_seconds": self.outside_hook(), "watched_pods": self.watched_pods,
                "tail": self.tail_rows(), "load_average": self.everything().load,
                "restart_latencies": [round(x, 3) for x in sorted(self.restart_latencies)],
                "delete_latencies": [round(x, 3) for x in sorted(self.delete_latencies)],
                "violations": self.violations[:20], "sync_errors": self.sync_errors,
                "stale_refusals": self.stale_refusals, "unfinished": self.unfinished[:20],
                "answers": dict(sorted(self.answers.items())),
                "refusal_causes": dict(sorted(self.refusal_causes.items())),
                "preempted": self.preempted, "release_latencies": [round(x, 3) for x in sorted(self.release_latencies)],
                "checkpoint_outcomes": dict(self.checkpoint_outcomes), "late_ends": self.late_ends,
                "timed": self.timed.as_dict()}


def _num(value: float | None) -> str:
    return "-" if value is None else fmt(value)


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else fmt(seconds * 1000)


class TimedTransport:
    """The stand-in's hook client (``transport``), keeping every call's wall time and the hooks' own
    time of it (the answer's ``Server-Timing: hook;dur=<ms>``, ``hooks.server.app``) in ``calls``:
    the difference is the time outside the handler (issue 36 item 8)."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.calls: list[tuple[float, float]] = []

    def post(self, path: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        reply = self.transport.post(path, body, headers)
        self.calls.append((reply.seconds, _server_seconds(reply.headers.get("server-timing", ""))))
        return reply


def _server_seconds(header: str) -> float:
    """The ``hook`` metric's ``dur`` (ms) of a ``Server-Timing`` header, in seconds; ``nan`` without one."""
    for metric in header.split(","):
        name, _, params = metric.strip().partition(";")
        if name == "hook":
            for param in params.split(";"):
                key, _, value = param.strip().partition("=")
                if key == "dur":
                    with suppress(ValueError):
                        return float(value) / 1000
    return math.nan


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{share * 100:.1f}"


def _pair(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return f"{fmt(percentile(values, 0.5))} / {fmt(percentile(values, 0.99))}"


# -- the cluster -----------------------------------------------------------------------------------

HOOKS_PART = "the hooks (gunicorn, all workers)"
COSTS_TABLE = "cost beside the real parts"
Parts = dict[str, Callable[[], list[int]]]
"""The processes of each part beside the hooks, by name: a function that gives their pids now (a
part restarted, kube-controller-manager after the install, has new ones)."""


def _pids(process: Any) -> list[int]:
    """The pid of a ``tests.cluster.controlplane._Process`` while it runs, else none."""
    popen = getattr(process, "popen", None)
    return [popen.pid] if popen is not None and popen.poll() is None else []


@contextmanager
def cluster(jobs: int, log: Callable[[str], None], *,
            kueue: bool = False) -> Iterator[tuple[ControlPlane, Installed, Parts, Kueue | None]]:
    """Starts the control plane (with ``CONTROLLER_MANAGER_ARGS``), installs what the hooks and the
    stand-in need (``tests.cluster.dev.install``; with ``kueue``, the Kueue overlay's RBAC and the real
    Kueue with priority classes ``low`` and ``high``), starts kube-scheduler, the JobSet controller and
    kwok with enough GPU nodes for ``jobs`` Jobs (and a preemptor per ten); yields them with their
    processes (``Parts``) and Kueue's manager (``None`` without ``kueue``); stops them all on exit."""
    with ExitStack() as stack:
        began = time.monotonic()
        plane = stack.enter_context(ControlPlane(controller_manager_args=CONTROLLER_MANAGER_ARGS))
        installed = install(plane, token_seconds=24 * 3600, options=Options(kueue=kueue))
        scheduler = stack.enter_context(Scheduler(plane))
        stack.enter_context(installed.jobset)
        nodes = math.ceil(jobs * 1.1 * PODS_PER_JOB / GPUS_PER_NODE) + 1
        kwok = stack.enter_context(Kwok(plane, nodes=nodes, gpus_per_node=GPUS_PER_NODE))
        if kueue:
            manager = stack.enter_context(Kueue(plane))
            manager.priority_class("low", 10)
            manager.priority_class("high", 1000)
        log(f"cluster up in {time.monotonic() - began:.0f} s: {nodes} kwok nodes of {GPUS_PER_NODE} GPUs; "
            f"logs in {plane.logs_dir}")
        parts: Parts = {
            "JobSet controller": lambda: _pids(installed.jobset._process),
            "kube-controller-manager": lambda: _pids(plane._kcm),
            "kube-scheduler": lambda: _pids(scheduler._process),
            "kwok": lambda: _pids(kwok._process),
            "kube-apiserver": lambda: _pids(plane._apiserver),
            "etcd": lambda: _pids(plane._etcd),
            **({"Kueue": lambda: _pids(manager._process)} if kueue else {}),
        }
        yield plane, installed, parts, manager if kueue else None


# -- one pass --------------------------------------------------------------------------------------

class ScaleView(ServerView):
    """``ServerView`` for the invariants at scale: a Job's pods listed by label (its job label, its
    launcher label, JobSet's name label of its first attempts), not by reading every pod."""

    ATTEMPTS = 6

    def job_pods(self, namespace: str, job: str) -> list[dict[str, Any]]:
        names = ",".join(f"{job}-{n}" for n in range(self.ATTEMPTS))
        found: dict[str, dict[str, Any]] = {}
        for selector in (f"{JOB_LABEL}={job}", f"{LAUNCHER_LABEL}={job}", f"{JOBSET_NAME_LABEL} in ({names})"):
            raw = self.core.list_namespaced_pod(namespace, label_selector=selector, _preload_content=False,
                                               _request_timeout=(5, 30))
            for pod in json.loads(raw.data)["items"]:
                found[pod["metadata"]["uid"]] = pod
        return list(found.values())


def scale_spec(pods: int = PODS_PER_JOB, *, checkpoint: bool = False) -> dict[str, Any]:
    """An NVCRE Job of ``pods`` one-GPU workers that may restart once (with ``checkpoint``, that asks
    for a checkpoint before a drain, grace ``CHECKPOINT_GRACE_SECONDS``)."""
    spec = job_spec(pods, max_restarts=1)
    for replicated in spec["replicatedJobs"]:
        container = replicated["template"]["spec"]["template"]["spec"]["containers"][0]
        container["resources"] = {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}
    if checkpoint:
        spec["checkpoint"] = {"graceSeconds": CHECKPOINT_GRACE_SECONDS}
    return spec


class Scenario:
    """The user's side of one pass (module doc): what is done to which Job, and when it is done."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self.fail = set(names[0::10])
        self.suspend = set(names[1::10])
        self.delete = set(names[2::10])
        self.from_attempt: dict[str, int] = {}
        """For a failed or suspended Job: the attempt it ran when acted on (its pods are not completed)."""
        self.failed: set[str] = set()
        """Jobs whose pod was told to fail."""
        self.resumed: set[str] = set()
        self.completed: set[str] = set()
        """Pods labelled to complete (names)."""


TIMED_DEADLINE_SECONDS = 45
"""``activeDeadlineSeconds`` of the timed deadline Jobs (``TimedJobs``): past the steady window's
resync-timer syncs, so only the hooks' own ``resyncAfterSeconds`` can make it fire on time."""
TIMED_TTL_SECONDS = 20
"""``ttlSecondsAfterFinished`` of the timed TTL Jobs."""
TIMED_PODS = 2
TIMED_STUCK_AFTER_SECONDS = 20
"""``spec.drain.stuckAfterSeconds`` of the timed stuck-drain Job."""
STUCK_NODE_KEY = "nvcre-bench/stuck"
"""The label and taint of the node the stuck-drain Job runs on alone (``_stuck_node``)."""


def timed_count(jobs: int) -> int:
    """How many timed Jobs of each kind a pass of ``jobs`` Jobs adds: 3, one per 100 Jobs up to 10."""
    return max(3, min(10, jobs // 100))


@dataclass
class TimedJobs:
    """A few Jobs per pass whose decisions are due at a time, created when the transitions begin (so
    they fire under the pass's load), to prove that the hooks' ``resyncAfterSeconds`` make them fire
    on time whatever Metacontroller's ``resyncPeriodSeconds``:

    - ``deadline``: ``activeDeadlineSeconds`` ``TIMED_DEADLINE_SECONDS``; lateness = the status's
      ``DeadlineExceeded`` condition seen True (the stand-in's cache, polled every 0.5 s; not its
      ``lastTransitionTime``, which the hooks stamp with the request's newest evidence, not the
      moment: ``hooks.core.stamps``) minus ``startTime`` + the deadline;
    - ``ttl``: ``ttlSecondsAfterFinished`` ``TIMED_TTL_SECONDS``, their pods completed once running;
      lateness = the Job seen gone (the stand-in's cache, polled every 0.5 s) minus
      ``completionTime`` + the TTL;
    - ``stuck`` (one, when ``_stuck_node`` could add its node): ``spec.drain.stuckAfterSeconds``
      ``TIMED_STUCK_AFTER_SECONDS``, its pods alone on a node of their own, which is lost once they
      run (kwok stops managing it, ``Ready`` Unknown: its pods stay Terminating), then the Job is
      deleted; lateness = ``DrainStuck`` seen True minus the delete + ``stuckAfterSeconds``. The
      node is given back to kwok afterwards, and the Job goes.

    ``late`` holds each timed Job's lateness in seconds by kind; a Job not timed by the end is in
    ``missing``."""

    deadline: list[str] = field(default_factory=list)
    ttl: list[str] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)
    late: dict[str, dict[str, float]] = field(default_factory=lambda: {"deadline": {}, "ttl": {}, "stuck": {}})
    missing: list[str] = field(default_factory=list)
    said: dict[str, str] = field(default_factory=dict)
    """One timed Job of each kind as the status said it (for the notes: what the figure was read from)."""

    def summary(self, kind: str) -> str:
        """``p50/max s (n of N)`` of one kind's lateness."""
        values = list(self.late[kind].values())
        wanted = len({"deadline": self.deadline, "ttl": self.ttl, "stuck": self.stuck}[kind])
        if not values:
            return f"- (0 of {wanted})"
        return f"{fmt(percentile(values, 0.5))}/{fmt(max(values))} s ({len(values)} of {wanted})"

    def as_dict(self) -> dict[str, Any]:
        return {"deadline_seconds": TIMED_DEADLINE_SECONDS, "ttl_seconds": TIMED_TTL_SECONDS,
                "stuck_after_seconds": TIMED_STUCK_AFTER_SECONDS,
                "late": {kind: {n: round(x, 2) for n, x in sorted(v.items())} for kind, v in self.late.items()},
                "missing": self.missing, "said": self.said}


def _timed_spec(kind: str) -> dict[str, Any]:
    spec = scale_spec(TIMED_PODS)
    if kind == "deadline":
        spec["activeDeadlineSeconds"] = TIMED_DEADLINE_SECONDS
    elif kind == "ttl":
        spec["ttlSecondsAfterFinished"] = TIMED_TTL_SECONDS
    else:
        spec["drain"] = {"stuckAfterSeconds": TIMED_STUCK_AFTER_SECONDS}
        for replicated in spec["replicatedJobs"]:
            pod = replicated["template"]["spec"]["template"]["spec"]
            pod["nodeSelector"] = {STUCK_NODE_KEY: "true"}
            pod["tolerations"] = [{"key": STUCK_NODE_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    return spec


def _stuck_node(core: kubernetes.client.CoreV1Api, namespace: str, timeout: float = 30.0) -> str | None:
    """Adds a kwok node only the stuck-drain Job's pods go to (label and NoSchedule taint
    ``STUCK_NODE_KEY``), Ready and without the ``not-ready`` taint admission put on it; returns its
    name, or ``None`` when it is not Ready within ``timeout`` (the stuck Job is then left out)."""
    name = f"stuck-{namespace}"[:63]
    body = node_body(name, {STUCK_NODE_KEY: "true"}, GPUS_PER_NODE)
    body["spec"] = {"taints": [{"key": STUCK_NODE_KEY, "value": "true", "effect": "NoSchedule"}]}
    with suppress(*SERVER_ERRORS):
        core.create_node(body, _request_timeout=(5, 30))
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with suppress(*SERVER_ERRORS):
            node = core.read_node(name, _request_timeout=(5, 30))
            if any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or ()):
                taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in node.spec.taints or ()
                          if t.key != NOT_READY_TAINT]
                core.patch_node(name, {"spec": {"taints": taints}}, _request_timeout=(5, 30))
                return name
        time.sleep(0.5)
    return None


def _lose_node(core: kubernetes.client.CoreV1Api, name: str) -> None:
    """As ``Kwok.lose_node``: kwok stops managing it and its ``Ready`` turns Unknown."""
    core.patch_node(name, {"metadata": {"labels": {NODE_LABEL[0]: None}}}, _request_timeout=(5, 30))
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    core.patch_node_status(name, {"status": {"conditions": [
        {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "message": "lost by the benchmark",
         "lastHeartbeatTime": now, "lastTransitionTime": now}]}}, _request_timeout=(5, 30))


def _restore_node(core: kubernetes.client.CoreV1Api, name: str) -> None:
    """kwok manages the node again: Ready, and it finishes its pods' deletions."""
    with suppress(*SERVER_ERRORS):
        core.patch_node(name, {"metadata": {"labels": {NODE_LABEL[0]: NODE_LABEL[1]}}}, _request_timeout=(5, 30))


def _condition_message(status: Mapping[str, Any], kind: str = "DeadlineExceeded") -> str:
    return next((str(c.get("message", "")) for c in status.get("conditions") or () if c.get("type") == kind), "")


def _condition_true(status: Mapping[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions") or ())


def _follow_timed(timed: TimedJobs, namespace: str, custom: kubernetes.client.CustomObjectsApi,
                  core: kubernetes.client.CoreV1Api, driver: Metacontroller, timeline: Timeline,
                  stop: threading.Event, count: int, stuck: bool = True) -> None:
    """Creates ``count`` timed deadline and TTL Jobs and, with ``stuck``, one stuck-drain Job on a
    node of its own (``TimedJobs``), and times them until each is timed or ``stop`` is set; the
    unfinished ones end in ``timed.missing``. The stuck Job's node is given back to kwok at the end."""
    timed.deadline = [f"timed-deadline-{n}" for n in range(count)]
    timed.ttl = [f"timed-ttl-{n}" for n in range(count)]
    node = _stuck_node(core, namespace) if stuck else None
    timed.stuck = ["timed-stuck-0"] if node is not None else []
    for name in timed.deadline + timed.ttl + timed.stuck:
        kind = "deadline" if name in timed.deadline else "ttl" if name in timed.ttl else "stuck"
        body = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                "metadata": {"name": name, "namespace": namespace}, "spec": _timed_spec(kind)}
        with suppress(*SERVER_ERRORS):
            custom.create_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", namespace, "jobs", body,
                                                   _request_timeout=(5, 30))
    completed: set[str] = set()
    finished: dict[str, datetime] = {}
    seen: set[str] = set()
    deleted: dict[str, datetime] = {}
    while not stop.is_set():
        now = datetime.now(UTC)
        for name in timed.stuck:
            status = _status(driver, namespace, name)
            if name not in deleted and status.get("phase") == "Running" and len(timeline.running(name)) >= TIMED_PODS:
                assert node is not None
                _lose_node(core, node)
                with suppress(*SERVER_ERRORS):
                    custom.delete_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", namespace, "jobs", name,
                                                           _request_timeout=(5, 30))
                    deleted[name] = datetime.now(UTC)
            elif name in deleted and name not in timed.late["stuck"] and _condition_true(status, "DrainStuck"):
                timed.late["stuck"][name] = now.timestamp() - (deleted[name].timestamp() + TIMED_STUCK_AFTER_SECONDS)
                timed.said.setdefault("stuck", f"{name}: deleted at {deleted[name].isoformat(timespec='seconds')}, "
                                               f"DrainStuck seen at {now.isoformat(timespec='seconds')} "
                                               f"({_condition_message(status, 'DrainStuck')[:160]})")
                assert node is not None
                _restore_node(core, node)
        for name in timed.deadline:
            status = _status(driver, namespace, name)
            start, exceeded = parse_time(status.get("startTime") or ""), _condition_true(status, "DeadlineExceeded")
            if name not in timed.late["deadline"] and start is not None and exceeded:
                due = start.timestamp() + TIMED_DEADLINE_SECONDS
                timed.late["deadline"][name] = now.timestamp() - due
                timed.said.setdefault("deadline", f"{name}: startTime {status.get('startTime')}, DeadlineExceeded "
                                                  f"seen at {now.isoformat(timespec='seconds')} "
                                                  f"({_condition_message(status)})")
        for name in timed.ttl:
            job = driver.job(namespace, name)
            if job is not None:
                seen.add(name)
                status = dict(job.get("status") or {})
                if status.get("completionTime"):
                    finished.setdefault(name, parse_time(status["completionTime"]) or now)
                for pod in timeline.running(name) if status.get("phase") == "Running" else ():
                    if pod.name not in completed:
                        with suppress(*SERVER_ERRORS):
                            core.patch_namespaced_pod(pod.name, namespace, {"metadata": {"labels": {
                                COMPLETE_LABEL: "true"}}}, _request_timeout=(5, 30))
                            completed.add(pod.name)
            elif name in seen and name in finished and name not in timed.late["ttl"]:
                timed.late["ttl"][name] = now.timestamp() - (finished[name].timestamp() + TIMED_TTL_SECONDS)
                timed.said.setdefault("ttl", f"{name}: completionTime {finished[name].isoformat()}, seen gone at "
                                             f"{now.isoformat(timespec='seconds')}")
        if all(len(timed.late[kind]) == len(names) for kind, names in
               (("deadline", timed.deadline), ("ttl", timed.ttl), ("stuck", timed.stuck))):
            break
        stop.wait(0.5)
    if node is not None:
        _restore_node(core, node)  # also when the stuck Job was never timed: its pods may go
    timed.missing = [n for kind, names in (("deadline", timed.deadline), ("ttl", timed.ttl), ("stuck", timed.stuck))
                     for n in names if n not in timed.late[kind]]


def run_pass(plane: ControlPlane, hook_token: str, service_token: str, install: Install, jobs: int, *,
             pods: int = PODS_PER_JOB, steady_seconds: float | None = None,
             settle_seconds: float = SETTLE_SECONDS, deadline: float = 900.0,
             log: Callable[[str], None] = print, parts: Parts | None = None,
             kueue: Kueue | None = None) -> PassResult:
    """Runs one pass (module doc) in namespace ``scale-<install.name>`` with ``jobs`` Jobs of ``pods``
    pods and returns its figures (the windows ``start``, ``settle``, ``steady``, ``transitions``); the
    hooks and the stand-in it started are stopped, and its Jobs deleted, before it returns. The
    steady window lasts ``steady_seconds`` (default: the resync period plus 10 s, so that every Job is
    synced by the resync timer at least once in it); the pass gives up at ``deadline`` seconds. A
    pass ``install.kueue`` needs ``kueue`` (the manager): its Jobs queue in LocalQueue ``team`` of a
    ClusterQueue that fits them exactly, and its transitions are ``_preemptions``."""
    began = time.monotonic()
    namespace = f"{NAMESPACE_PREFIX}{install.name}"
    admin = plane.api_client()
    ensure_namespace(admin, namespace)
    if install.kueue:
        assert kueue is not None, f"pass {install.name} runs behind Kueue: start it (cluster(kueue=True))"
        kueue.queue(namespace, "team", gpus=jobs * pods, cpu="1000", cluster_queue=f"{namespace}-cq")
    custom = kubernetes.client.CustomObjectsApi(admin)
    core = kubernetes.client.CoreV1Api(admin)
    result = PassResult(install, jobs)
    names = [f"train-{n:04d}" for n in range(jobs)]
    scenario = Scenario(names)
    if install.kueue:  # preemptions instead (``_preemptions``)
        scenario.fail, scenario.suspend, scenario.delete = set(), set(), set()
    steady_seconds = install.resync_period + 10 if steady_seconds is None else steady_seconds
    source = KubeconfigSource(plane, service_token, "nvcre-hooks")
    args = ["--workers", str(install.hook_workers), "--threads", str(install.hook_threads)]
    stop = threading.Event()
    with Timeline(admin, namespace) as timeline, \
            HookServer(source, token=hook_token, env=install.hook_env(namespace), args=args) as hooks:
        backend = ApiBackend(admin, [namespace], qps=install.mc_qps, burst=install.mc_burst,
                             workloads=install.kueue, configmaps=install.checkpoint)
        view = ScaleView(admin, namespace)
        invariants = Invariants(view)
        transport = TimedTransport(hooks.transport())
        driver = Metacontroller(backend, transport, invariants, token=hooks.token,
                                resync_period=install.resync_period, staleness=FRESH, workers=install.mc_workers,
                                workloads=install.kueue, configmaps=install.checkpoint)
        driver.keep_calls = False
        serving = threading.Thread(target=driver.serve, args=(stop,), daemon=True)  # its informers watch
        serving.start()
        clock = Clocked(plane, hooks, driver, transport, {
            HOOKS_PART: lambda: [hooks.pid, *hooks.worker_pids()],
            "Metacontroller stand-in and the bench": lambda: [os.getpid()],
            **(parts or {})})
        audit_start = clock.audit_offset
        try:
            clock.mark()
            labels = {QUEUE_LABEL: "team", PRIORITY_LABEL: "low"} if install.kueue else {}
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda name: _create(custom, namespace, name, pods, labels=labels,
                                                   checkpoint=install.checkpoint), names))
            log(f"  {install.name}: {jobs} Jobs created in {time.monotonic() - began:.0f} s")
            running = wait_for(lambda: _all_running(driver, namespace, names, timeline, pods), deadline / 2,
                               every=1.0)
            result.windows["start"] = clock.mark()
            result.all_running = running
            log(f"  {install.name}: {'every Job running' if running else 'NOT every Job running'} after "
                f"{time.monotonic() - began:.0f} s")
            check_steps(invariants, timeline, names)
            _hold(settle_seconds, lambda: check_steps(invariants, timeline, names))
            result.windows["settle"] = clock.mark()
            _hold(steady_seconds, lambda: check_steps(invariants, timeline, names))
            result.rss_kib = sorted(hooks.rss_kib().values())
            result.pod_rss_kib = usage_of([hooks.pid, *hooks.worker_pids()]).rss_kib
            result.pod_memory["steady"] = pod_memory_kib(hooks.pid, hooks.worker_pids())
            result.open_watches = min(_spaced(lambda: open_pod_watches(plane.audit_log, audit_start), 3, 1.0))
            result.windows["steady"] = clock.mark()
            result.watched_pods = result.windows["steady"].metrics.watch_pods
            log(f"  {install.name}: steady for {steady_seconds:g} s")
            left = deadline - (time.monotonic() - began)
            timed_stop = threading.Event()
            timer = threading.Thread(target=_follow_timed, args=(result.timed, namespace, custom, core, driver,
                                                                 timeline, timed_stop, timed_count(jobs)), daemon=True)
            timer.start()
            if install.kueue:
                result.finished = _preemptions(scenario, namespace, custom, core, driver, timeline, invariants,
                                               left, result, pods, install)
            else:
                result.finished = _transitions(scenario, namespace, custom, core, driver, timeline, invariants,
                                               left)
            timer.join(max(0.0, min(TIMED_DEADLINE_SECONDS + 2 * install.resync_period,
                                    deadline - (time.monotonic() - began))))
            timed_stop.set()
            timer.join(10)
            result.pod_memory["load"] = pod_memory_kib(hooks.pid, hooks.worker_pids())
            result.windows["transitions"] = clock.mark()
            result.unfinished = sorted(n for n in scenario.names if not _done(scenario, driver, namespace, n))
        finally:
            with suppress(OSError, ValueError):
                result.refusal_causes = refusal_causes(hooks.metrics_url)
            stop.set()
            serving.join(60)
        result.restart_latencies = [x for n in sorted(scenario.fail) if (x := timeline.restart_latency(n, 0))
                                    is not None]
        result.delete_latencies = [x for n in sorted(scenario.delete) if (x := timeline.delete_latency(n))
                                   is not None]
        result.violations = list(invariants.violations)
        result.sync_errors = len(driver.sync_errors)
        result.stale_refusals = driver.stale_refusals
        result.answers = Counter({str(code): n for code, n in driver.answers.items()})
    _clean_up(custom, namespace, timeline)
    result.seconds = time.monotonic() - began
    log(f"  {install.name}: done in {result.seconds:.0f} s ({'finished' if result.finished else 'NOT finished'})")
    return result


def pod_memory_kib(master: int, workers: Sequence[int]) -> tuple[int | None, int | None]:
    """The hooks pod's PSS sum and its resident pages counted once, KiB (``PassResult.pod_memory``)."""
    processes = pod_processes(master, workers)
    pss = None if not processes or any(p.pss_kib is None for p in processes) else \
        sum(p.pss_kib or 0 for p in processes)
    return pss, unique_kib([master, *workers])


def _pair_kib(memory: Mapping[str, tuple[int | None, int | None]], index: int) -> str:
    """``steady, load`` of one of ``PassResult.pod_memory``'s figures, in MiB (``-`` where not taken)."""
    def mib(when: str) -> str:
        value = memory.get(when, (None, None))[index]
        return "-" if value is None else f"{value / 1024:.0f}"
    return f"{mib('steady')}, {mib('load')}"


def _spaced(read: Callable[[], int], times: int, seconds: float) -> list[int]:
    """``read()`` ``times`` times, ``seconds`` apart. The open pod watches are taken as the least of
    such reads: a watch the reflector just renewed shows for an instant beside the one it replaced
    (the new request begun, the old one's ``ResponseComplete`` not yet in the audit log)."""
    values = [read()]
    for _ in range(times - 1):
        time.sleep(seconds)
        values.append(read())
    return values


def open_pod_watches(audit_log: Path, start: int = 0, *, settle_seconds: float = 0.5) -> int:
    """The hooks' pod watches open, from byte ``start`` of the API server's audit log on: watch
    requests on pods begun (``ResponseStarted``) and not ended (``ResponseComplete``) at one moment
    of the API server's own clock, ``settle_seconds`` before the newest event read (the tier's audit
    policy logs both stages, and only the hooks' user). Judged by the events' ``stageTimestamp``, not
    by when the log is read: a watch the hooks resume every few seconds (``podread.watch``) ends and
    begins again within milliseconds, and a read between the two lines counted none open."""
    data = read_audit_log(audit_log, start)
    events = [json.loads(line) for line in data[:data.rfind(b"\n") + 1].splitlines() if line.strip()]
    stamps = [stamp for event in events if (stamp := _stage_time(event)) is not None]
    if not stamps:
        return 0
    moment = max(stamps) - timedelta(seconds=settle_seconds)
    started: set[str] = set()
    ended: set[str] = set()
    for event in events:
        ref = event.get("objectRef") or {}
        stamp = _stage_time(event)
        if event.get("verb") != "watch" or ref.get("resource") != "pods" or stamp is None or stamp > moment:
            continue
        (started if event.get("stage") == "ResponseStarted" else ended).add(str(event.get("auditID")))
    return len(started - ended)


def _stage_time(event: Mapping[str, Any]) -> datetime | None:
    """An audit event's ``stageTimestamp`` (RFC 3339 with microseconds), or ``None`` without one."""
    text = event.get("stageTimestamp")
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


class Clocked:
    """Cuts a pass into windows: ``mark()`` ends the window since the last mark and returns it."""

    def __init__(self, plane: ControlPlane, hooks: HookServer, driver: Metacontroller, transport: TimedTransport,
                 parts: Parts) -> None:
        self.plane, self.hooks, self.driver, self.parts = plane, hooks, driver, parts
        self.transport, self.timed = transport, 0
        self.usage = {name: usage_of(pids()) for name, pids in parts.items()}
        self.at = time.monotonic()
        self.audit_offset = plane.audit_log.stat().st_size if plane.audit_log.is_file() else 0
        """Counted from here on: an earlier pass's (or test's) requests are not this pass's."""
        self.metrics = HookMetrics()
        self.apiserver = self._scrape_apiserver()
        self.waits = 0

    def _scrape_apiserver(self) -> ApiServerMetrics:
        """The API server's metrics now; empty when they cannot be read (a figure missing, not a pass failed)."""
        try:
            return ApiServerMetrics.scrape(self.plane.url, self.plane.admin_token, str(self.plane.ca_file))
        except (OSError, ValueError):
            return ApiServerMetrics()

    def mark(self) -> Window:
        time.sleep(0.3)  # the audit log is written as each request completes
        now = time.monotonic()
        events, offset = self.plane.audit_events(self.audit_offset)
        metrics = HookMetrics.settled(self.hooks.metrics_url)
        waits = list(self.driver.queue.waits)
        usage = {name: usage_of(pids()) for name, pids in self.parts.items()}
        timed = list(self.transport.calls)
        apiserver = self._scrape_apiserver()
        window = Window(now - self.at, metrics.calls - self.metrics.calls, count_requests(events),
                        metrics.minus(self.metrics), waits[self.waits:],
                        {name: usage[name].since(self.usage.get(name, Usage())) for name in usage},
                        timed[self.timed:], os.getloadavg(), server_seconds(events), apiserver.minus(self.apiserver))
        self.timed, self.apiserver = len(timed), apiserver
        self.at, self.audit_offset, self.metrics, self.waits = now, offset, metrics, len(waits)
        self.usage = usage
        return window


def _create(custom: kubernetes.client.CustomObjectsApi, namespace: str, name: str, pods: int, *,
            labels: Mapping[str, str] | None = None, checkpoint: bool = False) -> None:
    body = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
            "spec": scale_spec(pods, checkpoint=checkpoint)}
    custom.create_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", namespace, "jobs", body,
                                           _request_timeout=(5, 30))


def _status(driver: Metacontroller, namespace: str, name: str) -> dict[str, Any]:
    job = driver.job(namespace, name)
    return dict((job or {}).get("status") or {})


def _all_running(driver: Metacontroller, namespace: str, names: Sequence[str], timeline: Timeline,
                 pods: int) -> bool:
    return all(_status(driver, namespace, n).get("phase") == "Running"
               and len(timeline.running(n)) >= pods for n in names)


def _hold(seconds: float, every_second: Callable[[], None]) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        every_second()
        time.sleep(min(1.0, max(0.0, end - time.monotonic())))


def check_steps(invariants: Invariants, timeline: Timeline, names: Sequence[str]) -> None:
    """The tier's per-step invariant from the watches: a Job's active pods are of one attempt."""
    for name in names:
        attempts = {p.attempt for p in timeline.pods_of(name)
                    if p.gone is None and p.phase not in ("Succeeded", "Failed")}
        if len(attempts) > 1:
            invariants.fail(f"{name}: pods of attempts {sorted(attempts)} are active at once")


def _transitions(scenario: Scenario, namespace: str, custom: kubernetes.client.CustomObjectsApi,
                 core: kubernetes.client.CoreV1Api, driver: Metacontroller, timeline: Timeline,
                 invariants: Invariants, seconds: float, *, act: bool = True) -> bool:
    """Acts on every Job at once (module doc; not when ``act`` is False: ``_preemptions`` acted), then
    follows each until it is done; returns whether all are done within ``seconds``."""
    def patch_spec(name: str, suspend: bool) -> None:
        custom.patch_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", namespace, "jobs", name,
                                              {"spec": {"suspend": suspend}}, _request_timeout=(5, 30))

    def fail_one(name: str) -> None:
        pods = timeline.running(name)
        if pods:
            core.patch_namespaced_pod(pods[0].name, namespace, {"metadata": {
                "labels": {FAIL_LABEL: "true"}, "annotations": {EXIT_CODE_ANNOTATION: "1"}}},
                _request_timeout=(5, 30))
            scenario.failed.add(name)

    def start(name: str) -> None:
        scenario.from_attempt[name] = int(_status(driver, namespace, name).get("attempt") or 0)
        if name in scenario.fail:
            fail_one(name)
        elif name in scenario.suspend:
            patch_spec(name, True)
        elif name in scenario.delete:
            custom.delete_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", namespace, "jobs", name,
                                                   _request_timeout=(5, 30))

    def follow(name: str) -> None:
        status = _status(driver, namespace, name)
        phase = status.get("phase")
        if name in scenario.suspend and name not in scenario.resumed:
            if phase == "Suspended":
                patch_spec(name, False)
                scenario.resumed.add(name)
            return
        if name in scenario.fail and name not in scenario.failed:
            fail_one(name)  # no pod was running when the transitions began: try again
            return
        if name in scenario.delete or phase != "Running":
            return
        after = scenario.from_attempt[name] if name in scenario.fail | scenario.suspend else -1
        for pod in timeline.running(name, after_attempt=after):
            if pod.name not in scenario.completed:
                core.patch_namespaced_pod(pod.name, namespace, {"metadata": {"labels": {COMPLETE_LABEL: "true"}}},
                                          _request_timeout=(5, 30))
                scenario.completed.add(pod.name)

    def guarded(action: Callable[[str], None]) -> Callable[[str], None]:
        def run(name: str) -> None:
            with suppress(*SERVER_ERRORS):  # tried again on the next round
                action(name)
        return run

    end = time.monotonic() + seconds
    with ThreadPoolExecutor(8) as pool:
        if act:
            list(pool.map(guarded(start), scenario.names))
        while time.monotonic() < end:
            pending = [n for n in scenario.names if not _done(scenario, driver, namespace, n)]
            if not pending:
                return True
            list(pool.map(guarded(follow), pending))
            check_steps(invariants, timeline, scenario.names)
            time.sleep(1.0)
    return False


def _preemptions(scenario: Scenario, namespace: str, custom: kubernetes.client.CustomObjectsApi,
                 core: kubernetes.client.CoreV1Api, driver: Metacontroller, timeline: Timeline,
                 invariants: Invariants, seconds: float, result: PassResult, pods: int, install: Install) -> bool:
    """The transitions behind Kueue (``Install.kueue``): one high-priority Job per ten (``urgent-*``)
    is created at once; Kueue preempts as many of the running ones (the quota fits them exactly). A
    stand-in trainer acknowledges each checkpoint request ``ACK_AFTER_SECONDS`` after it sees it (a
    merge patch of the annotation, as ``nvcre_checkpoint.acknowledge`` makes). Once every preemptor
    runs, the pods of every running Job are completed as they run (the preempted ones queue again and
    run their next attempt when the preemptors finish). Times, per preempted Job, from the request
    (``requestedAt``; without the feature, the Workload's ``Evicted`` time) to the quota released
    (its Workload seen gone, polled about every 0.5 s: the figures are that coarse, and second-rounded
    at their start). Returns whether every Job Succeeded within ``seconds``."""
    urgent = [f"urgent-{n:04d}" for n in range(max(1, len(scenario.names) // 10))]
    scenario.names += urgent
    end = time.monotonic() + seconds
    started: dict[str, datetime] = {}
    acked: set[str] = set()
    released: dict[str, datetime] = {}
    held: dict[str, str] = {}
    """The uid of each preempted Job's Workload when it was evicted (the one whose quota it holds)."""
    high = {QUEUE_LABEL: "team", PRIORITY_LABEL: "high"}
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda name: _create(custom, namespace, name, pods, labels=high), urgent))
        while time.monotonic() < end:
            now = datetime.now(UTC)
            workloads = {w["metadata"]["name"]: w for w in custom.list_namespaced_custom_object(
                "kueue.x-k8s.io", "v1beta2", namespace, "workloads", _request_timeout=(5, 30))["items"]}
            for name in scenario.names:
                if name in urgent:
                    continue
                status = _status(driver, namespace, name)
                record = status.get("checkpoint") or {}
                workload = workloads.get(name)
                evicted = _evicted_at(workload)
                ended = next((e for e in status.get("attempts") or () if e.get("outcome") == "Evicted"), None)
                asked = workload is not None and (evicted is not None or record.get("outcome") == "Requested")
                if name not in started and (asked or ended is not None):
                    # the request's time; else Kueue's eviction, read off the Workload or, once it is gone
                    # (a drain quicker than this loop), off the attempt's end (which is that time)
                    at = (parse_time(record["requestedAt"]) if record.get("requestedAt") else evicted
                          or parse_time((ended or {}).get("ended") or ""))
                    if at is not None:
                        started[name] = at
                        held[name] = workload["metadata"]["uid"] if workload is not None and ended is None else ""
                        result.preempted.append(name)
                if name in started and name not in released and (workload is None
                                                                  or workload["metadata"]["uid"] != held[name]):
                    released[name] = now  # the Workload deleted (a fresh one follows): the quota released
                if (install.checkpoint and record.get("outcome") == "Requested" and name not in acked
                        and (now - (parse_time(record["requestedAt"]) or now)).total_seconds() >= ACK_AFTER_SECONDS):
                    ack = json.dumps({"id": record["id"], "step": 100})
                    custom.patch_namespaced_custom_object(
                        "nvcre.nvidia.com", "v1alpha1", namespace, "jobs", name,
                        {"metadata": {"annotations": {ACK_ANNOTATION: ack}}}, _request_timeout=(5, 30))
                    acked.add(name)
            preempting = all(_status(driver, namespace, n).get("phase") in ("Running", "Succeeded") for n in urgent)
            if preempting and all(n in released for n in started):
                break
            check_steps(invariants, timeline, scenario.names)
            time.sleep(0.5)
    result.release_latencies = [(released[n] - started[n]).total_seconds() for n in started if n in released]
    for name in started:
        record = _status(driver, namespace, name).get("checkpoint") or {}
        if install.checkpoint:
            result.checkpoint_outcomes[str(record.get("outcome"))] += 1
            ended = parse_time(record.get("acknowledgedAt") or record.get("expiredAt") or "")
            deadline = parse_time(record.get("deadline") or "")
            if ended is None or deadline is None or (ended - deadline).total_seconds() > install.resync_period:
                result.late_ends.append(name)
    return _transitions(scenario, namespace, custom, core, driver, timeline, invariants,
                        end - time.monotonic(), act=False)


def _evicted_at(workload: Mapping[str, Any] | None) -> datetime | None:
    """When Kueue evicted ``workload`` (its ``Evicted`` condition, True), or ``None``."""
    for condition in ((workload or {}).get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Evicted" and condition.get("status") == "True":
            return parse_time(condition.get("lastTransitionTime") or "")
    return None


def _done(scenario: Scenario, driver: Metacontroller, namespace: str, name: str) -> bool:
    if name in scenario.delete:
        return driver.job(namespace, name) is None
    return _status(driver, namespace, name).get("phase") == "Succeeded"


def _clean_up(custom: kubernetes.client.CustomObjectsApi, namespace: str, timeline: Timeline,
              timeout: float = 300.0) -> None:
    """Deletes the pass's Jobs (their finalizer removed: the stand-in has stopped) and JobSets, and
    waits until the garbage collector has removed their pods, so the next pass starts on a quiet
    server."""
    jobs = custom.list_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", namespace, "jobs",
                                                _request_timeout=(5, 60))["items"]
    for job in jobs:
        name = job["metadata"]["name"]
        try:
            custom.patch_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", namespace, "jobs", name,
                                                  {"metadata": {"finalizers": None}}, _request_timeout=REQUEST_TIMEOUT)
            custom.delete_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", namespace, "jobs", name,
                                                   _request_timeout=REQUEST_TIMEOUT)
        except SERVER_ERRORS:
            pass
    for jobset in custom.list_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", namespace, "jobsets",
                                                       _request_timeout=(5, 60))["items"]:
        with suppress(*SERVER_ERRORS):
            custom.delete_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", namespace, "jobsets",
                                                   jobset["metadata"]["name"], _request_timeout=REQUEST_TIMEOUT)
    core = kubernetes.client.CoreV1Api(custom.api_client)
    wait_for(lambda: not core.list_namespaced_pod(namespace, limit=1, _request_timeout=(5, 30)).items, timeout,
             every=0.5)


# -- figures and the report ------------------------------------------------------------------------

def figures(results: Mapping[str, PassResult]) -> list[Figure]:
    """The headline figures: the watch cache (``CACHE_PASS``) against the baselines of the same run
    (``live-only``, ``ttl-cache``), and Metacontroller's defaults (``defaults``) against the
    large-install flags."""
    def steady(r: PassResult, key: str | None = None) -> float | None:
        return r.windows.get("steady", Window()).per_call(key)

    def busy(r: PassResult) -> float | None:
        return r.windows.get("transitions", Window()).per_call()

    def p50(values: Sequence[float]) -> float | None:
        return percentile(values, 0.5) if values else None

    def p99(values: Sequence[float]) -> float | None:
        return percentile(values, 0.99) if values else None

    def rss(r: PassResult) -> float | None:
        return max(r.rss_kib) / 1024 if r.rss_kib else None

    Measure = tuple[str, Callable[[PassResult], float | None], str]
    cache_measures: list[Measure] = [
        ("steady: pod LISTs per hook call", lambda r: steady(r, "list pods"), "req/call"),
        ("steady: the hooks' API requests per hook call", steady, "req/call"),
        ("steady: the hooks' API requests per Job-minute",
         lambda r: r.windows.get("steady", Window()).per_job_minute(r.jobs), "req/Job-min"),
        ("transitions (drains): API requests per hook call", busy, "req/call"),
        ("hook latency p50", lambda r: r.everything().metrics.quantile(0.5), "s"),
        ("hook latency p99", lambda r: r.everything().metrics.quantile(0.99), "s"),
        ("gunicorn worker RSS (largest)", rss, "MiB"),
        ("hooks pod RSS (master + workers)", lambda r: r.pod_rss_kib / 1024 if r.pod_rss_kib else None, "MiB"),
    ]
    flag_measures: list[Measure] = [
        ("seconds until every Job ran", lambda r: r.windows.get("start", Window()).seconds, "s"),
        ("Metacontroller queue wait p50", lambda r: p50(r.everything().queue_waits), "s"),
        ("Metacontroller queue wait p99", lambda r: p99(r.everything().queue_waits), "s"),
        ("restart latency p50", lambda r: p50(r.restart_latencies), "s"),
        ("restart latency p99", lambda r: p99(r.restart_latencies), "s"),
        ("delete latency p50", lambda r: p50(r.delete_latencies), "s"),
        ("delete latency p99", lambda r: p99(r.delete_latencies), "s"),
        ("hook latency p99", lambda r: r.everything().metrics.quantile(0.99), "s"),
    ]
    layout_measures: list[Measure] = [
        ("hook latency p50", lambda r: r.everything().metrics.quantile(0.5), "s"),
        ("hook latency p99", lambda r: r.everything().metrics.quantile(0.99), "s"),
        ("time outside the hook (gunicorn queue, HTTP, GIL), mean", PassResult.outside_hook, "s"),
        ("Metacontroller queue wait p50", lambda r: p50(r.everything().queue_waits), "s"),
        ("Metacontroller queue wait p99", lambda r: p99(r.everything().queue_waits), "s"),
        ("hooks pod RSS (master + workers)", lambda r: r.pod_rss_kib / 1024 if r.pod_rss_kib else None, "MiB"),
        ("pod watches open at the end of the steady window",
         lambda r: None if r.open_watches is None else float(r.open_watches), "watches"),
    ]
    out: list[Figure] = []

    def compare(name: str, baseline_name: str, measures: list[Measure], label: str) -> None:
        ours, baseline = results.get(name), results.get(baseline_name)
        if ours is None or baseline is None:
            return
        for title, measure, unit in measures:
            value = measure(ours)
            if value is None:
                continue
            zero = title.startswith("steady: pod LISTs") and baseline_name == "live-only"
            out.append(Figure(f"{title} ({label})", value, unit, measure(baseline), baseline_name,
                              target="== 0" if zero else "", met=(value == 0) if zero else None))

    compare(CACHE_PASS, "live-only", cache_measures, "watch cache")
    compare(CACHE_PASS, "ttl-cache", cache_measures, "watch cache")
    compare("defaults", CACHE_PASS, flag_measures, "Metacontroller's defaults")
    compare(CACHE_PASS, "large-install-2x10", layout_measures, "1 worker x 20 threads")
    return out


def cost_table(results: Mapping[str, PassResult]) -> list[dict[str, Any]]:
    """Each part's cost in each pass, from ``/proc`` (``Window.usage``): CPU seconds per Job-hour in the
    steady window and over the whole pass (creation, settling, steady, transitions), and its memory at
    the end of the steady window; the hooks' row also as a multiple of the JobSet controller's."""
    rows = []
    for name, result in results.items():
        steady, whole = result.windows.get("steady", Window()), result.everything()
        job_hours = {"steady": result.jobs * steady.seconds / 3600, "pass": result.jobs * whole.seconds / 3600}
        jobset = whole.usage.get("JobSet controller")
        for part, used in sorted(whole.usage.items(), key=lambda item: -item[1].cpu_seconds):
            calm = steady.usage.get(part, Usage())
            row = {"pass": name, "part": part,
                   "CPU s/Job-h steady": _num(calm.cpu_seconds / job_hours["steady"] if job_hours["steady"] else None),
                   "CPU s/Job-h pass": _num(used.cpu_seconds / job_hours["pass"] if job_hours["pass"] else None),
                   "CPU s pass": _num(used.cpu_seconds),
                   "RSS MiB": _num(calm.rss_kib / 1024 if calm.rss_kib else None),
                   "x JobSet controller (CPU, RSS)": "-"}
            if part == HOOKS_PART and jobset is not None and jobset.cpu_seconds and jobset.rss_kib:
                jobset_rss = steady.usage.get("JobSet controller", jobset).rss_kib or jobset.rss_kib
                row["x JobSet controller (CPU, RSS)"] = (f"{used.cpu_seconds / jobset.cpu_seconds:.2f}, "
                                                         f"{calm.rss_kib / jobset_rss:.2f}")
            rows.append(row)
    return rows


def request_table(results: Mapping[str, PassResult]) -> list[dict[str, Any]]:
    """The hooks' requests by verb and resource, per hook call, in each pass's steady and transitions windows."""
    keys = sorted({key for r in results.values() for w in r.windows.values() for key in w.requests})
    rows = []
    for key in keys:
        row: dict[str, Any] = {"request": key}
        for name, r in results.items():
            for window in ("steady", "transitions"):
                row[f"{name} {window[:6]}"] = _num(r.windows.get(window, Window()).per_call(key))
        rows.append(row)
    return rows


def run(quick: bool = False, *, jobs: int | None = None, passes: Sequence[str] = DEFAULT_PASSES,
        budget: float = 3600.0, record: bool = True, record_as: str = "cluster_scale",
        log: Callable[[str], None] = print) -> BenchResult:
    """The benchmark (module doc): brings the cluster up, runs ``passes`` in order with ``jobs`` Jobs
    (default ``DEFAULT_JOBS``; ``QUICK_JOBS`` when ``quick``), each within its share of ``budget``
    seconds, and returns the figures; with ``record``, also writes them to bench/results.json and
    BENCHMARKS.md under ``record_as``."""
    jobs = jobs or (QUICK_JOBS if quick else DEFAULT_JOBS)
    began = time.monotonic()
    results: dict[str, PassResult] = {}
    with cluster(jobs, log, kueue=any(PASSES[name].kueue for name in passes)) as (plane, installed, parts, kueue):
        for index, name in enumerate(passes):
            left = budget - (time.monotonic() - began)
            share = left / (len(passes) - index)
            log(f"pass {name}, {PASSES[name].about} ({PASSES[name].flags()}), {jobs} Jobs, within {share:.0f} s")
            results[name] = run_pass(plane, installed.hook_token, installed.service_token, PASSES[name], jobs,
                                     deadline=share, log=log, parts=parts, kueue=kueue)
            log(f"  {name}: {TAIL_TABLE}\n{render_table(results[name].tail_rows())}")
    result = BenchResult(record_as, f"{jobs} Jobs of {PODS_PER_JOB} pods on the real control plane",
                         figures=figures(results))
    result.tables["passes"] = [r.row() for r in results.values()]
    result.tables[REQUESTS_TABLE] = request_table(results)
    result.tables[COSTS_TABLE] = cost_table(results)
    result.tables[TAIL_TABLE] = [row for r in results.values() for row in r.tail_rows()]
    result.scale = {"jobs": jobs, "pods": jobs * PODS_PER_JOB, "passes": list(passes),
                    "flags": {name: PASSES[name].flags() for name in passes}}
    result.notes = _notes(results)
    result.seconds = time.monotonic() - began
    if record:
        write_results(result, {name: r.as_dict() for name, r in results.items()})

    return result


def refusal_causes(metrics_url: str) -> Counter[str]:
    """The hooks' refusals as behind the cluster so far, by cause (``nvcre_hook_refusals_total``,
    every hook summed), from one scrape of ``metrics_url``."""
    with urllib.request.urlopen(metrics_url, timeout=10) as response:
        text = response.read().decode()
    causes: Counter[str] = Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "nvcre_hook_refusals_total" and sample.value:
                causes[sample.labels["cause"]] += int(sample.value)
    return causes


def _notes(results: Mapping[str, PassResult]) -> list[str]:
    notes = []
    for name, r in results.items():
        if not r.finished:
            notes.append(f"{name}: did not finish within its deadline; unfinished Jobs: {r.unfinished[:10]}")
        if r.violations:
            notes.append(f"{name}: {len(r.violations)} invariant violations, first: {r.violations[0]}")
        load = r.everything().load
        notes.append(f"{name}: load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min; "
                     f"{os.cpu_count()} cores)")
        notes.append(f"{name}: {r.sync_errors} failed syncs (stand-in), {r.stale_refusals} answers refused as "
                     f"behind the cluster (409), {len(r.restart_latencies)} restarts and "
                     f"{len(r.delete_latencies)} deletes timed")
        answered = sum(r.answers.values())
        notes.append(f"{name}: {answered} hook answers ({answered / r.jobs:.1f} per Job), by status "
                     f"{dict(sorted(r.answers.items()))}: {r.answers['409'] / answered if answered else 0:.1%} "
                     f"are 409; refusals by cause {dict(sorted(r.refusal_causes.items()))}")
        notes.append(f"{name}: timed Jobs, lateness p50/max (resyncPeriodSeconds {r.install.resync_period:g} s): "
                     f"activeDeadlineSeconds {TIMED_DEADLINE_SECONDS} to DeadlineExceeded "
                     f"{r.timed.summary('deadline')}; ttlSecondsAfterFinished {TIMED_TTL_SECONDS} to the Job gone "
                     f"{r.timed.summary('ttl')}; stuckAfterSeconds {TIMED_STUCK_AFTER_SECONDS} to DrainStuck "
                     f"{r.timed.summary('stuck')}" + (f"; not timed: {r.timed.missing}" if r.timed.missing else "")
                     + "".join(f"; e.g. {said}" for said in r.timed.said.values()))
        if r.install.kueue:
            start = "request (requestedAt)" if r.install.checkpoint else "eviction (Evicted)"
            notes.append(f"{name}: {len(r.preempted)} Jobs preempted by Kueue, {len(r.release_latencies)} timed from "
                         f"the {start} to the quota released (s, sorted): "
                         f"{[round(x, 1) for x in sorted(r.release_latencies)]}")
        if r.install.checkpoint:
            notes.append(f"{name}: checkpoint outcomes {dict(r.checkpoint_outcomes)}; ended later than grace + one "
                         f"resync ({r.install.resync_period:g} s): {len(r.late_ends)} {r.late_ends[:10]}")
    return notes


def write_results(result: BenchResult, passes: Mapping[str, Any]) -> None:
    """Puts this run into bench/results.json (its entry, named ``result.name``, replaced; the other
    benchmarks kept) and its tables into BENCHMARKS.md between the markers of that name (appended
    at the end the first time)."""
    begin = f"<!-- {result.name}: begin (written by make bench-cluster) -->"
    end = f"<!-- {result.name}: end -->"
    document: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {"benchmarks": []}
    entry = {**result.as_dict(), "passes": passes, "cpus": os.cpu_count(),
             "date": datetime.now(UTC).isoformat(timespec="seconds")}
    document["benchmarks"] = [b for b in document.get("benchmarks", []) if b.get("name") != result.name]
    document["benchmarks"].append(entry)
    RESULTS.write_text(json.dumps(document, indent=2, default=str) + "\n")
    section = "\n".join([
        begin,
        f"Measured {entry['date']} on {os.cpu_count()} cores, {result.scale['jobs']} Jobs of {PODS_PER_JOB} pods, "
        f"{result.seconds:.0f} s in all.",
        "", "```", render_table(result.tables["passes"]), "```", "",
        "The hooks' requests per hook call, by verb and resource (the API server's audit log):", "",
        "```", render_table(result.tables[REQUESTS_TABLE]), "```", "",
        "Each part's cost, from /proc (CPU seconds per Job-hour: steady window and whole pass; memory at the "
        "end of the steady window; on these shared 2 cores):", "",
        "```", render_table(result.tables[COSTS_TABLE]), "```", "",
        "Where the tail is (issue 36 item 8): every hook call, by what its answer did, each read on an answer's "
        "path, the effects thread's writes, and each call as the stand-in timed it:", "",
        "```", render_table(result.tables[TAIL_TABLE]), "```", "",
        *[f"- {note}" for note in result.notes],
        end])
    text = REPORT.read_text() if REPORT.is_file() else ""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    REPORT.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster_scale", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_JOBS} Jobs instead of {DEFAULT_JOBS}")
    parser.add_argument("--jobs", type=int, help="Jobs per pass (overrides --quick)")
    parser.add_argument("--passes", default=",".join(DEFAULT_PASSES),
                        help=f"comma-separated, of {', '.join(PASSES)} (default: {', '.join(DEFAULT_PASSES)})")
    parser.add_argument("--budget", type=float, default=3600.0,
                        help="seconds for every pass together; each pass gets its share of what is left")
    parser.add_argument("--no-record", action="store_true", help="print only; write neither results.json "
                                                                 "nor BENCHMARKS.md")
    parser.add_argument("--record-as", default="cluster_scale",
                        help="the name of this run's entry in results.json and section of BENCHMARKS.md")
    args = parser.parse_args(argv)
    passes = [p.strip() for p in args.passes.split(",") if p.strip()]
    unknown = [p for p in passes if p not in PASSES]
    if unknown:
        parser.error(f"unknown passes {unknown}; known: {', '.join(PASSES)}")
    from bench.__main__ import report  # the same printing as every benchmark
    result = run(args.quick, jobs=args.jobs, passes=passes, budget=args.budget, record=not args.no_record,
                 record_as=args.record_as, log=lambda line: print(line, file=sys.stderr, flush=True))
    print(report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
