"""Benchmark 1: API calls saved by the cache, on a simulated clock.

Replays Metacontroller-like traffic against a cluster of Jobs of 64 pods and runs every sync
through ``hooks.server.handler.handle`` on the same request bytes with up to three Readers: (a) the TTL
mode ``Reader(PodCache(live, ttl, clock=sim), live)``, (b) a live-only ``Reader(live, live)`` and,
over HTTP, (w) the watch mode: the same PodCache fed by a ``PodWatch`` (``NVCRE_CACHE_MODE=watch``).
The world (children, pods, the parent's status) follows (a)'s answers, as Metacontroller would;
(b) and (w) answer the very same requests, so they are compared request by request.

The watch over HTTP runs its real thread against the fake server; what the real server does on its
own clock is played on the simulated one: the bookmark before each watch request's timeout (every
``watch_timeout_seconds(ttl)`` = 3 s, sent only when the watch cache moved, as the real cacher does)
and the watch's nudge of a quiet watch (every simulated second). After every change to the pods the
replay waits (in real time) until the watch has applied it, as the simulated time between events is
far longer than the watch's real latency. Once, for ``OUTAGE`` seconds, every watch request fails
(503) and the open watch is cut: the watch-mode reads then fill from lists, and those are counted.
The watch's nudge first tries the last list the Reader's own live client sent (its barrier checks
list pods anyway), on the simulated clock, and sends a one-pod list only when that does not confirm.

Traffic per Job (times are simulated seconds):
- created at a staggered time in the first minute; syncs at +0, +0.5, +1, +2, +3, +5, +7, +9.5
  (the start-up burst of 8), then a resync every 60 s (Metacontroller's resyncPeriodSeconds);
- its pods (64, Running) appear 3 s after its JobSet is created;
- one Job in ten restarts (its JobSet fails; restarts left) or is suspended: the JobSet is deleted,
  its pods terminate and vanish in four waves over 30 s, the hook asks for a resync every 2 s;
  a restarted Job gets attempt+1 with 64 new pods;
- a few Jobs are deleted: ``/finalize`` until the barrier passes.

The cluster is either the wire-level fake API server (every list over real HTTP through
``LiveClient``; requests and bytes read from the server's own records) or an in-memory lister
that counts lists the same way (used for the TTL sweep, where only the number of lists matters).
"""

from __future__ import annotations

import gc
import heapq
import itertools
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from bench.common import BenchResult, Figure
from hooks.server.config import Settings
from hooks.server.handler import HookResult, handle
from podread import (
    JOB_LABEL,
    JOBSET_NAME_LABEL,
    LAUNCHER_LABEL,
    LiveClient,
    PodCache,
    PodSelector,
    Reader,
    ReadMetrics,
    SnapshotJobs,
    is_active,
)
from podread.watch import Backoff, PodWatch, WatchedPods, watch_timeout_seconds
from tests.fakekube import FakeKubeServer, Fault, make_job_pods
from tests.support import job_request, job_spec, jobset_child

Pod = dict[str, Any]
NAMESPACE = "bench"
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
BURST = (0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 7.0, 9.5)
RESYNC_PERIOD = 60.0
DRAIN_RESYNC = 2.0
DRAIN_WAVES = (8.0, 16.0, 24.0, 30.0)
PODS_APPEAR = 3.0
PAGE_SIZE = 500
OUTAGE = 10.0
"""Simulated seconds during which the watch is down (cut, then every watch request answers 503):
twice the TTL, so reads must fall back to fills, which are counted."""


class SimClock:
    """The simulated clock: seconds since the replay started, moved only by the replay."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def datetime(self) -> datetime:
        """The simulated time as a UTC datetime (the decisions' clock)."""
        return EPOCH + timedelta(seconds=self.now)


class PodFactory:
    """Builds each (job, attempt)'s 64 Running pods once and reuses them across replays."""

    def __init__(self, pods_per_job: int) -> None:
        self.pods_per_job = pods_per_job
        self._made: dict[tuple[str, int], list[Pod]] = {}

    def pods(self, job: str, attempt: int) -> list[Pod]:
        """The pods of ``job``'s ``attempt`` (never mutated: changes make new dicts)."""
        key = (job, attempt)
        if key not in self._made:
            self._made[key] = make_job_pods(job, self.pods_per_job, NAMESPACE, attempt=attempt)
        return self._made[key]


def _terminating(pod: Pod, when: str) -> Pod:
    metadata = {**pod["metadata"], "deletionTimestamp": when, "deletionGracePeriodSeconds": 30}
    return {**pod, "metadata": metadata}


def _failed(pod: Pod) -> Pod:
    return {**pod, "status": {**pod["status"], "phase": "Failed"}}


# ---- clusters ------------------------------------------------------------------------------------

class HttpCluster:
    """Pods on the wire-level fake API server; each role lists through its own ``LiveClient``."""

    def __init__(self, server: FakeKubeServer) -> None:
        self.server = server
        self._metrics = ReadMetrics(registry=_registry())

    def lister(self, role: str, clock: Callable[[], float] = time.monotonic) -> LiveClient:
        """A LiveClient whose requests carry ``User-Agent: bench-<role>``."""
        api = self.server.api_client(retries=False)
        api.user_agent = f"bench-{role}"
        return LiveClient(api, timeout_seconds=30, page_size=PAGE_SIZE, metrics=self._metrics, clock=clock)

    def put(self, pods: list[Pod]) -> None:
        self.server.put_pods(pods)

    def delete(self, pods: list[Pod]) -> None:
        for pod in pods:
            self.server.delete_pod(pod["metadata"]["namespace"], pod["metadata"]["name"])

    def counts(self) -> dict[str, tuple[int, int]]:
        """(list requests, response bytes) by role, from the server's records; watch requests are
        counted apart, under ``<role>-watch``."""
        totals: dict[str, list[int]] = {}
        for request in self.server.requests:
            role = request.headers.get("user-agent", "").removeprefix("bench-")
            if request.query.get("watch") == "true":
                role += "-watch"
            entry = totals.setdefault(role, [0, 0])
            entry[0] += 1
            entry[1] += request.bytes_sent
        return {role: (n, b) for role, (n, b) in totals.items()}


class _MemoryLister:
    """An in-memory PodLister over ``MemoryCluster``'s pods that counts lists like the API server's pages."""

    def __init__(self, cluster: MemoryCluster, role: str) -> None:
        self._cluster, self._role = cluster, role

    def list_pods(self, selector: PodSelector) -> list[Pod]:
        pods = [pod for pod in self._cluster.candidates(selector) if selector.matches(pod)]
        pods.sort(key=lambda pod: pod["metadata"]["name"])
        self._cluster.requests[self._role] = self._cluster.requests.get(self._role, 0) + max(
            1, math.ceil(len(pods) / PAGE_SIZE))
        return pods


INDEXED_LABELS = (JOB_LABEL, JOBSET_NAME_LABEL, LAUNCHER_LABEL)


class MemoryCluster:
    """Pods in memory, indexed by job and by the JobSet-name and launcher labels (so the barrier's
    live reads by those labels do not scan every pod); counts list requests by role (bytes are not
    counted)."""

    def __init__(self) -> None:
        self.by_job: dict[str, dict[str, Pod]] = {}
        self.by_label: dict[tuple[str, str], dict[str, Pod]] = {}
        self.requests: dict[str, int] = {}

    def candidates(self, selector: PodSelector) -> list[Pod]:
        """The pods a selector can select, from the smallest index that bounds the answer."""
        for key in INDEXED_LABELS:
            if key in selector.labels:
                return list(self.by_label.get((key, selector.labels[key]), {}).values())
            if key in selector.label_in:
                return [pod for value in selector.label_in[key]
                        for pod in self.by_label.get((key, value), {}).values()]
        return self.all_pods()

    def _index(self, pod: Pod, add: bool) -> None:
        labels = pod["metadata"].get("labels") or {}
        name = pod["metadata"]["name"]
        for key in INDEXED_LABELS:
            if key in labels:
                bucket = self.by_label.setdefault((key, str(labels[key])), {})
                if add:
                    bucket[name] = pod
                else:
                    bucket.pop(name, None)

    def lister(self, role: str) -> _MemoryLister:
        return _MemoryLister(self, role)

    def all_pods(self) -> list[Pod]:
        return [pod for pods in self.by_job.values() for pod in pods.values()]

    def put(self, pods: list[Pod]) -> None:
        for pod in pods:
            job = (pod["metadata"].get("labels") or {}).get(JOB_LABEL, "")
            old = self.by_job.get(job, {}).get(pod["metadata"]["name"])
            if old is not None:
                self._index(old, add=False)
            self.by_job.setdefault(job, {})[pod["metadata"]["name"]] = pod
            self._index(pod, add=True)

    def delete(self, pods: list[Pod]) -> None:
        for pod in pods:
            job = (pod["metadata"].get("labels") or {}).get(JOB_LABEL, "")
            old = self.by_job.get(job, {}).pop(pod["metadata"]["name"], None)
            if old is not None:
                self._index(old, add=False)

    def counts(self) -> dict[str, tuple[int, int]]:
        return {role: (n, 0) for role, n in self.requests.items()}


def _registry() -> Any:
    from prometheus_client import CollectorRegistry

    return CollectorRegistry()


# ---- the world -----------------------------------------------------------------------------------

@dataclass
class Job:
    """One NVCRE Job as Metacontroller and the cluster see it."""

    name: str
    start: float
    kind: str  # steady, restart, suspend, delete
    event_at: float
    status: dict[str, Any] | None = None
    observed: dict[int, str] = field(default_factory=dict)  # attempt -> "" or "Failed"
    suspend: bool = False
    finalizing: bool = False
    done: bool = False
    next_sync: float | None = None
    pods: dict[str, Pod] = field(default_factory=dict)
    draining: set[int] = field(default_factory=set)


@dataclass
class Replay:
    """Counters of one replay."""

    syncs: int = 0
    by_hook: dict[str, int] = field(default_factory=dict)
    identical: int = 0
    differ_active_only: int = 0
    cache_held_longer: int = 0
    unsafe: int = 0
    other_diff: int = 0
    cache_windows: int = 0
    live_reads: int = 0
    fill_then_live_same_sync: int = 0
    active_error_max: int = 0
    active_error_syncs: int = 0
    stale_age_max: float = 0.0
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    seconds: float = 0.0
    drain_jobs: int = 0
    deleted_jobs: int = 0
    watch_identical: int = 0
    watch_unsafe: int = 0
    watch_held_longer: int = 0
    watch_other: int = 0
    watch_fills: int = 0
    watch_answers: int = 0
    watch_nudges: int = 0
    watch_lists: int = 0
    outage_syncs: int = 0


class World:
    """The simulated cluster and Metacontroller: schedules syncs, applies (a)'s answers."""

    def __init__(self, *, jobs: int, minutes: float, ttl: float, cluster: Any, factory: PodFactory,
                 compare: bool, drain_every: int = 10, deletions: int = 5, watch: bool = False) -> None:
        self.clock = SimClock()
        self.cluster = cluster
        self.factory = factory
        self.end = minutes * 60.0
        self.ttl = ttl
        self.compare = compare
        self.settings = Settings(resync_seconds=DRAIN_RESYNC)
        metrics = ReadMetrics(registry=_registry())
        # Wired as in production: the cache fills from the Reader's own live client.
        live_a = cluster.lister("cached")
        # The bench world has no batch Jobs (the drain barrier's batch Job read): an in-memory lister that holds none.
        self.reader_a = Reader(PodCache(live_a, ttl_seconds=ttl, clock=self.clock, metrics=metrics), live_a,
                               metrics=metrics, jobs=SnapshotJobs())
        self.filled_at: dict[str, float] = {}  # job -> simulated time of its last cache fill
        live_b = cluster.lister("live")
        self.reader_b = Reader(live_b, live_b, metrics=metrics, jobs=SnapshotJobs()) if compare else None
        self.watch: PodWatch | None = None
        self.reader_w: Reader | None = None
        self.watch_registry = _registry()
        self.watch_down = False
        if watch:
            wmetrics = ReadMetrics(registry=self.watch_registry)
            store = WatchedPods(None, ttl_seconds=ttl, clock=self.clock, metrics=wmetrics)
            live_w = cluster.lister("watch", clock=self.clock)  # the sim clock: its lists' times confirm the watch
            self.watch = PodWatch(cluster.lister("watchstream", clock=self.clock), store, watch_seconds=3600,
                                  metrics=wmetrics, backoff=Backoff(0.02, 0.2), nudge_every=None, peers=[live_w])
            self.reader_w = Reader(PodCache(live_w, ttl_seconds=ttl, clock=self.clock, metrics=wmetrics,
                                            watches=[self.watch]), live_w, metrics=wmetrics, jobs=SnapshotJobs())
            self.watch.start()
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self.jobs: list[Job] = []
        self.replay = Replay()
        self._cache_reads: dict[str, list[float]] = {}
        stagger = min(RESYNC_PERIOD, self.end / 4) / max(jobs, 1)
        for index in range(jobs):
            start = index * stagger
            kind = "steady"
            if index % drain_every == drain_every - 1:
                kind = "restart" if (index // drain_every) % 2 == 0 else "suspend"
            elif index % drain_every == drain_every // 2 and index // drain_every < deletions:
                kind = "delete"
            # the event falls between 2 minutes in and 2 minutes before the end, spread by job
            span = max(self.end - 240.0, 1.0)
            event_at = min(self.end - 60.0, 120.0 + (index * 7.919) % span) if self.end > 180 else self.end / 2
            job = Job(f"job-{index:04d}", start, kind, event_at)
            self.jobs.append(job)
            self.at(start, lambda job=job: self.create(job))
        if self.watch is not None:
            self._settle()
            tick = 1.0
            while tick <= self.end:
                self.at(tick, self._watch_tick)
                tick += 1.0
            outage = self.end * 0.4
            self.at(outage, self._watch_outage)
            self.at(outage + OUTAGE, self._watch_back)

    # -- the watch's own clock (watch mode) --------------------------------------------------------

    def _settle(self, timeout: float = 10.0) -> None:
        """Waits (real time) until the watch has applied everything the server's watch cache holds."""
        if self.watch is None or self.watch_down:
            return
        server = self.cluster.server
        deadline = time.monotonic() + timeout
        while True:
            position = self.watch.store.resource_version
            if position.isdigit() and int(position) >= server.watch_cache_version:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the watch did not catch up: at {position}, the server at "
                                   f"{server.watch_cache_version}")
            time.sleep(0.001)

    def _watch_tick(self) -> None:
        """One simulated second of the watch: the nudge, and every ``watch_timeout_seconds`` the
        bookmark the server sends before a watch request's timeout."""
        assert self.watch is not None
        if self.watch_down:
            return
        before = self._nudge_lists()
        self.watch.nudge()
        self.replay.watch_nudges += self._nudge_lists() - before
        if int(self.clock.now) % watch_timeout_seconds(self.ttl) == 0:
            self.cluster.server.bookmark()
        self._settle()

    def _nudge_lists(self) -> int:
        """One-pod lists the watch has sent (``podread_watch_nudges_total`` but ``by-peer``)."""
        total = 0.0
        for outcome in ("confirmed", "behind", "error"):
            total += self.watch_registry.get_sample_value(
                "podread_watch_nudges_total", {"scope": "all-namespaces", "outcome": outcome}) or 0.0
        return int(total)

    def _watch_outage(self) -> None:
        self.watch_down = True
        self.cluster.server.inject(Fault.error(None, 503, query={"watch": "true"}))
        self.cluster.server.break_watches()

    def _watch_back(self) -> None:
        self.cluster.server.clear_faults()
        self.watch_down = False
        self._settle(timeout=30.0)

    def close(self) -> None:
        """Stops the watch (watch mode)."""
        if self.watch is not None:
            self.watch.stop()

    # -- scheduling --------------------------------------------------------------------------------

    def at(self, when: float, action: Callable[[], None]) -> None:
        if when <= self.end:
            heapq.heappush(self._events, (when, next(self._seq), action))

    def trigger(self, job: Job, when: float) -> None:
        """Metacontroller's work queue: one pending sync per Job, the earliest wins."""
        if job.done or when > self.end:
            return
        if job.next_sync is not None and job.next_sync <= when:
            return
        job.next_sync = when
        self.at(when, lambda: self._due(job, when))

    def _due(self, job: Job, when: float) -> None:
        if job.next_sync != when or job.done:
            return
        job.next_sync = None
        self.sync(job)

    def run(self) -> Replay:
        started = time.perf_counter()
        while self._events:
            when, _, action = heapq.heappop(self._events)
            self.clock.now = when
            action()
        self._close_windows()
        self.replay.counts = self.cluster.counts()
        self.replay.seconds = time.perf_counter() - started
        return self.replay

    # -- world events ------------------------------------------------------------------------------

    def create(self, job: Job) -> None:
        for offset in BURST:
            self.at(self.clock.now + offset, lambda job=job: self.trigger(job, self.clock.now))
        periodic = self.clock.now + RESYNC_PERIOD
        while periodic <= self.end:
            self.at(periodic, lambda job=job: self.trigger(job, self.clock.now))
            periodic += RESYNC_PERIOD
        if job.kind != "steady":
            self.at(job.start + job.event_at, lambda job=job: self.disrupt(job))

    def disrupt(self, job: Job) -> None:
        """The Job's one disruption: its JobSet fails, it is suspended, or it is deleted."""
        if job.done:
            return
        if job.kind == "restart":
            attempt = max(job.observed, default=None)
            if attempt is None:
                return
            job.observed[attempt] = "Failed"
            first = next((p for p in job.pods.values() if p["status"]["phase"] == "Running"), None)
            if first is not None:
                failed = _failed(first)
                job.pods[failed["metadata"]["name"]] = failed
                self.cluster.put([failed])
                self._settle()
        elif job.kind == "suspend":
            job.suspend = True
        elif job.kind == "delete":
            job.finalizing = True
        self.replay.drain_jobs += job.kind in ("restart", "suspend")
        self.replay.deleted_jobs += job.kind == "delete"
        self.trigger(job, self.clock.now)

    def jobset_created(self, job: Job, attempt: int) -> None:
        job.observed[attempt] = ""
        self.at(self.clock.now + PODS_APPEAR, lambda: self.pods_appear(job, attempt))

    def pods_appear(self, job: Job, attempt: int) -> None:
        if attempt not in job.observed or attempt in job.draining:
            return
        pods = self.factory.pods(job.name, attempt)
        job.pods.update((pod["metadata"]["name"], pod) for pod in pods)
        self.cluster.put(pods)
        self._settle()

    def jobset_deleted(self, job: Job, attempt: int) -> None:
        """Metacontroller deleted the JobSet (background propagation): its pods terminate, then vanish."""
        del job.observed[attempt]
        job.draining.add(attempt)
        when = (EPOCH + timedelta(seconds=self.clock.now)).strftime("%Y-%m-%dT%H:%M:%SZ")
        mine = sorted(name for name, pod in job.pods.items()
                      if pod["metadata"]["labels"].get("nvcre.nvidia.com/attempt") == str(attempt))
        changed = []
        for name in mine:
            pod = job.pods[name]
            if is_active(pod):
                job.pods[name] = _terminating(pod, when)
                changed.append(job.pods[name])
        if changed:
            self.cluster.put(changed)
            self._settle()
        waves = [mine[i::len(DRAIN_WAVES)] for i in range(len(DRAIN_WAVES))]
        for offset, names in zip(DRAIN_WAVES, waves, strict=True):
            self.at(self.clock.now + offset, lambda names=names: self.pods_gone(job, names))
        self.trigger(job, self.clock.now + 0.5)  # the child's deletion is an event Metacontroller sees

    def pods_gone(self, job: Job, names: list[str]) -> None:
        gone = [job.pods.pop(name) for name in names if name in job.pods]
        if gone:
            self.cluster.delete(gone)
            self._settle()

    # -- one sync ----------------------------------------------------------------------------------

    def request(self, job: Job) -> bytes:
        spec = job_spec(workers=self.factory.pods_per_job, max_restarts=1, suspend=job.suspend or None)
        children = [jobset_child(job.name, attempt, namespace=NAMESPACE, state=state)
                    for attempt, state in sorted(job.observed.items())]
        body = job_request(name=job.name, namespace=NAMESPACE, spec=spec, status=job.status, jobsets=children,
                           finalizing=job.finalizing, deleting="2026-01-01T00:00:00Z" if job.finalizing else "")
        return orjson.dumps(body)

    def sync(self, job: Job) -> None:
        hook = "finalize" if job.finalizing else "sync"
        raw = self.request(job)
        now = self.clock.datetime()
        result_a = handle(raw, hook, reader=self.reader_a, clock=lambda: now, settings=self.settings)
        if result_a.status_code != 200:
            raise RuntimeError(f"sync of {job.name} answered {result_a.status_code}: {result_a.body}")
        replay = self.replay
        replay.syncs += 1
        replay.by_hook[hook] = replay.by_hook.get(hook, 0) + 1
        self._note_reads(job, result_a)
        self._note_staleness(job, result_a)
        result_b = None
        if self.reader_b is not None:
            result_b = handle(raw, hook, reader=self.reader_b, clock=lambda: now, settings=self.settings)
            self._compare(result_a, result_b)
        if self.reader_w is not None:
            result_w = handle(raw, hook, reader=self.reader_w, clock=lambda: now, settings=self.settings)
            if result_w.status_code != 200:
                raise RuntimeError(f"watch-mode sync of {job.name} answered {result_w.status_code}: {result_w.body}")
            replay.outage_syncs += self.watch_down
            for read in result_w.reads:
                if read.source == "cache":
                    replay.watch_fills += read.filled
                    replay.watch_answers += not read.filled
            if result_b is not None:
                self._compare_watch(result_w, result_b)
        self.apply(job, result_a.body)

    def _note_reads(self, job: Job, result: HookResult) -> None:
        filled_now = False
        for read in result.reads:
            if read.source == "cache" and read.filled:
                self.filled_at[job.name] = self.clock.now
                filled_now = True
        for read in result.reads:
            if read.source == "cache":
                self._cache_reads.setdefault(job.name, []).append(self.clock.now)
            elif read.method not in ("attempt_jobs", "node_states"):  # the batch Job and node reads list no pods
                self.replay.live_reads += 1
                if read.method == "active_job_pods" and filled_now:
                    self.replay.fill_then_live_same_sync += 1

    def _note_staleness(self, job: Job, result: HookResult) -> None:
        truth = sum(1 for pod in job.pods.values() if is_active(pod))
        reported = result.body["status"]["activePods"]
        error = abs(reported - truth)
        if error:
            self.replay.active_error_syncs += 1
            self.replay.active_error_max = max(self.replay.active_error_max, error)
        filled_at = self.filled_at.get(job.name)
        if filled_at is not None and any(read.source == "cache" for read in result.reads):
            self.replay.stale_age_max = max(self.replay.stale_age_max, self.clock.now - filled_at)

    def _compare(self, a: HookResult, b: HookResult) -> None:
        replay = self.replay
        if a.encoded == b.encoded:
            replay.identical += 1
            return
        da, db = a.decision, b.decision
        assert da is not None and db is not None
        if da.kind in ("proceeded", "created") and db.kind == "held":
            replay.unsafe += 1
        elif da.kind == "held" and db.kind in ("proceeded", "created"):
            replay.cache_held_longer += 1
        elif da.kind == db.kind and a.body["children"] == b.body["children"]:
            replay.differ_active_only += 1
        else:
            replay.other_diff += 1

    def _compare_watch(self, w: HookResult, b: HookResult) -> None:
        replay = self.replay
        if w.encoded == b.encoded:
            replay.watch_identical += 1
            return
        dw, db = w.decision, b.decision
        assert dw is not None and db is not None
        if dw.kind in ("proceeded", "created") and db.kind == "held":
            replay.watch_unsafe += 1
        elif dw.kind == "held" and db.kind in ("proceeded", "created"):
            replay.watch_held_longer += 1
        elif dw.kind == db.kind and w.body["children"] == b.body["children"]:
            pass  # activePods or the message only
        else:
            replay.watch_other += 1

    def apply(self, job: Job, body: dict[str, Any]) -> None:
        """Metacontroller applies the answer: status written, children created or deleted, resync."""
        job.status = body["status"]
        wanted = {int(child["metadata"]["labels"]["nvcre.nvidia.com/attempt"]) for child in body["children"]}
        for attempt in sorted(set(job.observed) - wanted):
            self.jobset_deleted(job, attempt)
        for attempt in sorted(wanted - set(job.observed)):
            self.jobset_created(job, attempt)
            for offset in (1.0, 4.0, 6.0):  # JobSet status changes as its pods start
                self.at(self.clock.now + offset, lambda: self.trigger(job, self.clock.now))
        if body.get("finalized"):
            job.done = True
            return
        if "resyncAfterSeconds" in body:
            self.trigger(job, self.clock.now + float(body["resyncAfterSeconds"]))

    def _close_windows(self) -> None:
        """The floor's first term: (job, TTL window) pairs with a cached read."""
        windows = 0
        for times in self._cache_reads.values():
            start = -math.inf
            for when in times:
                if when >= start + self.ttl:
                    windows += 1
                    start = when
        self.replay.cache_windows = windows


def single_flight(server: FakeKubeServer, factory: PodFactory, threads: int = 20) -> tuple[int, int]:
    """``threads`` concurrent cold reads of one job's pods through one PodCache: (reads, list requests)."""
    cluster = HttpCluster(server)
    server.clear_requests()
    metrics = ReadMetrics(registry=_registry())
    live = cluster.lister("single-flight")
    reader = Reader(PodCache(live, ttl_seconds=60, metrics=metrics), live, metrics=metrics, jobs=SnapshotJobs())
    job = "job-0000"
    server.put_pods(factory.pods(job, 0))
    barrier = threading.Barrier(threads)

    def read() -> None:
        barrier.wait()
        reader.job_pods(NAMESPACE, job)

    workers = [threading.Thread(target=read) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return threads, cluster.counts().get("single-flight", (0, 0))[0]


def _sweep_row(ttl: float, replay: Replay) -> dict[str, Any]:
    n = replay.counts.get("cached", (0, 0))[0]
    return {
        "ttl_s": ttl, "syncs": replay.syncs, "list_requests": n, "req_per_sync": round(n / replay.syncs, 3),
        "floor": replay.cache_windows + replay.live_reads,
        "strict_floor": replay.cache_windows + replay.live_reads - replay.fill_then_live_same_sync,
        "stale_activePods_syncs_pct": round(100.0 * replay.active_error_syncs / replay.syncs, 2),
        "max_activePods_error": replay.active_error_max, "max_cache_age_s": round(replay.stale_age_max, 2),
        "replay_s": round(replay.seconds, 1),
    }


def run(quick: bool = False, *, jobs: int | None = None, sweep_jobs: int | None = None, minutes: float | None = None,
        pods_per_job: int | None = None, ttls: tuple[float, ...] = (2.0, 5.0, 15.0, 30.0)) -> BenchResult:
    """Runs the replay over HTTP (both Readers, TTL 5 s), then the TTL sweep in memory.

    Full size: the HTTP replay has 250 Jobs (a quarter of 1,000: every list over real HTTP to the
    fake server costs about 9 ms per sync for both Readers, 190 s for 1,000 Jobs); the in-memory
    sweep has 1,000 Jobs. Both replay 10 simulated minutes of 64-pod Jobs.
    """
    jobs = jobs or (40 if quick else 250)
    sweep_jobs = sweep_jobs or (40 if quick else 1000)
    minutes = minutes or (4.0 if quick else 10.0)
    pods_per_job = pods_per_job or 64
    result = BenchResult("api_calls", "API calls saved by the cache (simulated clock)")
    factory = PodFactory(pods_per_job)
    started = time.perf_counter()
    for index in range(max(jobs, sweep_jobs)):
        factory.pods(f"job-{index:04d}", 0)
    build_seconds = time.perf_counter() - started
    gc.collect()
    gc.freeze()  # the bench's own pods are long-lived: keep them out of the cyclic collector's way
    try:
        with FakeKubeServer(bookmark_interval=math.inf) as server:
            world = World(jobs=jobs, minutes=minutes, ttl=5.0, cluster=HttpCluster(server), factory=factory,
                          compare=True, watch=True)
            try:
                replay = world.run()
            finally:
                world.close()
            sf_reads, sf_requests = single_flight(server, factory)
        check = World(jobs=jobs, minutes=minutes, ttl=5.0, cluster=MemoryCluster(), factory=factory,
                      compare=False).run()
        sweep = []
        for ttl in ttls:
            world = World(jobs=sweep_jobs, minutes=minutes, ttl=ttl, cluster=MemoryCluster(), factory=factory,
                          compare=False)
            sweep.append(_sweep_row(ttl, world.run()))
    finally:
        gc.unfreeze()
    cached_n, cached_b = replay.counts.get("cached", (0, 0))
    live_n, live_b = replay.counts.get("live", (0, 0))
    watch_reads_n, watch_reads_b = replay.counts.get("watch", (0, 0))  # the watch-mode Reader: fills, live checks
    stream_n, stream_b = replay.counts.get("watchstream", (0, 0))  # the watch's own lists and nudges
    stream_w_n, stream_w_b = replay.counts.get("watchstream-watch", (0, 0))  # watch requests
    watch_n, watch_b = watch_reads_n + stream_n, watch_reads_b + stream_b + stream_w_b
    watch_live_checks = watch_reads_n - replay.watch_fills
    watch_cache_lists = replay.watch_fills + stream_n
    floor = replay.cache_windows + replay.live_reads
    strict = floor - replay.fill_then_live_same_sync
    syncs = replay.syncs
    result.scale = {
        "http_jobs": jobs, "sweep_jobs": sweep_jobs, "pods_per_job": pods_per_job, "http_pods": jobs * pods_per_job,
        "sweep_pods": sweep_jobs * pods_per_job, "simulated_minutes": minutes, "ttl_seconds": 5.0, "syncs": syncs,
        "syncs_by_hook": replay.by_hook, "drain_jobs": replay.drain_jobs, "deleted_jobs": replay.deleted_jobs,
        "transport": "HTTP to tests.fakekube.FakeKubeServer via LiveClient (sweep: in-memory lister)",
        "build_pods_seconds": round(build_seconds, 2), "http_replay_seconds": round(replay.seconds, 2),
        "scaled_down": "HTTP replay: jobs 1000 -> " + str(jobs) if jobs < 1000 else False,
    }
    result.figures += [
        Figure("cached Reader: list requests per sync", cached_n / syncs, "req/sync", live_n / syncs,
               "live-only Reader"),
        Figure("cached Reader: response bytes per sync", cached_b / syncs, "B/sync", live_b / syncs,
               "live-only Reader"),
        Figure("cached Reader: list requests vs TTL floor", cached_n, "requests", floor,
               "floor = (job, TTL window) pairs + live checks"),
        Figure("cached Reader: list requests vs strict floor", cached_n, "requests", strict,
               "floor without a live re-list right after a fill", target="<= 1.05 x floor",
               met=cached_n <= 1.05 * strict,
               note=f"{replay.fill_then_live_same_sync} syncs listed the same pods twice: a cache fill, then "
                    "active_job_pods' live check"),
        Figure("decisions identical to live-only", replay.identical / syncs, "of syncs", 1.0, "all syncs",
               note=f"{replay.differ_active_only} differ only in activePods/message (stale cache), "
                    f"{replay.cache_held_longer} barrier held longer by the cache, {replay.unsafe} unsafe, "
                    f"{replay.other_diff} other"),
        Figure("watch Reader: pod lists per sync for the cache (fills, the watch's lists and nudges)",
               watch_cache_lists / syncs, "lists/sync", cached_n / syncs, "TTL Reader, all lists",
               target="<= 0.02 lists/sync", met=watch_cache_lists / syncs <= 0.02,
               note=f"{replay.watch_fills} fills ({replay.outage_syncs} syncs during the {OUTAGE:g} s watch "
                    f"outage), {stream_n} lists of the watch itself ({replay.watch_nudges} of them one-pod nudges); "
                    f"the seed's live checks ({watch_live_checks}) are the same in every mode"),
        Figure("watch Reader: list requests per sync, live checks included", watch_n / syncs, "req/sync",
               live_n / syncs, "live-only Reader",
               note=f"TTL Reader {cached_n / syncs:.3f} req/sync; plus {stream_w_n} watch requests"),
        Figure("watch Reader: response bytes per sync (watch stream included)", watch_b / syncs, "B/sync",
               cached_b / syncs, "TTL Reader"),
        Figure("watch Reader: decisions identical to live-only", replay.watch_identical / syncs, "of syncs", 1.0,
               "all syncs", target="0 unsafe", met=replay.watch_unsafe == 0,
               note=f"{replay.watch_unsafe} unsafe, {replay.watch_held_longer} held longer, "
                    f"{replay.watch_other} other"),
        Figure("concurrent cold reads of one job: list requests", sf_requests, "requests", 1, "one fill",
               target="== 1 (single flight)", met=sf_requests == 1, note=f"{sf_reads} threads"),
    ]
    result.tables["ttl5_http"] = [{
        "reader": "cached (TTL 5 s)", "list_requests": cached_n, "bytes": cached_b,
        "req_per_sync": round(cached_n / syncs, 3), "bytes_per_sync": round(cached_b / syncs),
    }, {
        "reader": "live-only", "list_requests": live_n, "bytes": live_b,
        "req_per_sync": round(live_n / syncs, 3), "bytes_per_sync": round(live_b / syncs),
    }, {
        "reader": "watch (TTL 5 s bound)", "list_requests": watch_n, "bytes": watch_b,
        "req_per_sync": round(watch_n / syncs, 3), "bytes_per_sync": round(watch_b / syncs),
    }, {
        "reader": "floor", "list_requests": floor, "bytes": None, "req_per_sync": round(floor / syncs, 3),
        "bytes_per_sync": None,
    }, {
        "reader": "strict floor", "list_requests": strict, "bytes": None, "req_per_sync": round(strict / syncs, 3),
        "bytes_per_sync": None,
    }]
    result.tables["floor_terms"] = [{
        "cache_windows": replay.cache_windows, "live_checks": replay.live_reads,
        "live_checks_right_after_a_fill_in_the_same_sync": replay.fill_then_live_same_sync,
    }]
    result.tables["watch_mode"] = [{
        "syncs": syncs, "cache_lists": watch_cache_lists, "cache_lists_per_sync": round(watch_cache_lists / syncs, 4),
        "fills": replay.watch_fills, "fills_during_outage_syncs": replay.outage_syncs,
        "watch_lists": stream_n - replay.watch_nudges, "nudges": replay.watch_nudges,
        "watch_requests": stream_w_n, "answered_from_cache": replay.watch_answers, "live_checks": watch_live_checks,
        "identical_to_live": replay.watch_identical, "unsafe": replay.watch_unsafe,
    }]
    result.tables["decisions"] = [{
        "identical": replay.identical, "activePods_or_message_only": replay.differ_active_only,
        "cache_held_barrier_longer": replay.cache_held_longer, "unsafe": replay.unsafe, "other": replay.other_diff,
    }]
    result.tables["ttl_sweep_in_memory"] = [*sweep, {
        "ttl_s": f"live-only ({jobs} jobs, HTTP)", "syncs": syncs, "list_requests": live_n,
        "req_per_sync": round(live_n / syncs, 3), "floor": None, "strict_floor": None,
        "stale_activePods_syncs_pct": 0.0, "max_activePods_error": 0, "max_cache_age_s": 0.0, "replay_s": None,
    }]
    check_n = check.counts.get("cached", (0, 0))[0]
    result.notes.append(f"cross-check: the in-memory replay of the same {jobs} Jobs at TTL 5 s sent {check_n} "
                        f"lists, the HTTP replay {cached_n} list requests")
    result.notes.append(f"stale activePods at TTL 5 s over HTTP: {replay.active_error_syncs} of {syncs} syncs "
                        f"differ from the truth, at most by {replay.active_error_max} pods; the cached data "
                        f"behind a status was at most {replay.stale_age_max:.1f} s old")
    return result
