"""Carrying out what an answered decision asks besides the answer: Events and writes.

``Effects.submit`` runs after a 200 is decided and never blocks it: it derives the Events of the
transition (``hooks.core.events``), takes the decision's actions (``hooks.core.actions``) and queues them for
one background thread that writes through the injected ``Writer``. Nothing here can change an
answer: a full queue, a refused or failed write is logged and counted
(``nvcre_writes_total{kind, outcome}``), and the next hook call decides (and asks) again.

Events never flood, on three levels:
- a fixed point makes none (``hooks.core.events`` only makes transitions);
- the same transition answered twice has the same Event name (``<job>.<hash of uid, reason, key>``):
  the API server refuses the second create (409), in any process or replica; this process also
  remembers the names it wrote (``DEDUP_SIZE`` names, ``DEDUP_SECONDS``) and sends no second create;
- each Job has a token bucket (``BURST`` Events, one more every ``REFILL_SECONDS``), keyed by its
  namespace and name only: a request with a new ``metadata.uid`` each time is still the same Job's
  bucket. Past it Events are dropped and counted (``rate-limited``).
An Event regards only the parent of the request that made it, and is posted in that parent's
namespace: body, ``regarding`` and namespace all come from the parsed parent (``Observed``).
Deletes are not rate-limited but deduplicated by object (kind, namespace, name, UID): sent once per
``DEDUP_SECONDS``; one that failed is forgotten, so the next call that asks for it sends it again.
A delete without a UID is refused by the writer, never sent without its UID precondition, and
counted (``refused``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import socket
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import cachetools
from prometheus_client import Counter, Histogram

from hooks.core.actions import Action, DeleteJob, ForceDeletePod
from hooks.core.checkpoint import reached
from hooks.core.decide import Decision
from hooks.core.events import Event, transition_events
from hooks.core.historyentry import newly_classed
from hooks.core.observed import API_VERSION, KIND, Observed
from hooks.server import metrics
from hooks.server.writer import NO_UID, WriteError, Writer

log = logging.getLogger("nvcre.hooks.effects")

CONTROLLER = "nvcre.nvidia.com/nvcre-hooks"
MAX_QUEUE = 512
BURST = 10
REFILL_SECONDS = 30.0
DEDUP_SIZE = 4096
DEDUP_SECONDS = 600.0
WRITES = Counter("nvcre_writes_total", "The hooks' own writes (Events, TTL deletes, force deletes), by kind and "
                 "outcome.", ["kind", "outcome"])
WRITE_SECONDS = Histogram(
    "nvcre_write_duration_seconds", "Duration of the hooks' own writes (on the effects thread, never on an "
    "answer's path), by kind: event, delete-job, force-delete-pod.", ["kind"], buckets=metrics.DURATION_BUCKETS)
WRITES_NOT_DONE = {
    "event": ("rate-limited", "queue-full", "failed"),
    "delete-job": ("queue-full", "refused", "failed"),
    "force-delete-pod": ("queue-full", "refused", "forbidden", "failed"),
}
"""The outcomes of writes that did not happen, by kind: exported at 0 from the start, so that an
alert on their increase sees the first one (a series born at 1 has no increase to see)."""
for _kind, _outcomes in WRITES_NOT_DONE.items():
    for _outcome in _outcomes:
        WRITES.labels(_kind, _outcome)


def event_name(job: str, uid: str, event: Event) -> str:
    """The Event object's name: the same Job, reason and key always give the same name."""
    digest = hashlib.sha256(f"{uid}/{event.key}".encode()).hexdigest()[:16]
    return f"{job}.{digest}"


def event_body(observed: Observed, event: Event, now: datetime, instance: str) -> dict[str, Any]:
    """The events.k8s.io/v1 Event for ``event`` on the Job of ``observed`` at the decision's ``now``."""
    moment = now.astimezone(UTC) if now.tzinfo is not None else now
    regarding = {"apiVersion": API_VERSION, "kind": KIND, "name": observed.name, "namespace": observed.namespace}
    if observed.uid:
        regarding["uid"] = observed.uid
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": event_name(observed.name, observed.uid, event), "namespace": observed.namespace},
        "eventTime": moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "reportingController": CONTROLLER,
        "reportingInstance": instance[:128],
        "action": event.action,
        "reason": event.reason,
        "note": event.note,
        "type": event.type,
        "regarding": regarding,
    }


class Effects:
    """Writes the Events and actions of answered decisions through ``writer`` (module doc).

    ``instance`` names this replica in the Events (default: ``POD_NAME``, else the host name);
    ``clock`` is the monotonic clock of the rate limit. ``flush`` waits until the queue is empty.
    """

    def __init__(self, writer: Writer, *, instance: str | None = None,
                 clock: Callable[[], float] = time.monotonic, max_queue: int = MAX_QUEUE) -> None:
        self.writer = writer
        self.instance = instance or os.environ.get("POD_NAME") or socket.gethostname()
        self._clock = clock
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=max_queue)
        self._sent: cachetools.TTLCache[str, bool] = cachetools.TTLCache(DEDUP_SIZE, DEDUP_SECONDS, timer=clock)
        self._buckets: cachetools.TTLCache[str, tuple[float, float]] = cachetools.TTLCache(
            DEDUP_SIZE, REFILL_SECONDS * BURST, timer=clock)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, observed: Observed, decision: Decision, now: datetime) -> None:
        """Queues the Events of ``decision``'s transition and its actions; never raises, never blocks."""
        try:
            status = decision.response["status"]
            children = tuple(str(c["metadata"]["name"]) for c in decision.response.get("children") or ())
            for event in transition_events(observed.status, status, decision.actions, children,
                                           transitions=decision.transitions):
                self._queue_event(observed, event, now)
            for action in decision.actions:
                self._queue_action(action)
            self._count_checkpoint(observed, status)
            self._count_attempt_ends(observed, status)
        except Exception:  # an effect must never fail the answer
            log.exception("could not queue the effects of a decision on %s/%s", observed.namespace, observed.name)

    def _count_checkpoint(self, observed: Observed, status: Mapping[str, Any]) -> None:
        """Counts the end of a checkpoint request this answer reached (``hooks.core.checkpoint.reached``),
        once per replica like its Event (an answer replayed from Metacontroller's cache is not counted again)."""
        record = status.get("checkpoint") or {}
        ended = reached(observed.status.checkpoint or {}, record)
        if ended is None:
            return
        name = f"checkpoint/{observed.namespace}/{observed.name}/{record.get('id')}/{ended[0]}"
        with self._lock:
            if name in self._sent:
                return
            self._sent[name] = True
        metrics.count_checkpoint(*ended)

    def _count_attempt_ends(self, observed: Observed, status: Mapping[str, Any]) -> None:
        """Counts each attempt end this answer classifies (``hooks.core.historyentry.newly_classed``: a
        ``class`` in the answered ``status.attempts`` that the prior status did not have), once per
        replica as the checkpoint's outcomes (an answer replayed from Metacontroller's cache, or a
        retry before the status is written, is not counted again)."""
        for attempt, cls in newly_classed(observed.status.attempts, status.get("attempts")):
            name = f"attempt-end/{observed.namespace}/{observed.name}/{observed.uid}/{attempt}"
            with self._lock:
                if name in self._sent:
                    continue
                self._sent[name] = True
            metrics.count_attempt_end(cls)

    def flush(self, timeout: float = 10.0) -> bool:
        """Waits until every queued write was tried; returns False on timeout."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def _queue_event(self, observed: Observed, event: Event, now: datetime) -> None:
        body = event_body(observed, event, now, self.instance)
        name = f"{observed.namespace}/{body['metadata']['name']}"
        with self._lock:
            if name in self._sent:
                WRITES.labels("event", "duplicate").inc()
                return
            if not self._take_token(f"{observed.namespace}/{observed.name}"):
                WRITES.labels("event", "rate-limited").inc()
                log.info("event %s on %s/%s dropped: rate limit", event.reason, observed.namespace, observed.name)
                return
            self._sent[name] = True
        self._put("event", (observed.namespace, body, name))

    def _queue_action(self, action: Action) -> None:
        kind = "delete-job" if isinstance(action, DeleteJob) else "force-delete-pod"
        name = f"{kind}/{action.namespace}/{action.name}/{action.uid}"
        with self._lock:
            if name in self._sent:
                WRITES.labels(kind, "duplicate").inc()
                return
            self._sent[name] = True
        self._put(kind, (action, name))

    def _take_token(self, job: str) -> bool:
        """The token bucket of ``job`` (under the lock): whether one more Event may go now."""
        now = self._clock()
        tokens, since = self._buckets.get(job, (float(BURST), now))
        tokens = min(float(BURST), tokens + (now - since) / REFILL_SECONDS)
        if tokens < 1.0:
            self._buckets[job] = (tokens, now)
            return False
        self._buckets[job] = (tokens - 1.0, now)
        return True

    def _put(self, kind: str, item: Any) -> None:
        try:
            self._queue.put_nowait((kind, item))
        except queue.Full:
            WRITES.labels(kind, "queue-full").inc()
            self._forget(kind, item)
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="nvcre-effects", daemon=True)
                self._thread.start()

    def _forget(self, kind: str, item: Any) -> None:
        """A write that did not happen may be asked again (a delete that failed, an Event dropped)."""
        with self._lock:
            self._sent.pop(item[-1], None)

    def _run(self) -> None:
        while True:
            kind, item = self._queue.get()
            started = time.perf_counter()
            try:
                self._write(kind, item)
            finally:
                WRITE_SECONDS.labels(kind).observe(time.perf_counter() - started)
                self._queue.task_done()

    def _write(self, kind: str, item: Any) -> None:
        try:
            if kind == "event":
                namespace, body, _ = item
                outcome = self.writer.create_event(namespace, body)
            elif kind == "delete-job":
                action: DeleteJob = item[0]
                outcome = self.writer.delete_job(action)
                log.info("deleted Job %s/%s: %s", action.namespace, action.name, action.reason)
            else:
                pod: ForceDeletePod = item[0]
                outcome = self.writer.force_delete_pod(pod)
                log.warning("force delete of pod %s/%s: %s (%s)", pod.namespace, pod.name, outcome, pod.reason)
            WRITES.labels(kind, outcome).inc()
            if outcome == "forbidden":  # refused (no RBAC grant yet): asked again once the Role is bound, not in 10 min
                self._forget(kind, item)
        except WriteError as exc:
            WRITES.labels(kind, "refused" if exc.code == NO_UID else "failed").inc()
            log.warning("%s failed: %s [%s]", kind, exc, exc.code)
            self._forget(kind, item)
        except Exception:
            WRITES.labels(kind, "failed").inc()
            log.exception("%s failed unexpectedly", kind)
            self._forget(kind, item)
