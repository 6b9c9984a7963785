"""Prometheus metrics of the hook server, and the /metrics exposition.

The metrics live on prometheus_client's default registry, created once per process at import.
With several gunicorn workers, ``PROMETHEUS_MULTIPROC_DIR`` is set before any worker imports
prometheus_client (see ``hooks/server/gunicorn.conf.py``): every worker then writes its values to files in
that directory and a scrape, served by any one worker, reads all of them through
``MultiProcessCollector``. podread registers its own read metrics on the same default registry.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector

from hooks.core.observed import HOOKS

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 7.5, 10.0)
"""Up to Metacontroller's default 10 s hook timeout: a call slower than that has already failed."""

REQUESTS = Counter(
    "nvcre_hook_requests_total", "Hook requests answered, by hook and HTTP status code.", ["hook", "code"]
)
DURATION = Histogram(
    "nvcre_hook_request_duration_seconds",
    "Time from request to answer of hook calls, by hook.",
    ["hook"],
    buckets=DURATION_BUCKETS,
)
DECISIONS = Counter("nvcre_decisions_total", "Decisions answered with a 200, by kind.", ["kind"])
AUTH_FAILURES = Counter(
    "nvcre_hook_auth_failures_total", "Hook requests refused for a missing or wrong bearer token."
)

DRAIN_STUCK = Counter(
    "nvcre_drain_stuck_pods_total",
    "Pods found stuck terminating on a dead node by a drain barrier, summed over answered decisions "
    "(rises for as long as a drain is stuck).",
)

for _hook in HOOKS:
    DURATION.labels(hook=_hook)


def observe_request(hook: str, code: int, seconds: float) -> None:
    """Counts one answered hook request and records how long it took."""
    REQUESTS.labels(hook=hook, code=str(code)).inc()
    DURATION.labels(hook=hook).observe(seconds)


def count_decision(kind: str) -> None:
    """Counts one decision of ``kind`` (``created``, ``held``, ...) that was answered."""
    DECISIONS.labels(kind=kind).inc()


def count_drain_stuck(pods: int) -> None:
    """Counts ``pods`` stuck terminating on dead nodes in one answered decision."""
    DRAIN_STUCK.inc(pods)


def count_auth_failure() -> None:
    """Counts one hook request refused by the bearer-token check."""
    AUTH_FAILURES.inc()


def exposition() -> tuple[bytes, str]:
    """The Prometheus text of every metric of this server, and its Content-Type.

    Reads ``PROMETHEUS_MULTIPROC_DIR``: when set, the values of all worker processes are merged
    from its files; otherwise this process's default registry is exposed.
    """
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
