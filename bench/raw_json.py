"""Benchmark 3: raw JSON (our LiveClient) versus the kubernetes client's model deserialization.

Lists realistic pods (``bench.pods``) of one job from the wire-level fake API server, paged by 500,
through ``podread.LiveClient`` (``_preload_content=False`` + orjson) and through
``CoreV1Api.list_namespaced_pod`` with its default ``_preload_content=True`` (pydantic models in
kubernetes 37), and measures time and retained memory (tracemalloc). Then the levers on the raw
path: json versus orjson, pausing or freezing the cyclic GC during a large parse (with an empty
heap and with a large long-lived heap, as a warm cache has), and what trimming retains.
"""

from __future__ import annotations

import gc
import json
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import orjson
from kubernetes import client as k8s

from bench.common import BenchResult, Figure, best_of, gc_paused
from bench.pods import realistic_job_pods
from podread import JOB_LABEL, LiveClient, PodSelector, ReadMetrics
from tests.fakekube import FakeKubeServer

NAMESPACE = "bench"
JOB = "big"


def retained_bytes(build: Callable[[], Any]) -> tuple[int, Any]:
    """Bytes still allocated (tracemalloc) after ``build()`` returned, keeping its result; and the result."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = build()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return after - before, kept


def model_list(api: k8s.CoreV1Api, selector: str) -> list[Any]:
    """Every pod as a ``V1Pod`` model, paged by 500 like LiveClient."""
    items: list[Any] = []
    token = None
    while True:
        kwargs: dict[str, Any] = {"label_selector": selector, "limit": 500, "_request_timeout": 60}
        if token:
            kwargs["_continue"] = token
        page = api.list_namespaced_pod(NAMESPACE, **kwargs)
        items.extend(page.items)
        token = page.metadata._continue
        if not token:
            return items


def raw_pages(api: k8s.CoreV1Api, selector: str) -> list[bytes]:
    """The raw PodList pages, as bytes."""
    pages: list[bytes] = []
    token = None
    while True:
        kwargs: dict[str, Any] = {"label_selector": selector, "limit": 500, "_preload_content": False}
        if token:
            kwargs["_continue"] = token
        raw = api.list_namespaced_pod(NAMESPACE, **kwargs).data
        pages.append(raw)
        token = orjson.loads(raw)["metadata"].get("continue")
        if not token:
            return pages


def _strip(pod: dict[str, Any]) -> dict[str, Any]:
    """A shallow copy of ``pod`` without ``metadata.managedFields`` (what the cache kept before it
    kept slim pods)."""
    metadata = pod.get("metadata") or {}
    return {**pod, "metadata": {key: value for key, value in metadata.items() if key != "managedFields"}}


def _slim(pod: dict[str, Any]) -> dict[str, Any]:
    """What the Reader's callers read today: identity, labels, deletion, node and phase."""
    metadata = pod.get("metadata") or {}
    return {
        "metadata": {key: metadata[key] for key in ("name", "namespace", "uid", "labels", "deletionTimestamp")
                     if key in metadata},
        "spec": {"nodeName": (pod.get("spec") or {}).get("nodeName", "")},
        "status": {"phase": (pod.get("status") or {}).get("phase")},
    }


def _big_heap(objects: int) -> list[Any]:
    """A long-lived heap of about ``objects`` GC-tracked containers (as a warm cache of many pods)."""
    return [{"metadata": {"labels": {"a": str(i)}}, "spec": [i]} for i in range(objects // 3)]


def run(quick: bool = False, *, pods: int | None = None, memory_pods: int | None = None) -> BenchResult:
    """Times and weighs the raw and the model path, then the levers."""
    count = pods or (300 if quick else 5000)
    memory_count = memory_pods or (300 if quick else 1000)
    repeat = 1 if quick else 3
    result = BenchResult("raw_json", "Raw JSON (LiveClient) versus client models")
    built = realistic_job_pods(JOB, count, NAMESPACE)
    selector = PodSelector(namespace=NAMESPACE, labels={JOB_LABEL: JOB})
    with FakeKubeServer() as server:
        server.put_pods(built)
        del built
        api_client = server.api_client(timeout=120, retries=False)
        live = LiveClient(api_client, timeout_seconds=60, metrics=ReadMetrics(registry=_registry()))
        core = k8s.CoreV1Api(api_client)
        label = selector.label_selector()
        pages = raw_pages(core, label)
        body_bytes = sum(len(page) for page in pages)
        live.list_pods(selector)  # warm the connection pool
        raw_best, raw_median = best_of(lambda: live.list_pods(selector), repeat)
        model_best, _ = best_of(lambda: model_list(core, label), 1)

        # memory on a smaller list (tracemalloc makes the model path several times slower)
        server.set_pods(realistic_job_pods(JOB, memory_count, NAMESPACE))
        raw_mem, raw_kept = retained_bytes(lambda: live.list_pods(selector))
        model_mem, _ = retained_bytes(lambda: model_list(core, label))
        pod_bytes = len(orjson.dumps(raw_kept[0]))
        stripped_mem, _ = retained_bytes(lambda: [_strip(pod) for pod in live.list_pods(selector)])
        slim_mem, _ = retained_bytes(lambda: [_slim(pod) for pod in live.list_pods(selector)])
        del raw_kept

        # levers: json vs orjson on the same bytes; the cyclic GC during a large list
        parse_rows = []
        for label_gc, paused_gc in (("on", False), ("paused", True)):
            for parser_name, parse in (("json", json.loads), ("orjson", orjson.loads)):
                def parse_all(parse: Callable[[bytes], Any] = parse, paused_gc: bool = paused_gc) -> None:
                    if paused_gc:
                        with gc_paused():
                            [parse(page) for page in pages]
                    else:
                        [parse(page) for page in pages]

                gc.collect()
                seconds, _ = best_of(parse_all, 2)
                parse_rows.append({"parser": parser_name, "gc": label_gc, "pods": count,
                                   "body_mb": round(body_bytes / 1e6, 1), "best_ms": round(seconds * 1000, 1)})
        parse_ms = {(row["parser"], row["gc"]): row["best_ms"] for row in parse_rows}

        def paused() -> None:
            with gc_paused():
                live.list_pods(selector)

        server.set_pods(realistic_job_pods(JOB, count, NAMESPACE))
        live.list_pods(selector)
        gc_rows = []
        for heap_name, heap_objects in (("empty heap", 0), ("large heap", 100_000 if quick else 1_000_000)):
            heap = _big_heap(heap_objects)
            gc.collect()
            on, _ = best_of(lambda: live.list_pods(selector), 2)
            off, _ = best_of(paused, 2)
            gc.freeze()
            frozen, _ = best_of(lambda: live.list_pods(selector), 2)
            gc.unfreeze()
            gc_rows.append({"heap": heap_name, "tracked_objects": len(gc.get_objects()),
                            "gc_on_ms": round(on * 1000, 1), "gc_paused_ms": round(off * 1000, 1),
                            "gc_frozen_heap_ms": round(frozen * 1000, 1),
                            "paused_saves_pct": round(100 * (1 - off / on), 1),
                            "frozen_saves_pct": round(100 * (1 - frozen / on), 1)})
            del heap
    result.scale = {"pods_timed": count, "pods_memory": memory_count, "page_size": 500,
                    "pod_json_bytes": pod_bytes, "list_body_bytes": body_bytes, "repeat": repeat,
                    "model_repeat": 1, "kubernetes_client": k8s.ApiClient().user_agent}
    result.figures += [
        Figure(f"list {count} pods: model path time / raw path time", model_best / raw_best, "x",
               None, "", target=">= 6x faster raw", met=model_best / raw_best >= 6,
               note=f"raw {raw_best * 1000:.0f} ms (median {raw_median * 1000:.0f}), "
                    f"models {model_best * 1000:.0f} ms"),
        Figure(f"retained memory of {memory_count} pods: raw dicts", raw_mem, "B", model_mem, "client models",
               target="<= 0.40 x models", met=raw_mem <= 0.40 * model_mem),
        Figure("retained memory: managedFields stripped (what PodCache keeps)", stripped_mem, "B", raw_mem,
               "raw dicts"),
        Figure("retained memory: slim projection (name, labels, node, phase...)", slim_mem, "B", raw_mem,
               "raw dicts"),
        Figure(f"parse {count} pods' body: json.loads, GC on", parse_ms[("json", "on")], "ms",
               parse_ms[("orjson", "on")], "orjson.loads, GC on", note="how much orjson pays"),
        Figure(f"parse {count} pods' body: orjson.loads, GC paused", parse_ms[("orjson", "paused")], "ms",
               parse_ms[("orjson", "on")], "orjson.loads, GC on", note="how much pausing the cyclic GC pays"),
        Figure(f"list {count} pods: LiveClient with the GC paused", gc_rows[0]["gc_paused_ms"], "ms",
               gc_rows[0]["gc_on_ms"], "LiveClient as is",
               note=f"models / raw with GC paused = {model_best * 1000 / gc_rows[0]['gc_paused_ms']:.1f}x"),
    ]
    result.tables["parse"] = parse_rows
    result.tables["time"] = [
        {"path": "LiveClient (raw, orjson)", "pods": count, "best_ms": round(raw_best * 1000, 1),
         "ms_per_1000_pods": round(raw_best * 1e6 / count, 1)},
        {"path": "CoreV1Api models", "pods": count, "best_ms": round(model_best * 1000, 1),
         "ms_per_1000_pods": round(model_best * 1e6 / count, 1)},
    ]
    result.tables["memory"] = [
        {"form": form, "pods": memory_count, "retained_bytes": value, "bytes_per_pod": round(value / memory_count),
         "x_json_size": round(value / memory_count / pod_bytes, 2)}
        for form, value in (("client models", model_mem), ("raw dicts", raw_mem),
                            ("raw, managedFields stripped", stripped_mem), ("slim projection", slim_mem))
    ]
    result.tables["gc"] = gc_rows
    result.notes.append(f"memory measured on {memory_count} pods (tracemalloc slows the model path several "
                        f"fold); time on {count} pods; the model path timed once")
    return result


def _registry() -> Any:
    from prometheus_client import CollectorRegistry

    return CollectorRegistry()


if __name__ == "__main__":  # pragma: no cover
    started = time.perf_counter()
    print(run(quick=True).as_dict(), time.perf_counter() - started)
