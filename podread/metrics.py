"""Prometheus metrics of Pod reads: every read counted by method, source and outcome, and timed."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

M = TypeVar("M", Counter, Gauge, Histogram)

READ_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Bound(Generic[M]):
    """The children of one labelled metric, each bound once: ``bound(*values)`` is
    ``metric.labels(*values)``, looked up in a dict after the first call for those values.

    ``labels()`` checks its arguments, takes the metric's lock and builds a key on every call: on
    the hot path of every read that was a third of the Reader's own bookkeeping. A child is the
    same object ``labels()`` returns (prometheus_client keeps it until ``remove``/``clear``, which
    nothing here calls), so counting through it is counting through the metric; the label values
    a caller passes are the metric's own (bounded) label values, so this holds no more children than
    the metric does. Thread-safe: a race binds the same child twice, and keeps one.
    """

    def __init__(self, metric: M) -> None:
        self.metric = metric
        self._children: dict[tuple[str, ...], M] = {}

    def __call__(self, *values: str) -> M:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self.metric.labels(*values)
        return child


class ReadMetrics:
    """The metrics one Reader and its cache report, on ``registry`` (the process registry by default).

    - ``podread_reads_total{method,source,outcome}``: Reader reads; outcome is ``ok`` or ``error``.
    - ``podread_read_duration_seconds{method,source}``: how long each read took.
    - ``podread_read_errors_total{method,source,code}``: failed reads by the error's class
      (``podread.errors.CAUSES``: ``timeout``, ``http-503``, ``not-a-pod-list``, ``deadline``, ...).
    - ``podread_cache_lookups_total{index,result}``: cache lookups; result is ``watch`` (answered
      from the watch-fed pods, confirmed within the TTL), ``hit``, ``miss`` (this lookup filled the
      entry) or ``shared`` (it waited for a fill another thread had started).
    - ``podread_cache_fills_total{index,outcome}``: lists the cache sent to fill an entry.
    - ``podread_api_requests_total{scope,outcome}``: HTTP pod list requests the live client sent (pages).
    - ``podread_job_api_requests_total{scope,outcome}``: HTTP batch Job list requests (pages) the
      Job client sent (``Reader.attempt_jobs``).
    - ``podread_node_cache_lookups_total{result}``: names ``Reader.node_states`` looked up in its
      ``NodeCache`` (``podread.nodes``): ``hit`` (answered from it), ``miss`` (read by a GET: none
      kept, expired, or a state that would license a force delete, which is never answered from it).
    - ``podread_node_reads_total{source}``: names ``Reader.node_states`` answered, by where the
      state came from: ``watch`` (the Node watch: a healthy node, confirmed within its staleness
      bound), ``cache`` (the ``NodeCache``) or ``get`` (a GET sent in the call).

    The Node watch (``NVCRE_NODE_WATCH``, ``podread.nodewatch``):
    - ``podread_node_watch_lists_total{outcome}``, ``podread_node_watch_restarts_total{reason}``
      (``ended``, ``short``, ``expired``, ``error``), ``podread_node_watch_events_total{type,outcome}``,
      ``podread_node_watch_nudges_total{outcome}`` as for the pod watch below;
      ``podread_node_watch_requests_total{scope,outcome}``: its list requests (pages, nudges);
      ``podread_node_watch_nodes``: the Nodes it holds.

    The Reader's own metrics (``podread_reads_total`` and the two below it) count every Reader
    read by method: pod reads, and the batch Job read ``attempt_jobs`` and the Node read
    ``node_states`` that the drain barrier makes beside them. ``observe_read`` counts one such read
    (its children bound once, ``Bound``); ``lookup`` and ``fill`` are the cache's bound children.

    The watch (``NVCRE_CACHE_MODE=watch``), by ``scope`` (a namespace, or ``all-namespaces``):
    - ``podread_watch_restarts_total{scope,reason}``: watch requests that ended: ``ended`` (the server
      closed it at its ``timeoutSeconds``, as asked), ``short`` (closed in under a second with no
      event: resumed after a back-off, ``podread.watch.SHORT_WATCH_SECONDS``), ``expired`` (410 Gone:
      the pods are listed again), ``error`` (an HTTP or transport error, or an ERROR event: resumed
      after a back-off).
    - ``podread_watch_lists_total{scope,outcome}``: the lists that (re)start the watch.
    - ``podread_watch_events_total{scope,type,outcome}``: events received; outcome ``applied`` or
      ``ignored`` (a duplicate, or older than the pod already held).
    - ``podread_watch_nudges_total{scope,outcome}``: nudges of a quiet watch: ``by-peer`` (confirmed
      by a list the Reader's live client had just sent, no request), or a one-pod list that found
      the watch ``confirmed`` (it had reached the server's resourceVersion), ``behind`` (the next
      bookmark will confirm it), or failed (``error``).
    - ``podread_watch_staleness_seconds{scope}``: the age of the watch's last confirmation (an event,
      a bookmark or a list) when last looked at (by a read, or 0 at a confirmation).
    - ``podread_watch_last_confirmed_timestamp_seconds{scope}``: when that was (Unix time): the
      age at scrape time is ``time() - this``.
    - ``podread_watch_pods{scope}`` and ``podread_watch_bytes{scope}``: the pods the watch holds and
      their size as compact JSON (``bench cache_memory`` prints what they retain in memory).
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = REGISTRY if registry is None else registry
        self.reads = Counter(
            "podread_reads_total", "Reader reads (pods; batch Jobs and Nodes for the barrier) by method, source "
            "and outcome.",
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
        self.job_api_requests = Counter(
            "podread_job_api_requests_total", "Batch Job list requests (pages) sent to the API server.",
            ["scope", "outcome"], registry=registry,
        )
        self.node_cache_lookups = Counter(
            "podread_node_cache_lookups_total", "Node cache lookups of the stuck-pod check by result (hit, miss).",
            ["result"], registry=registry,
        )
        self.node_reads = Counter(
            "podread_node_reads_total", "Node states the stuck-pod check answered, by source (watch, cache, get).",
            ["source"], registry=registry,
        )
        self.node_watch_requests = Counter(
            "podread_node_watch_requests_total", "Node list requests (pages, nudges) the Node watch sent.",
            ["scope", "outcome"], registry=registry,
        )
        self.node_watch_lists = Counter(
            "podread_node_watch_lists_total", "Lists that (re)start the Node watch, by outcome.",
            ["outcome"], registry=registry,
        )
        self.node_watch_restarts = Counter(
            "podread_node_watch_restarts_total", "Node watch requests that ended, by reason.",
            ["reason"], registry=registry,
        )
        self.node_watch_events = Counter(
            "podread_node_watch_events_total", "Node watch events by type and outcome (applied, ignored).",
            ["type", "outcome"], registry=registry,
        )
        self.node_watch_nudges = Counter(
            "podread_node_watch_nudges_total", "One-Node lists sent to confirm a quiet Node watch, by outcome.",
            ["outcome"], registry=registry,
        )
        self.node_watch_nodes = Gauge(
            "podread_node_watch_nodes", "Nodes the Node watch holds.", registry=registry,
            multiprocess_mode="livemax",
        )
        self.watch_restarts = Counter(
            "podread_watch_restarts_total", "Pod watch requests that ended, by scope and reason.",
            ["scope", "reason"], registry=registry,
        )
        self.watch_lists = Counter(
            "podread_watch_lists_total", "Lists that (re)start the pod watch, by scope and outcome.",
            ["scope", "outcome"], registry=registry,
        )
        self.watch_events = Counter(
            "podread_watch_events_total", "Pod watch events by scope, type and outcome (applied, ignored).",
            ["scope", "type", "outcome"], registry=registry,
        )
        self.watch_nudges = Counter(
            "podread_watch_nudges_total", "One-pod lists sent to confirm a quiet pod watch, by scope and outcome.",
            ["scope", "outcome"], registry=registry,
        )
        self.watch_staleness = Gauge(
            "podread_watch_staleness_seconds", "Age of the pod watch's last confirmation when last looked at.",
            ["scope"], registry=registry, multiprocess_mode="livemax",
        )
        self.watch_confirmed = Gauge(
            "podread_watch_last_confirmed_timestamp_seconds", "Unix time of the pod watch's last confirmation.",
            ["scope"], registry=registry, multiprocess_mode="livemin",
        )
        self.watch_pods = Gauge(
            "podread_watch_pods", "Pods the watch-fed cache holds.", ["scope"], registry=registry,
            multiprocess_mode="livesum",
        )
        self.watch_bytes = Gauge(
            "podread_watch_bytes", "Compact JSON size of the slim pods the watch-fed cache holds.", ["scope"],
            registry=registry, multiprocess_mode="livesum",
        )
        self._reads = Bound(self.reads)
        self._read_seconds = Bound(self.read_seconds)
        self._read_errors = Bound(self.read_errors)
        self.lookup = Bound(self.cache_lookups)
        """``cache_lookups`` by (index, result), bound once."""
        self.fill = Bound(self.cache_fills)
        """``cache_fills`` by (index, outcome), bound once."""
        self.node_lookup = Bound(self.node_cache_lookups)
        """``node_cache_lookups`` by result, bound once."""
        self.node_read = Bound(self.node_reads)
        """``node_reads`` by source, bound once."""

    def observe_read(self, method: str, source: str, seconds: float, error_code: str | None = None) -> None:
        """Counts one Reader read of ``method`` on ``source`` that took ``seconds``: outcome ``ok``
        when ``error_code`` is ``None``, else ``error`` and one more error of that class."""
        self._reads(method, source, "ok" if error_code is None else "error").inc()
        self._read_seconds(method, source).observe(seconds)
        if error_code is not None:
            self._read_errors(method, source, error_code).inc()


_default: ReadMetrics | None = None
_default_lock = threading.Lock()


def default_metrics() -> ReadMetrics:
    """The process-wide ReadMetrics on prometheus_client's default registry, created on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = ReadMetrics()
        return _default
