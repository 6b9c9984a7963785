"""Prometheus metrics of the hook server, and the /metrics exposition on a port of its own.

The metrics live on prometheus_client's default registry, created once per process at import.
Under gunicorn, ``PROMETHEUS_MULTIPROC_DIR`` is set in the master before prometheus_client is
imported anywhere (see ``hooks/server/gunicorn.conf.py``): every worker writes its values to files in
that directory, and the master serves ``GET /metrics`` on ``NVCRE_METRICS_PORT`` (``serve``), reading
all of them through ``MultiProcessCollector``. The hook port does not serve /metrics: the
NetworkPolicy admits Metacontroller's namespace to the hook port and the monitoring namespace to the
metrics port only. podread registers its own read metrics on the same default registry.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import cachetools
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector

from hooks.core.deadlines import parse_time
from hooks.core.observed import HOOKS
from hooks.core.vocab import FailureClass
from hooks.core.work import DRAINED, PHASES
from podread.metrics import Bound

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
OUTCOMES = ("steady", "checked", "redecided", "refused", "unavailable", "invalid", "error")
"""What a hook call's answer did (``outcome_of``), the label of ``nvcre_hook_outcome_duration_seconds``:
``steady`` a 200 sent without reading the live Job (nothing changes, the status settled); ``checked`` a
200 sent once the live Job was read (``hooks.server.freshness``); ``redecided`` a 200 decided again on
the live Job (ADR-107: two reads of it); ``refused`` a 409 (behind the cluster); ``unavailable`` a 503
(the live Job could not be read); ``invalid`` any other 4xx; ``error`` a 500."""
OUTCOME_DURATION = Histogram(
    "nvcre_hook_outcome_duration_seconds",
    "Time from request to answer of hook calls, by hook and by what the answer did (steady, checked, "
    "redecided, refused, unavailable, invalid, error): where the slow calls are (issue 36 item 8).",
    ["hook", "outcome"],
    buckets=DURATION_BUCKETS,
)
PARENT_READ_SECONDS = Histogram(
    "nvcre_parent_read_duration_seconds",
    "Duration of the live Job reads of the freshness check (hooks.server.freshness), by read: version "
    "(its metadata, every answer that may act) and job (the whole Job, to decide again on it).",
    ["read"],
    buckets=DURATION_BUCKETS,
)
PARENT_READS = ("version", "job")
DECISIONS = Counter("nvcre_decisions_total", "Decisions answered with a 200, by kind.", ["kind"])
AUTH_FAILURES = Counter(
    "nvcre_hook_auth_failures_total", "Hook requests refused for a missing or wrong bearer token."
)

DRAIN_STUCK = Counter(
    "nvcre_drain_stuck_pods_total",
    "Pods found stuck terminating on a dead node by a drain barrier, summed over answered decisions "
    "(rises for as long as a drain is stuck).",
)

PHASE_DECISIONS = Counter(
    "nvcre_decision_phases_total",
    "Decisions answered with a 200, by the phase they leave the Job in (phase_after). Not a count of "
    "Jobs: each Job adds one per sync, so the rate by phase is the Jobs in that phase times how often "
    "each is synced (at least every resyncPeriodSeconds, sooner when a hold asks for a resync).",
    ["phase"],
)
DRAIN_REASONS = ("WorkloadPresent", "PodsActive", "LauncherActive", "BatchJobsPresent", "ReadFailed")
"""The reasons of a ``Drained`` condition that is not True: what the drain barrier waits for
(``hooks.core.barrier``), or ``ReadFailed`` when it could not tell (``hooks.core.reads``)."""
DRAIN_HOLDS = Counter(
    "nvcre_drain_holds_total",
    "Held decisions answered while the drain barrier waits (Drained False or Unknown), by the "
    "Drained condition's reason.",
    ["reason"],
)
DRAIN_AGE_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 21600.0)
"""From a few seconds (a normal drain) to hours (pods stuck on a dead node, a finalizer held)."""
DRAIN_AGE = Histogram(
    "nvcre_drain_wait_seconds",
    "At each held decision whose drain waits: how long ago its Drained condition last changed status "
    "(lastTransitionTime), i.e. the age of the drain (since it last became False or Unknown).",
    buckets=DRAIN_AGE_BUCKETS,
)

CHECKPOINT_OUTCOMES = Counter(
    "nvcre_checkpoint_outcomes_total",
    "Checkpoint requests (issue 33) that ended, by outcome: Acknowledged, GraceExpired, Cancelled (resumed), "
    "WorkloadEnded; counted once per replica on the answer that ends it.",
    ["outcome"],
)
CHECKPOINT_OUTCOME_NAMES = ("Acknowledged", "GraceExpired", "Cancelled", "WorkloadEnded")
CHECKPOINT_ACK_SECONDS = Histogram(
    "nvcre_checkpoint_acknowledge_seconds",
    "From a checkpoint request to the workload's acknowledgement (status.checkpoint requestedAt to acknowledgedAt).",
    buckets=(1.0, 5.0, 15.0, 30.0, 60.0, 90.0, 120.0, 180.0, 300.0, 600.0, 1800.0, 3600.0),
)

REFUSALS = Counter(
    "nvcre_hook_refusals_total",
    "Hook requests refused as behind the cluster (409), by hook and cause: attempt-ahead and children-behind "
    "(Metacontroller's children cache lags: normal for a moment after a change), parent-gone, parent-replaced, "
    "parent-deleting. A parent that is only behind the live Job is not refused: it is decided again on the live one.",
    ["hook", "cause"],
)
REDECIDED = Counter(
    "nvcre_hook_redecided_total",
    "Hook requests whose Job was behind the live one, answered by deciding again on the live Job (ADR-107).",
    ["hook"],
)
REFUSAL_LOOP = 10
"""How many refusals of one Job in a row, with no answer between, make a loop (``nvcre_hook_refusal_loops_total``)."""
REFUSAL_LOOPS = Counter(
    "nvcre_hook_refusal_loops_total",
    f"Jobs refused as behind the cluster {REFUSAL_LOOP} times in a row with no answer between (counted again "
    f"every {REFUSAL_LOOP} more): a cache that does not catch up, not the lag after a change.",
    ["hook"],
)

for _hook in HOOKS:
    REDECIDED.labels(hook=_hook)
    REFUSAL_LOOPS.labels(hook=_hook)
ATTEMPT_ENDS = Counter(
    "nvcre_attempt_ends_total",
    "Attempt ends by failure class (issue 34): user, preempted, node, infrastructure, deadline, unknown "
    "(other: a word the hooks do not write); counted once per replica on the answer that classifies the end.",
    ["class"],
)
FAILURE_CLASSES = tuple(klass.value for klass in FailureClass)
"""The failure classes (the words of ``status.attempts[].class``), each exported at 0 from the start:
an alert on the increase of ``node`` sees the first one."""

for _class in FAILURE_CLASSES:
    ATTEMPT_ENDS.labels(_class)
for _outcome in CHECKPOINT_OUTCOME_NAMES:
    CHECKPOINT_OUTCOMES.labels(outcome=_outcome)
for _hook in HOOKS:
    DURATION.labels(hook=_hook)
for _read in PARENT_READS:
    PARENT_READ_SECONDS.labels(read=_read)
for _phase in sorted(PHASES):
    PHASE_DECISIONS.labels(phase=_phase)
for _reason in DRAIN_REASONS:
    DRAIN_HOLDS.labels(reason=_reason)


# The children counted on every hook call, each bound once (``labels()`` on every call cost more than
# the count itself): by (hook, code), (hook,), (kind,) and (phase,), in the metrics' label order.
_REQUESTS, _DURATION = Bound(REQUESTS), Bound(DURATION)
_DECISIONS, _PHASE_DECISIONS = Bound(DECISIONS), Bound(PHASE_DECISIONS)


_OUTCOME_DURATION, _PARENT_READ_SECONDS = Bound(OUTCOME_DURATION), Bound(PARENT_READ_SECONDS)


def observe_request(hook: str, code: int, seconds: float, outcome: str | None = None) -> None:
    """Counts one answered hook request and records how long it took, also by ``outcome`` (one of
    ``OUTCOMES``, ``outcome_of``) when given."""
    _REQUESTS(hook, str(code)).inc()
    _DURATION(hook).observe(seconds)
    if outcome is not None:
        _OUTCOME_DURATION(hook, outcome).observe(seconds)


def outcome_of(code: int, redecided: bool, live_reads: int) -> str:
    """What an answer with HTTP status ``code`` did (``OUTCOMES``): ``redecided`` when it was decided
    on the live Job, else ``checked`` when ``live_reads`` (reads of the live Job) were made, else
    ``steady``; for a non-200 the class of its code."""
    if code == 200:
        return "redecided" if redecided else "checked" if live_reads else "steady"
    if code == 409:
        return "refused"
    if code == 503:
        return "unavailable"
    return "error" if code >= 500 else "invalid"


def observe_parent_read(read: str, seconds: float) -> None:
    """Times one live read of a Job by the freshness check: ``read`` is ``version`` or ``job``."""
    _PARENT_READ_SECONDS(read).observe(seconds)


def count_decision(kind: str) -> None:
    """Counts one decision of ``kind`` (``created``, ``held``, ...) that was answered."""
    _DECISIONS(kind).inc()


def count_phase(phase: str) -> None:
    """Counts one answered decision that leaves its Job in ``phase``."""
    _PHASE_DECISIONS(phase).inc()


def count_drain_hold(status: Mapping[str, object], now: datetime) -> None:
    """Counts one held decision whose drain waits, and observes the drain's age.

    Reads the ``Drained`` condition of the answered ``status``: when it is False or Unknown, counts
    its reason (``nvcre_drain_holds_total``; one of ``DRAIN_REASONS``, else ``other``) and observes
    ``now`` minus its ``lastTransitionTime``
    (``nvcre_drain_wait_seconds``; not observed when that time is missing or unreadable). A
    ``Drained`` that is True or absent counts nothing: the hold is for another reason.
    """
    conditions = status.get("conditions")
    listed = [c for c in conditions if isinstance(c, Mapping)] if isinstance(conditions, list) else []
    drained = next((c for c in listed if c.get("type") == DRAINED), None)
    if drained is None or drained.get("status") not in ("False", "Unknown"):
        return
    reason = drained.get("reason")  # a carried-over status may hold any text: the label set stays bounded
    DRAIN_HOLDS.labels(reason=reason if reason in DRAIN_REASONS else "other").inc()
    try:
        since = parse_time(drained.get("lastTransitionTime") or "")
    except ValueError:
        return
    if since is not None:
        moment = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
        DRAIN_AGE.observe(max(0.0, (moment - since).total_seconds()))


def count_checkpoint(outcome: str, seconds: float | None) -> None:
    """Counts one checkpoint request that ended in ``outcome`` and, for an acknowledgement, observes
    how long it took (``hooks.core.checkpoint.reached``)."""
    CHECKPOINT_OUTCOMES.labels(outcome=outcome if outcome in CHECKPOINT_OUTCOME_NAMES else "other").inc()
    if seconds is not None:
        CHECKPOINT_ACK_SECONDS.observe(seconds)


def count_attempt_end(cls: str) -> None:
    """Counts one attempt end of failure class ``cls`` (``other`` for a word not in ``FAILURE_CLASSES``:
    the label set stays bounded whatever a status carries)."""
    ATTEMPT_ENDS.labels(cls if cls in FAILURE_CLASSES else "other").inc()


def count_drain_stuck(pods: int) -> None:
    """Counts ``pods`` stuck terminating on dead nodes in one answered decision."""
    DRAIN_STUCK.inc(pods)


def count_refusal(hook: str, cause: str, job: tuple[str, str]) -> None:
    """Counts one request refused as behind the cluster (a 409, ``cause`` one of ``STALE_CAUSES``) for
    ``job`` (namespace, name), and a loop once the Job is refused ``REFUSAL_LOOP`` times in a row
    (``REFUSAL_STREAKS``)."""
    REFUSALS.labels(hook=hook, cause=cause).inc()
    if REFUSAL_STREAKS.refused(job):
        REFUSAL_LOOPS.labels(hook=hook).inc()


def count_answered(job: tuple[str, str], redecided: bool, hook: str) -> None:
    """Counts one answered request of ``job`` (a 200): it ends the Job's run of refusals; ``redecided``
    when it was decided on the live Job in place of the request's (``nvcre_hook_redecided_total``)."""
    REFUSAL_STREAKS.answered(job)
    if redecided:
        REDECIDED.labels(hook=hook).inc()


class RefusalStreaks:
    """How many times in a row each Job was refused as behind the cluster, in this process: at most
    ``max_jobs`` Jobs (the least recently refused forgotten first), every access under one lock.
    A loop is ``loop`` refusals of one Job with no answer between them: ``refused`` says so on the
    ``loop``-th, the ``2 * loop``-th, ... (a Job stuck in a loop keeps counting)."""

    def __init__(self, loop: int, max_jobs: int = 10_000) -> None:
        self.loop = loop
        self._streaks: cachetools.LRUCache[tuple[str, str], int] = cachetools.LRUCache(maxsize=max_jobs)
        self._lock = threading.Lock()

    def refused(self, job: tuple[str, str]) -> bool:
        """Adds one refusal of ``job``; whether its streak just reached a multiple of ``loop``."""
        with self._lock:
            streak = self._streaks.get(job, 0) + 1
            self._streaks[job] = streak
        return streak % self.loop == 0

    def answered(self, job: tuple[str, str]) -> None:
        """Ends ``job``'s streak."""
        with self._lock:
            self._streaks.pop(job, None)


REFUSAL_STREAKS = RefusalStreaks(REFUSAL_LOOP)
"""This process' streaks (``count_refusal``, ``count_answered``)."""


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


METRICS_PATH = "/metrics"


def metrics_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The WSGI app of the metrics port: ``GET /metrics`` answers ``exposition()``; any other path
    is a JSON 404 and any other method on /metrics a JSON 405, as on the hook port."""
    path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "")
    if path != METRICS_PATH:
        return _error(start_response, "404 Not Found", f"no route {path} on the metrics port", [])
    if method not in ("GET", "HEAD"):
        return _error(start_response, "405 Method Not Allowed", f"method {method} not allowed on {path}; "
                      "allowed: GET, HEAD", [("Allow", "GET, HEAD")])
    text, content_type = exposition()
    start_response("200 OK", [("Content-Type", content_type), ("Content-Length", str(len(text)))])
    return [b"" if method == "HEAD" else text]


def _error(start_response: Callable[..., Any], status: str, message: str,
           headers: list[tuple[str, str]]) -> list[bytes]:
    body = json.dumps({"error": message}, sort_keys=True).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *headers])
    return [body]


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    """One thread per scrape, none left behind at exit."""

    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    """No access log line per scrape: gunicorn's logs are JSON and this would not be."""

    def log_message(self, format: str, *args: Any) -> None:
        return


def serve(host: str, port: int) -> tuple[WSGIServer, threading.Thread]:
    """Serves ``metrics_app`` on ``host:port`` from a daemon thread of this process (the gunicorn
    master, once its hook sockets are bound); raises ``OSError`` when the port cannot be bound."""
    server_class = type("_MetricsServer", (_ThreadingServer,),
                        {"address_family": socket.AF_INET6 if ":" in host else socket.AF_INET})
    server = make_server(host, port, metrics_app, server_class, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="nvcre-metrics", daemon=True)
    thread.start()
    return server, thread
