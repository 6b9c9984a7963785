"""Benchmark 4: what the pod cache retains per pod, and how its reads and fills grow.

The cache's source here is an in-memory lister that parses a job's PodList JSON on every list
(fresh dicts each time, as ``LiveClient`` hands them over, without the HTTP round trip, which
benchmark 3 measures). The clock is fixed, so nothing expires while we measure.

- Retained bytes per cached pod (tracemalloc), for realistic pods (``bench.pods``): what the cache
  keeps (slim, ``podread.slim``) against the parsed pods and the JSON size.
- The watch-fed store (``NVCRE_CACHE_MODE=watch``) holding every NVCRE pod of a cluster: 64,000
  realistic pods (1,000 Jobs of 64) decoded page by page, made slim and indexed by job and node as
  the watch's list does: retained bytes per pod (target <= 3 KB) and in all (target < 250 MB per
  worker), and the compact JSON size the ``podread_watch_bytes`` metric reports.
- Departed pods (issue 34): a store holding ``podread.watch.MAX_DEPARTED`` realistic workers seen
  deleted after a preemption (``DisruptionTarget``, a container killed with 137), as
  ``WatchedPods.departed`` keeps them (``podread.slim.evidence``): retained bytes per pod and in all,
  and the same with a 4 KiB termination message per pod (the kubelet's bound per container). The
  8,000-pod figures do not move: nothing is kept until a failing pod is deleted.
- Growth: the cost of one cached read (``Reader.job_pods`` on a warm entry) and of one fill
  (a miss: list, strip, store) from 10 to 10,000 pods per job (100 other jobs of 64 pods cached),
  and from 10 to 1,000 jobs of 64 pods. Both should grow with the pods of the job read only.
"""

from __future__ import annotations

import gc
import statistics
import time
from typing import Any

import orjson

from bench.common import BenchResult, Figure, per_call
from bench.pods import realistic_job_pods
from bench.raw_json import retained_bytes
from podread import JOB_LABEL, PodCache, PodSelector, Reader, ReadMetrics
from podread.slim import evidence, slim
from podread.watch import MAX_DEPARTED, WatchedPods
from tests.fakekube import make_job_pods

NAMESPACE = "bench"


class RawLister:
    """A PodLister over pre-serialized PodList items per job: every list parses the JSON anew."""

    def __init__(self) -> None:
        self.raw: dict[str, bytes] = {}
        self.lists = 0

    def add(self, job: str, pods: list[dict[str, Any]]) -> None:
        self.raw[job] = orjson.dumps(pods)

    def list_pods(self, selector: PodSelector) -> list[dict[str, Any]]:
        self.lists += 1
        return orjson.loads(self.raw.get(selector.labels.get(JOB_LABEL, ""), b"[]"))


def _name(index: int) -> str:
    return f"job-{index:06d}"


def _template(count: int) -> bytes:
    """``count`` lean pods of job ``job-000000`` as JSON; other jobs are made by renaming the bytes."""
    return orjson.dumps(make_job_pods(_name(0), count, NAMESPACE))


def _reader(lister: RawLister) -> tuple[Reader, PodCache]:
    metrics = ReadMetrics(registry=_registry())
    cache = PodCache(lister, ttl_seconds=3600, max_entries=100_000, clock=lambda: 0.0, metrics=metrics)
    return Reader(cache, None, metrics=metrics), cache


def _registry() -> Any:
    from prometheus_client import CollectorRegistry

    return CollectorRegistry()


def _fill_seconds(reader: Reader, jobs: list[str]) -> float:
    """Median seconds of one fill (a first read) over ``jobs``."""
    times = []
    for job in jobs:
        started = time.perf_counter()
        reader.job_pods(NAMESPACE, job)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def growth_row(pods_per_job: int, jobs: int, probe_jobs: int, *, other_pods: int = 64) -> dict[str, Any]:
    """One row: a cache holding ``jobs`` jobs (the first ``probe_jobs`` have ``pods_per_job`` pods, the
    rest ``other_pods``); the hit and fill cost of a job of ``pods_per_job`` pods."""
    lister = RawLister()
    probe_raw = _template(pods_per_job)
    other_raw = probe_raw if other_pods == pods_per_job else _template(other_pods)
    old = _name(0).encode()
    for index in range(jobs + probe_jobs):
        raw = probe_raw if index < probe_jobs or index >= jobs else other_raw
        lister.raw[_name(index)] = raw.replace(old, _name(index).encode())
    reader, cache = _reader(lister)
    for index in range(probe_jobs, jobs):
        reader.job_pods(NAMESPACE, _name(index))
    gc.collect()
    fill = _fill_seconds(reader, [_name(i) for i in range(probe_jobs)]
                         + [_name(i) for i in range(jobs, jobs + probe_jobs)])
    hit = per_call(lambda: reader.job_pods(NAMESPACE, _name(0)), min_seconds=0.1)
    cached_pods = sum(len(v) for v in cache._entries.values())
    return {"pods_per_job": pods_per_job, "jobs": len(cache), "cached_pods": cached_pods,
            "hit_us": round(hit * 1e6, 1), "fill_ms": round(fill * 1000, 3),
            "hit_ns_per_pod_of_job": round(hit * 1e9 / pods_per_job, 1)}


def watched_store(jobs: int, pods_per_job: int = 64) -> tuple[int, int, int, WatchedPods]:
    """(retained bytes, pods, JSON bytes of the slim pods, the store) of a WatchedPods holding
    ``jobs`` Jobs of realistic pods, filled as the watch's list fills it (each page decoded, made
    slim, then stored)."""
    template = orjson.dumps(realistic_job_pods(_name(0), pods_per_job, NAMESPACE))
    old = _name(0).encode()

    def fill() -> WatchedPods:
        store = WatchedPods(None, ttl_seconds=5.0, clock=lambda: 0.0, metrics=ReadMetrics(registry=_registry()))
        pods = [slim(pod) for index in range(jobs)
                for pod in orjson.loads(template.replace(old, _name(index).encode()))]
        store.replace(pods, "1")
        return store

    retained, store = retained_bytes(fill)
    return retained, len(store), store.bytes, store


def _preempted(pod: dict[str, Any], index: int, message: str) -> dict[str, Any]:
    """``pod`` as the DELETED event of its preemption shows it."""
    pod["metadata"]["resourceVersion"] = str(10 + index)
    pod["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] = f"{_name(index // 64)}-0"
    status = pod.setdefault("status", {})
    status["phase"] = "Failed"
    status.setdefault("conditions", []).append(
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
         "message": "Preempted by pod 5f0c0a5e-0d4e-4b41-9a77-2c1e0f1e6a11 on node kwok-node-3",
         "lastTransitionTime": "2026-12-06T12:00:00Z"})
    for number, container in enumerate(status.get("containerStatuses") or ()):
        text = f"{index:06d}{number}{message}"[:len(message)]  # each container's own string, as decoded
        container["state"] = {"terminated": {"exitCode": 137, "reason": "Error", "message": text,
                                             "finishedAt": "2026-12-06T12:00:01Z", "containerID": "containerd://ab"}}
    return pod


def departed_store(count: int, message: str = "") -> tuple[int, int]:
    """(retained bytes, departed pods) of a WatchedPods that saw ``count`` realistic preempted workers
    deleted (``count`` at most ``MAX_DEPARTED`` are kept), each terminated with ``message``."""
    raw = orjson.dumps(realistic_job_pods(_name(0), 64, NAMESPACE))

    def fill() -> WatchedPods:
        store = WatchedPods(None, ttl_seconds=5.0, clock=lambda: 0.0, metrics=ReadMetrics(registry=_registry()))
        store.replace([], "1")
        for index in range(count):
            pod = _preempted(orjson.loads(raw)[index % 64], index, message)
            pod["metadata"]["name"] = f"{pod['metadata']['name']}-{index}"
            store.apply("DELETED", slim(pod), last_seen=evidence(pod))
        return store

    retained, store = retained_bytes(fill)
    return retained, store.departed_count()


def run(quick: bool = False) -> BenchResult:
    """Retained bytes per cached pod, then the two growth tables."""
    result = BenchResult("cache_memory", "Cache memory and growth")
    jobs = 3 if quick else 20
    lister = RawLister()
    for index in range(jobs):
        lister.add(_name(index), realistic_job_pods(_name(index), 64, NAMESPACE))
    pods = jobs * 64
    json_bytes = sum(len(raw) for raw in lister.raw.values())

    def fill() -> PodCache:
        reader, cache = _reader(lister)
        for index in range(jobs):
            reader.job_pods(NAMESPACE, _name(index))
        return cache

    cached, cache = retained_bytes(fill)
    parsed, _ = retained_bytes(lambda: [lister.list_pods(PodSelector(labels={JOB_LABEL: _name(i)}))
                                        for i in range(jobs)])
    del cache
    watched_jobs = 3 if quick else 1000
    watched, watched_pods, watched_json, store = watched_store(watched_jobs)
    del store
    per_pod = watched / watched_pods
    result.figures += [
        Figure("retained bytes per cached pod (TTL entries, slim)", cached / pods, "B/pod", parsed / pods,
               "parsed pod, whole", note=f"JSON {json_bytes / pods:.0f} B/pod; {pods} realistic pods"),
        Figure("retained bytes per watched pod (slim, indexed by job and node)", per_pod, "B/pod", parsed / pods,
               "parsed pod, whole", target="<= 3 KB/pod", met=per_pod <= 3 * 1024,
               note=f"{watched_pods} realistic pods; their slim JSON {watched_json / watched_pods:.0f} B/pod "
                    f"(podread_watch_bytes)"),
        Figure(f"retained by the watch-fed store, {watched_pods:,} pods", watched / 1e6, "MB", 250.0,
               "250 MB per worker", target="< 250 MB for 64,000 pods" if not quick else "",
               met=(watched / 1e6 < 250.0) if not quick else None,
               note=f"64,000 pods at this rate: {per_pod * 64_000 / 1e6:.0f} MB"),
    ]
    result.tables["watched_store"] = [{
        "pods": watched_pods, "jobs": watched_jobs, "retained_mb": round(watched / 1e6, 1),
        "bytes_per_pod": round(per_pod), "slim_json_bytes_per_pod": round(watched_json / watched_pods),
        "x_slim_json": round(watched / max(watched_json, 1), 2)}]
    departed_count = 200 if quick else MAX_DEPARTED
    departed, kept = departed_store(departed_count)
    departed_long, _ = departed_store(departed_count, "x" * 4096)
    result.figures += [
        Figure(f"retained by the departed pods, {kept:,} (MAX_DEPARTED) preempted workers", departed / 1e6, "MB",
               watched / 1e6, f"the store of {watched_pods:,} pods",
               note=f"{departed / kept:.0f} B/pod; with a 4 KiB termination message each "
                    f"{departed_long / kept:.0f} B/pod, {departed_long / 1e6:.1f} MB"),
    ]
    result.tables["departed"] = [{"pods": kept, "retained_mb": round(departed / 1e6, 2),
                                  "bytes_per_pod": round(departed / kept),
                                  "bytes_per_pod_4k_message": round(departed_long / kept)}]
    sizes = (10, 100, 1000) if quick else (10, 100, 1000, 10_000)
    by_pods = [growth_row(size, 100 if not quick else 10, 3 if size >= 10_000 else 5) for size in sizes]
    job_counts = (10, 100) if quick else (10, 100, 1000)
    by_jobs = [growth_row(64, count, 5, other_pods=64) for count in job_counts]
    result.tables["by_pods_per_job"] = by_pods
    result.tables["by_jobs"] = by_jobs
    small, large = by_pods[0], by_pods[-1]
    few, many = by_jobs[0], by_jobs[-1]
    result.figures += [
        Figure(f"cached read, {large['pods_per_job']} vs {small['pods_per_job']} pods per job",
               large["hit_us"], "us", small["hit_us"], f"{small['pods_per_job']} pods",
               note=f"pods ratio {large['pods_per_job'] / small['pods_per_job']:.0f}x: grows with the job's pods"),
        Figure(f"fill, {large['pods_per_job']} vs {small['pods_per_job']} pods per job", large["fill_ms"], "ms",
               small["fill_ms"], f"{small['pods_per_job']} pods"),
        Figure(f"cached read, {many['jobs']} vs {few['jobs']} jobs cached (64 pods each)", many["hit_us"], "us",
               few["hit_us"], f"{few['jobs']} jobs", target="~1x (independent of other jobs)",
               met=many["hit_us"] <= 1.5 * few["hit_us"]),
        Figure(f"fill, {many['jobs']} vs {few['jobs']} jobs cached (64 pods each)", many["fill_ms"], "ms",
               few["fill_ms"], f"{few['jobs']} jobs", target="~1x (independent of other jobs)",
               met=many["fill_ms"] <= 1.5 * few["fill_ms"]),
    ]
    result.scale = {"memory_pods": pods, "memory_jobs": jobs, "pod_sizes": list(sizes), "job_counts": list(job_counts),
                    "growth_pods": "tests.fakekube.make_job_pods (lean, ~2.3 KB JSON)",
                    "memory_pods_kind": "bench.pods.realistic_pod (~8 KB JSON)"}
    result.notes.append("the source parses JSON in memory (no HTTP): fill times are parse + strip + store")
    return result
