"""Prometheus metrics of Pod reads: every read counted by method, source and outcome, and timed."""

from __future__ import annotations

import threading

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

READ_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ReadMetrics:
    """The metrics one Reader and its cache report, on ``registry`` (the process registry by default).

    - ``podread_reads_total{method,source,outcome}``: Reader reads; outcome is ``ok`` or ``error``.
    - ``podread_read_duration_seconds{method,source}``: how long each read took.
    - ``podread_read_errors_total{method,source,code}``: failed reads by the error's class
      (``podread.errors.CAUSES``: ``timeout``, ``http-503``, ``not-a-pod-list``, ``deadline``, ...).
    - ``podread_cache_lookups_total{index,result}``: cache lookups; result is ``hit``, ``miss`` (this
      lookup filled the entry) or ``shared`` (it waited for a fill another thread had started).
    - ``podread_cache_fills_total{index,outcome}``: lists the cache sent to fill an entry.
    - ``podread_api_requests_total{scope,outcome}``: HTTP list requests the live client sent (pages).
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = REGISTRY if registry is None else registry
        self.reads = Counter(
            "podread_reads_total", "Pod reads by Reader method, source and outcome.",
            ["method", "source", "outcome"], registry=registry,
        )
        self.read_seconds = Histogram(
            "podread_read_duration_seconds", "Duration of Pod reads by Reader method and source.",
            ["method", "source"], buckets=READ_BUCKETS, registry=registry,
        )
        self.read_errors = Counter(
            "podread_read_errors_total", "Failed Pod reads by Reader method, source and error class.",
            ["method", "source", "code"], registry=registry,
        )
        self.cache_lookups = Counter(
            "podread_cache_lookups_total", "Pod cache lookups by index and result (hit, miss, shared).",
            ["index", "result"], registry=registry,
        )
        self.cache_fills = Counter(
            "podread_cache_fills_total", "Lists sent to fill the Pod cache, by index and outcome.",
            ["index", "outcome"], registry=registry,
        )
        self.api_requests = Counter(
            "podread_api_requests_total", "Pod list requests (pages) sent to the API server.",
            ["scope", "outcome"], registry=registry,
        )


_default: ReadMetrics | None = None
_default_lock = threading.Lock()


def default_metrics() -> ReadMetrics:
    """The process-wide ReadMetrics on prometheus_client's default registry, created on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = ReadMetrics()
        return _default
