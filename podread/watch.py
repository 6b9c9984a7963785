"""The watch that feeds the pod cache: every pod carrying JOB_LABEL, kept current by one watch.

Two parts, kept apart so the first can be tested without I/O:
- ``WatchedPods``: the pods one watch feeds (its scope: all namespaces, or one), slim
  (``podread.slim``), indexed by job and by node, and when the watch last confirmed them.
- ``PodWatch``: the thread that lists the scope's pods, then watches from the list's
  resourceVersion through the ``LiveClient``'s kubernetes client, feeding a ``WatchedPods``.

Its loop (list, watch, resume, relist on 410, the first bookmark that makes a request live) is
``Reflector``'s, the one home of that loop, which ``podread.nodewatch.NodeWatch`` runs too.

The TTL stays the staleness bound: ``WatchedPods.answer`` answers a key only while the watch
confirmed its pods less than ``ttl_seconds`` ago: the list itself, a bookmark, an event of a watch
request past its first bookmark (the events before it may replay the past), or a nudge. When the
watch is down, lagging or not yet synced, it answers nothing and the cache fills the key from a list,
exactly as in TTL mode: a broken watch never makes the cache older than a TTL entry.

Departed pods: a DELETED event of a pod that tells a failure (``podread.selector.tells_a_failure``)
and names its workload (``jobset.sigs.k8s.io/jobset-name``) is kept, as the event shows it
(``podread.slim.evidence``) and annotated with the time the watch saw it
(``DEPARTED_ANNOTATION``), for at most ``DEPARTED_SECONDS`` and at most ``MAX_DEPARTED`` pods
(oldest dropped first): ``WatchedPods.departed`` answers them per workload, for
``Reader.attempt_failure_pods``. A preemption deletes its victim before the real JobSet fails; this
is the only place its ``DisruptionTarget`` is still known when the hooks judge the failure. What a
departed pod says is a fact of the past, not a claim about the present, so it is answered whether or
not the store is fresh; a relist keeps it, a ``reset`` (a new process) forgets it. What the watch
never saw is not there: a pod deleted while the watch was down past its resourceVersion (410, then a
relist), or before this process' watch started (each gunicorn worker has its own). Launchers carry
no JOB_LABEL, so the watch never sees them: a departed launcher is not kept.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson
import urllib3

from podread.constants import DEPARTED_ANNOTATION, JOB_INDEX_FIELD, JOB_LABEL, JOBSET_NAME_LABEL, NODE_NAME_INDEX_FIELD
from podread.errors import ApiError, PodReadError
from podread.metrics import ReadMetrics, default_metrics
from podread.selector import Counted, Pod, PodSelector, counted, tells_a_failure
from podread.slim import evidence, slim

if TYPE_CHECKING:  # the watch takes its live client as given: importing it would load the kubernetes client
    from prometheus_client import Counter

    from podread.live import VersionedLister

log = logging.getLogger("podread")

ALL_NAMESPACES = "all-namespaces"
"""The ``scope`` label of a watch over every namespace."""
MAX_TOMBSTONES = 10_000
"""How many deleted pods the store remembers (name -> resourceVersion of the deletion), so that a
late event older than the deletion does not bring the pod back. Cleared by every list."""
MAX_DEPARTED = 2_000
"""How many departed pods (deleted pods that tell a failure, ``WatchedPods.departed``) a store keeps;
past it the oldest is dropped. About 6.7 KB each (retained) for a realistic preempted worker of two
containers, 13.5 MB at the bound; about 15 KB with a 4 KiB termination message in each container,
30 MB at the bound (``bench cache_memory``, table ``departed``). Nothing is kept while no failing pod is deleted, so
the steady-state figures (8,000 pods: 109 MiB per worker) do not move."""
DEPARTED_SECONDS = 900.0
"""How long a departed pod is kept after the watch saw its deletion: a workload's end is judged
within seconds of its victim's deletion (the batch Job fails once the pod is gone, then the JobSet,
then the next sync), so 15 minutes also covers a hooks outage of that length."""
MIN_WATCH_SECONDS = 3
MAX_WATCH_SECONDS = 60

Key = tuple[str, str]


def watch_timeout_seconds(ttl_seconds: float) -> int:
    """The ``timeoutSeconds`` each watch request asks for, so that confirmations come within the TTL.

    The API server sends a bookmark 2 s before a watch's timeout (and otherwise only about once a
    minute), dispatched on a timer of about 1 s, then ends the watch; the next request resumes from
    that bookmark. Bookmarks therefore come about every ``timeoutSeconds``: the TTL less 2 s, at
    least 3 s (below that the server sends no bookmark) and at most 60 s. With a TTL under about
    5 s, quiet jobs are confirmed less often than the TTL and are filled from lists, as in TTL mode.
    """
    return int(max(MIN_WATCH_SECONDS, min(MAX_WATCH_SECONDS, ttl_seconds - 2)))


def _version(value: Any) -> int | None:
    """A resourceVersion as a number, or ``None`` when it is not one (then it is never compared)."""
    text = str(value or "")
    return int(text) if text.isdigit() else None


def reached(position: str, wanted: str) -> bool:
    """Whether a watch at resourceVersion ``position`` has seen everything up to ``wanted`` (what a
    consistent list answered): both are numbers and ``position`` is not below ``wanted``. A
    resourceVersion that is not a number cannot be compared: False (nothing is confirmed by it)."""
    at, needed = _version(position), _version(wanted)
    return at is not None and needed is not None and at >= needed


def _size(pod: Pod) -> int:
    return len(orjson.dumps(pod))


class WatchedPods:
    """The slim pods one watch feeds, indexed by (namespace, job) and by node. Thread-safe.

    ``namespace`` is the watch's scope (``None``: every namespace). State changes come from the
    watch: ``replace`` (a list), ``apply`` (an event), ``bookmark``; each confirms the pods at that
    moment on ``clock``. ``answer(key)`` returns a cache key's pods (sorted by namespace and name)
    only while the store is synced (a list arrived since the last ``reset``) and the last
    confirmation is less than ``ttl_seconds`` old; otherwise ``None`` (the cache then fills from a
    list). Node keys are answered only by a store over every namespace.

    Events are applied per pod by resourceVersion: an event whose pod is not newer than the pod
    held, or not newer than the pod's deletion, is ignored (a duplicate or out of order). A pod
    whose event no longer carries JOB_LABEL, or that is deleted, leaves every entry it was in; a pod
    that moved to another job or node leaves the old entries and joins the new ones.
    """

    def __init__(
        self,
        namespace: str | None,
        *,
        ttl_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        metrics: ReadMetrics | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError(f"ttl_seconds must be > 0, got {ttl_seconds}")
        self.namespace = namespace
        self.scope = ALL_NAMESPACES if namespace is None else namespace
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._wall = wall_clock
        self._metrics = metrics or default_metrics()
        self._lock = threading.Lock()
        self._pods: dict[Key, Pod] = {}
        self._sizes: dict[Key, int] = {}
        self._by_job: dict[Key, dict[Key, Pod]] = {}
        self._sorted: dict[Key, Counted] = {}
        """A Job's pods in ``answer``'s order and how many are active, kept from one read to the next
        until a pod of that Job is put or dropped (``_put``, ``_drop``, ``_clear``): a running Job's
        reads then neither sort nor count its pods each time (issue 32 item 4)."""
        self._staleness = self._metrics.watch_staleness.labels(self.scope)
        """The ``watch_staleness`` child of this scope, bound once (``answer`` sets it on every read)."""
        self._by_node: dict[str, dict[Key, Pod]] = {}
        self._gone: OrderedDict[Key, int] = OrderedDict()
        self._departed: OrderedDict[Key, tuple[float, Pod]] = OrderedDict()
        self._bytes = 0
        self._synced = False
        self._confirmed_at: float | None = None
        self._confirmed_wall: float | None = None
        self.resource_version = ""

    def now(self) -> float:
        """The store's clock (what confirmations and ages are measured on)."""
        return self._clock()

    # -- what the watch tells it -------------------------------------------------------------------

    def reset(self) -> None:
        """Forgets everything (a new process after a fork), departed pods too: unsynced until the
        next ``replace``."""
        with self._lock:
            self._clear()
            self._departed.clear()
            self._synced = False
            self._confirmed_at = None
            self.resource_version = ""
        self._publish()

    def replace(self, pods: list[Pod], resource_version: str, listed_at: float | None = None) -> None:
        """Makes ``pods`` (a whole list of the scope, at ``resource_version``) the pods held, and
        confirms them as of ``listed_at`` (on ``clock``; default now): when the list was sent."""
        with self._lock:
            self._clear()
            for pod in pods:
                labels = (pod.get("metadata") or {}).get("labels") or {}
                if JOB_LABEL in labels:
                    self._put(self._key(pod), pod)
            self._synced = True
            self.resource_version = resource_version
            self._confirm(self._clock() if listed_at is None else listed_at)
        self._publish()

    def apply(self, kind: str, pod: Pod, *, confirm: bool = True, last_seen: Pod | None = None) -> bool:
        """Applies one ADDED, MODIFIED or DELETED event of a slim ``pod``; returns whether it changed
        the store (False: a duplicate or an out-of-order event, ignored). With ``confirm``, confirms
        the store when the event is not older than the watch's position: the watch passes
        ``confirm=False`` for the backlog a watch request replays before its first bookmark, which
        may be older than now. ``last_seen``: for a DELETED event, the pod as the event shows it
        (``podread.slim.evidence``); kept as a departed pod (``departed``) when it tells a failure
        and names its workload, and the event is not stale."""
        key = self._key(pod)
        version = _version((pod.get("metadata") or {}).get("resourceVersion"))
        with self._lock:
            held = self._pods.get(key)
            held_version = None if held is None else _version(held["metadata"].get("resourceVersion"))
            deleted_version = self._gone.get(key)
            stale = version is not None and (
                (held_version is not None and version <= held_version)
                or (held is None and deleted_version is not None and version <= deleted_version))
            position = _version(self.resource_version)
            if not stale or (version is not None and position is not None and version >= position):
                self._advance(version, confirm=confirm)
            if stale:
                return False
            if held is not None:
                self._drop(key)
            labels = (pod.get("metadata") or {}).get("labels") or {}
            if kind == "DELETED" and last_seen is not None:
                self._keep_departed(key, last_seen)
            if kind == "DELETED" or JOB_LABEL not in labels:
                if version is not None:
                    self._gone[key] = version
                    self._gone.move_to_end(key)
                    while len(self._gone) > MAX_TOMBSTONES:
                        self._gone.popitem(last=False)
            else:
                self._gone.pop(key, None)
                self._put(key, pod)
        self._publish()
        return True

    def progress(self, resource_version: str, sent_at: float) -> bool:
        """The API server's resourceVersion was ``resource_version`` when a list was sent at
        ``sent_at`` (on ``clock``). When the watch has already reached it, nothing the server held
        then is missing here: confirms the store as of ``sent_at`` and returns True. Otherwise the
        watch is behind that list (or cannot be compared) and nothing is confirmed."""
        with self._lock:
            if not self._synced or not reached(self.resource_version, resource_version):
                return False
            if self._confirmed_at is None or sent_at > self._confirmed_at:
                self._confirm(sent_at)
        self._publish()
        return True

    def bookmark(self, resource_version: str) -> None:
        """A bookmark: every event up to ``resource_version`` has been sent. Confirms the store."""
        with self._lock:
            self._advance(_version(resource_version), text=resource_version)
        self._publish()

    # -- what the cache asks -----------------------------------------------------------------------

    def departed(self, namespace: str, workload: str) -> list[Pod]:
        """The departed pods of ``workload`` (``jobset.sigs.k8s.io/jobset-name``) in ``namespace``:
        deleted pods that told a failure, as the DELETED event showed them, each annotated
        ``DEPARTED_ANNOTATION``, seen less than ``DEPARTED_SECONDS`` ago (at most ``MAX_DEPARTED`` are
        kept). Sorted by name; empty when none. Answered whether or not the store is synced or
        fresh (the module doc says why). Callers must not mutate the pods."""
        with self._lock:
            self._expire_departed()
            found = [pod for (ns, _), (_, pod) in self._departed.items()
                     if ns == namespace and ((pod.get("metadata") or {}).get("labels") or {}).get(
                         JOBSET_NAME_LABEL) == workload]
        return sorted(found, key=lambda pod: str(pod["metadata"].get("name", "")))

    def departed_count(self) -> int:
        """How many departed pods the store holds now (expired ones dropped first)."""
        with self._lock:
            self._expire_departed()
            return len(self._departed)

    def staleness(self) -> float | None:
        """Seconds since the last confirmation, or ``None`` when not synced."""
        with self._lock:
            if not self._synced or self._confirmed_at is None:
                return None
            return self._clock() - self._confirmed_at

    def covers(self, key: tuple[str, ...]) -> bool:
        """Whether ``key`` (a PodCache key) lies in this store's scope, fresh or not."""
        if key[0] == JOB_INDEX_FIELD:
            return self.namespace is None or key[1] == self.namespace
        return key[0] == NODE_NAME_INDEX_FIELD and self.namespace is None

    def answer(self, key: tuple[str, ...]) -> list[Pod] | None:
        """The pods of a PodCache key (``(JOB_INDEX_FIELD, namespace, job)``, namespace ``""`` for
        every namespace, or ``(NODE_NAME_INDEX_FIELD, node)``), sorted by namespace and name, in a
        list of the caller's own; or ``None`` when the key is outside the scope, the store is not
        synced, or the last confirmation is ``ttl_seconds`` old or older."""
        answered = self.counted_answer(key)
        return None if answered is None else list(answered.pods)

    def counted_answer(self, key: tuple[str, ...]) -> Counted | None:
        """``answer``'s pods with how many of them are active (``podread.selector.Counted``), or
        ``None`` as ``answer`` says. The list may be the store's own, kept for the next read: never
        mutate it (``PodCache`` copies it)."""
        if not self.covers(key):
            return None
        with self._lock:
            if not self._synced or self._confirmed_at is None:
                return None
            age = self._clock() - self._confirmed_at
            self._staleness.set(max(0.0, age))
            if age >= self.ttl_seconds:
                return None
            if key[0] == JOB_INDEX_FIELD:
                namespace, job = key[1], key[2]
                if namespace:
                    index = (namespace, job)
                    kept = self._sorted.get(index)
                    if kept is None:
                        found = self._by_job.get(index, {})
                        kept = counted([found[k] for k in sorted(found)])
                        if found:  # a Job with no pod here is not remembered: any name may be asked for
                            self._sorted[index] = kept
                    return kept
                found = {k: p for (ns, j), pods in self._by_job.items() if j == job for k, p in pods.items()}
            else:
                found = self._by_node.get(key[1], {})
            return counted([found[k] for k in sorted(found)])

    def __len__(self) -> int:
        with self._lock:
            return len(self._pods)

    @property
    def bytes(self) -> int:
        """Compact JSON size of the pods held."""
        with self._lock:
            return self._bytes

    # -- internals (lock held) ---------------------------------------------------------------------

    @staticmethod
    def _key(pod: Pod) -> Key:
        metadata = pod.get("metadata") or {}
        return str(metadata.get("namespace", "")), str(metadata.get("name", ""))

    def _clear(self) -> None:
        self._pods.clear()
        self._sizes.clear()
        self._by_job.clear()
        self._sorted.clear()
        self._by_node.clear()
        self._gone.clear()
        self._bytes = 0

    def _keep_departed(self, key: Key, last_seen: Pod) -> None:
        """Keeps ``last_seen`` as a departed pod (the module doc says which), annotated with now."""
        labels = (last_seen.get("metadata") or {}).get("labels") or {}
        if not labels.get(JOBSET_NAME_LABEL) or not tells_a_failure(last_seen):
            return
        seen = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._wall()))
        metadata = {**last_seen["metadata"], "annotations": {DEPARTED_ANNOTATION: seen}}
        self._departed.pop(key, None)
        self._departed[key] = (self._clock(), {**last_seen, "metadata": metadata})
        self._expire_departed()

    def _expire_departed(self) -> None:
        """Drops departed pods older than ``DEPARTED_SECONDS``, then the oldest past ``MAX_DEPARTED``."""
        horizon = self._clock() - DEPARTED_SECONDS
        while self._departed and (len(self._departed) > MAX_DEPARTED
                                  or next(iter(self._departed.values()))[0] <= horizon):
            self._departed.popitem(last=False)

    def _put(self, key: Key, pod: Pod) -> None:
        self._pods[key] = pod
        size = _size(pod)
        self._sizes[key] = size
        self._bytes += size
        index = (key[0], str(pod["metadata"]["labels"][JOB_LABEL]))
        self._by_job.setdefault(index, {})[key] = pod
        self._sorted.pop(index, None)
        node = (pod.get("spec") or {}).get("nodeName") or ""
        if node:
            self._by_node.setdefault(node, {})[key] = pod

    def _drop(self, key: Key) -> None:
        pod = self._pods.pop(key)
        self._bytes -= self._sizes.pop(key, 0)
        index = (key[0], str(pod["metadata"]["labels"][JOB_LABEL]))
        self._sorted.pop(index, None)
        members = self._by_job.get(index)
        if members is not None:
            members.pop(key, None)
            if not members:
                del self._by_job[index]
        node = (pod.get("spec") or {}).get("nodeName") or ""
        members = self._by_node.get(node)
        if members is not None:
            members.pop(key, None)
            if not members:
                del self._by_node[node]

    def _advance(self, version: int | None, text: str = "", *, confirm: bool = True) -> None:
        """Moves the watch's position forward (never back) and, with ``confirm``, confirms the store now."""
        position = _version(self.resource_version)
        if version is not None and (position is None or version > position):
            self.resource_version = text or str(version)
        if confirm:
            self._confirm(self._clock())

    def _confirm(self, moment: float) -> None:
        self._confirmed_at = moment
        self._confirmed_wall = self._wall() - (self._clock() - moment)

    def _publish(self) -> None:
        """Sets the gauges from the current state."""
        with self._lock:
            pods, size, synced = len(self._pods), self._bytes, self._synced
            confirmed = self._confirmed_wall if synced else None
        self._metrics.watch_pods.labels(self.scope).set(pods)
        self._metrics.watch_bytes.labels(self.scope).set(size)
        if confirmed is not None:
            self._metrics.watch_confirmed.labels(self.scope).set(confirmed)
            self._staleness.set(0.0)


class Backoff:
    """Delays between failed attempts: ``initial`` doubled per failure up to ``maximum``, each
    drawn between half and all of that (jitter, so workers do not retry in step)."""

    def __init__(self, initial: float = 0.5, maximum: float = 30.0, rng: random.Random | None = None) -> None:
        self.initial, self.maximum = initial, maximum
        self.failures = 0
        self._rng = rng or random.Random()

    def next(self) -> float:
        """The delay before the next attempt after one more failure."""
        ceiling = min(self.maximum, self.initial * (2 ** self.failures))
        self.failures += 1
        return ceiling * (0.5 + 0.5 * self._rng.random())

    def reset(self) -> None:
        """A success: the next failure starts from ``initial`` again."""
        self.failures = 0


SHORT_WATCH_SECONDS = 1.0
"""A watch request the server ends sooner than this with no event is a failure (``short``), backed off
like one: client-go's reflector rule ("very short watch"). Resuming at once would turn a proxy or a
server that closes every watch into a hot loop of requests."""


class _Expired(Exception):
    """The watch's resourceVersion is too old (410 Gone, as an HTTP answer or an ERROR event)."""


def events(response: Any, chunk_bytes: int = 65536) -> Iterator[dict[str, Any]]:
    """The watch events of a streaming response: one JSON object per line. Raises ``ApiError``
    (``invalid-json``) on a line that is not a JSON object; ends when the server ends the stream."""
    pending = b""
    for chunk in response.stream(chunk_bytes, decode_content=True):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield _event(line)
    if pending.strip():
        yield _event(pending)


def _event(line: bytes) -> dict[str, Any]:
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise ApiError(f"watch: an event is not valid JSON ({exc})", code="invalid-json") from exc
    if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
        raise ApiError("watch: an event is not an object with an object", code="invalid-json")
    return event


class WatchCounters(NamedTuple):
    """The counters a ``Reflector`` counts in, and the labels before each one's own (the pod watch's
    ``scope``; none for the Node watch): ``lists{...,outcome}``, ``events{...,type,outcome}``,
    ``restarts{...,reason}``, ``nudges{...,outcome}``."""

    lists: Counter
    events: Counter
    restarts: Counter
    nudges: Counter
    labels: tuple[str, ...] = ()

    def count(self, counter: Counter, *labels: str) -> None:
        """Adds one to ``counter``'s child for this watch's labels, then ``labels``."""
        counter.labels(*self.labels, *labels).inc()


class Reflector:
    """The list-then-watch loop one watch thread runs (``PodWatch``, ``podread.nodewatch.NodeWatch``):
    one home for how a watch lists, resumes, relists and shuts.

    Reads: ``_list`` (every object, and the list's resourceVersion), then ``_open`` from the store's
    resourceVersion (a streaming watch request with bookmarks, ``watch_seconds`` long), event by event.
    Decides, per request's end: ``ended`` (the server ended it: resume at once), ``short`` (ended in
    under ``SHORT_WATCH_SECONDS`` with no event: wait ``backoff``, as client-go does), ``expired`` (410 Gone,
    as an HTTP answer or an ERROR event: list again), ``error`` (any other HTTP, transport, stream or
    ERROR-event failure: wait ``backoff``, resume from the last resourceVersion seen); a failed list is
    retried after ``backoff``. A BOOKMARK confirms the store and makes the request live: only the
    events after a request's first bookmark confirm the store (``_apply``'s ``live``); before it they
    may replay the past. Counted in ``counters``; logged as ``name``. What differs per watch is given
    by the subclass: ``_list``, ``_open``, ``_apply``, ``nudge``, ``_joinable`` (its threads) and ``start``.
    ``stop`` shuts the open request from any thread and joins the threads.

    The store (``WatchedPods``, ``WatchedNodes``) gives ``now``, ``replace(objects, version,
    listed_at)``, ``bookmark(version)`` and ``resource_version``.
    """

    ERROR_PREFIX = "watch"
    """How an ``ApiError`` from an ERROR event or an unknown event type begins."""

    def __init__(self, store: Any, *, name: str, watch_seconds: int, backoff: Backoff | None,
                 counters: WatchCounters, nudge_every: float | None) -> None:
        self.store = store
        self.name = name
        self.watch_seconds = watch_seconds
        self.nudge_every = nudge_every
        self._backoff = backoff or Backoff()
        self._counters = counters
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._response: Any = None
        self._relist = True

    # -- what a watch gives ------------------------------------------------------------------------

    def _list(self) -> tuple[list[Any], str]:
        """Every object the watch keeps and the list's resourceVersion; raises ``PodReadError``."""
        raise NotImplementedError

    def _open(self, resource_version: str) -> Any:
        """The streaming watch response from ``resource_version``; raises ``ApiError`` (410 included)."""
        raise NotImplementedError

    def _apply(self, kind: str, obj: dict[str, Any], live: bool) -> bool:
        """Applies one ADDED, MODIFIED or DELETED event to the store; returns whether it changed it."""
        raise NotImplementedError

    def _joinable(self) -> tuple[threading.Thread | None, ...]:
        """The threads ``stop`` joins."""
        raise NotImplementedError

    def _current_version(self) -> str:
        """The API server's resourceVersion from one consistent list of at most one object; raises
        ``PodReadError``."""
        raise NotImplementedError

    def nudge(self) -> bool | None:
        """Confirms a quiet watch when it needs it; returns whether it did (``None``: not needed, or failed)."""
        raise NotImplementedError

    # -- lifecycle ---------------------------------------------------------------------------------

    def _forget_parent(self) -> None:
        """In a forked child (the parent's threads and objects are not ours): this process' watch
        starts anew, with an empty store and a list. The caller holds ``_lock`` and drops its threads."""
        self._pid, self._response, self._relist = os.getpid(), None, True
        self.store.reset()

    def stop(self, timeout: float = 5.0) -> None:
        """Stops the watch: no further request, the open one is shut, the threads joined."""
        self._stop.set()
        with self._lock:
            response = self._response
        if response is not None:
            _shut(response)
        if self._pid == os.getpid():
            for thread in self._joinable():
                if thread is not None and thread is not threading.current_thread():
                    thread.join(timeout)

    def _nudge_loop(self) -> None:
        """Every ``nudge_every`` seconds until stopped: ``nudge`` (an error is logged, never raised)."""
        assert self.nudge_every is not None
        while not self._stop.wait(self.nudge_every):
            try:
                self.nudge()
            except Exception:  # the nudge is an optimisation: never let it end the process' watch
                log.exception("%s: unexpected error in the nudge", self.name)

    def _nudge_by_list(self) -> bool | None:
        """One consistent list of at most one object (``_current_version``), sent now, then the store's
        ``progress``. Returns whether that confirmed the store (``confirmed``; False: ``behind``, the
        watch has not reached that resourceVersion yet), or ``None`` when the list failed (``error``)."""
        sent_at = self.store.now()
        try:
            version = self._current_version()
        except PodReadError as error:
            self._counters.count(self._counters.nudges, "error")
            log.debug("%s: the nudge failed: %s", self.name, error)
            return None
        confirmed = self.store.progress(version, sent_at)
        self._counters.count(self._counters.nudges, "confirmed" if confirmed else "behind")
        return confirmed

    # -- the loop ----------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.cycle()
            except Exception:  # never let the thread die: reads fall back to lists and GETs meanwhile
                log.exception("%s: unexpected error", self.name)
                self._pause()

    def cycle(self) -> str:
        """One list (when needed) and one watch request, to its end. Returns how it ended:
        ``ended``, ``short``, ``expired``, ``error``, ``list-failed`` or ``stopped``."""
        counters = self._counters
        if self._relist:
            listed_at = self.store.now()
            try:
                objects, version = self._list()
            except PodReadError as error:
                counters.count(counters.lists, "error")
                log.warning("%s: the list failed: %s", self.name, error)
                self._pause()
                return "list-failed"
            counters.count(counters.lists, "ok")
            self.store.replace(objects, version, listed_at)
            self._relist = False
            self._backoff.reset()
        if self._stop.is_set():
            return "stopped"
        reason = self._watch()
        if self._stop.is_set():
            return "stopped"
        counters.count(counters.restarts, reason)
        if reason == "expired":
            self._relist = True
        elif reason in ("error", "short"):
            self._pause()
        return reason

    def _watch(self) -> str:
        """One watch request from the store's resourceVersion, applied event by event. Returns
        ``ended``, ``short``, ``expired``, ``error`` or ``stopped``; the response is shut whatever happens."""
        opened = time.monotonic()
        try:
            response = self._open(self.store.resource_version)
        except ApiError as error:
            if error.status == 410:
                return "expired"
            log.warning("%s: %s", self.name, error)
            return "error"
        with self._lock:
            self._response = response
        if self._stop.is_set():
            _shut(response)
            return "stopped"
        try:
            live = False  # the request's backlog, until its first bookmark
            seen = 0
            for event in events(response):
                live = self._handle(event, live)
                seen += 1
                self._backoff.reset()
            lasted = time.monotonic() - opened
            if not seen and lasted < SHORT_WATCH_SECONDS and not self._stop.is_set():
                log.warning("%s: the server ended the watch after %.3fs with no event; backing off", self.name, lasted)
                return "short"
            return "ended"
        except _Expired:
            return "expired"
        except (ApiError, urllib3.exceptions.HTTPError, OSError, ValueError) as error:
            if not self._stop.is_set():
                log.warning("%s: the stream broke: %s", self.name, error)
            return "error"
        finally:
            with self._lock:
                self._response = None
            _shut(response)

    def _handle(self, event: dict[str, Any], live: bool) -> bool:
        """Applies one event; returns whether the request is past its first bookmark (``live``):
        only then do its events confirm the store (before it they may be a backlog of the past).
        Raises ``_Expired`` on an ERROR event with code 410, ``ApiError`` on another ERROR event or
        an unknown type."""
        kind = str(event.get("type", ""))
        obj = event["object"]
        counters = self._counters
        if kind == "BOOKMARK":
            self.store.bookmark(str((obj.get("metadata") or {}).get("resourceVersion") or ""))
            counters.count(counters.events, kind, "applied")
            return True
        if kind == "ERROR":
            counters.count(counters.events, kind, "applied")
            if obj.get("code") == 410:
                raise _Expired(str(obj.get("message", "")))
            raise ApiError(f"{self.ERROR_PREFIX}: ERROR event {obj.get('code')} {obj.get('reason')}: "
                           f"{obj.get('message')}",
                           status=obj.get("code") if isinstance(obj.get("code"), int) else None)
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            raise ApiError(f"{self.ERROR_PREFIX}: unknown event type {kind[:40]!r}", code="invalid-json")
        applied = self._apply(kind, obj, live)
        counters.count(counters.events, kind, "applied" if applied else "ignored")
        return live

    def _pause(self) -> None:
        self._stop.wait(self._backoff.next())


WATCH_PAGE_SIZE = 100
"""Pods per page of the watch's list (the per-Job lists keep ``podread.live.DEFAULT_PAGE_SIZE``).

Each page is decoded whole before its pods are made slim, and the slim pods kept are allocated among
the page's whole ones (about 8 KB of JSON each for a real pod, ten times what is kept), so the
interpreter's small-object arenas grow to a page's worth and stay, pinned by the pods kept. Measured
with 8,000 realistic pods (``bench.cache_memory.hooks_pod_memory``'s source, one worker): the list
left the worker at 141 MiB with pages of 500, 117 with 200, 106 with 100 and 103 with 50. The cost is
one request per 100 pods, at start and at each re-list only: 80 requests for 8,000 pods instead of 16."""


class PodWatch(Reflector):
    """The thread that keeps a ``WatchedPods`` current: list, then watch, resume, re-list on 410.

    Reads: ``live.list_snapshot`` of the scope's pods with JOB_LABEL (paged, ``WATCH_PAGE_SIZE`` pods a
    page, each page made slim as it is decoded), then ``live.open_watch`` from the list's
    resourceVersion with bookmarks, each request ending after ``watch_seconds``
    (``watch_timeout_seconds``) and resumed from the last resourceVersion seen (an event's or a bookmark's). Decides:
    - the server ended the watch: resume at once (``ended``);
    - 410 Gone (an HTTP answer, or an ERROR event with code 410): list again (``expired``);
    - any other error (HTTP, transport, a broken stream, an ERROR event): wait ``backoff`` and
      resume from the last resourceVersion (``error``); a failed list is retried the same way.
    A quiet watch: the real server sends a bookmark only when its watch cache has moved past what
    the watch has seen (a pod changed anywhere, or some client's consistent list made it catch up),
    so with no pod changing no bookmark comes. A second thread therefore nudges it (``nudge``):
    every ``nudge_every`` seconds, when the store is unconfirmed for ``nudge_after``, one consistent
    list of at most one pod (``LiveClient.current_version``): when the watch has already reached
    that resourceVersion the store is confirmed as of the list (``WatchedPods.progress``);
    otherwise the list made the server's watch cache catch up, and the bookmark before the watch's
    timeout confirms it. ``nudge_every=None`` runs no such thread (a caller nudges itself).
    Started by ``start`` (idempotent; in a forked child it starts anew with an empty store), stopped
    by ``stop`` (closes the open response, joins the threads). The watch never answers a read: the
    cache asks the store, which answers only while confirmed within the TTL.
    """

    def __init__(
        self,
        live: Any,
        store: WatchedPods,
        *,
        watch_seconds: int | None = None,
        backoff: Backoff | None = None,
        metrics: ReadMetrics | None = None,
        nudge_every: float | None = 1.0,
        peers: Sequence[VersionedLister] = (),
    ) -> None:
        self._live = live
        self._peers = tuple(peers)
        metrics = metrics or default_metrics()
        super().__init__(store, name=f"pod watch ({store.scope})",
                         watch_seconds=watch_seconds or watch_timeout_seconds(store.ttl_seconds), backoff=backoff,
                         counters=WatchCounters(metrics.watch_lists, metrics.watch_events, metrics.watch_restarts,
                                                metrics.watch_nudges, (store.scope,)),
                         nudge_every=nudge_every)
        self.nudge_after = max(store.ttl_seconds / 2, store.ttl_seconds - 1.0 - (nudge_every or 1.0))
        self.selector = PodSelector(namespace=store.namespace, has_labels=(JOB_LABEL,))
        self._thread: threading.Thread | None = None
        self._nudger: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Starts the watch thread unless it runs in this process already. Cheap when it does."""
        thread = self._thread
        if thread is not None and self._pid == os.getpid() and thread.is_alive():
            return
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's thread and pods are not ours
                self._forget_parent()
                self._thread = None
            if self._thread is not None and self._thread.is_alive():
                return
            if self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._run, name=f"podread-watch-{self.store.scope}", daemon=True)
            self._thread.start()
            if self.nudge_every is not None and self.store.ttl_seconds >= 2 * self.nudge_every:
                self._nudger = threading.Thread(target=self._nudge_loop, name=f"podread-nudge-{self.store.scope}",
                                                daemon=True)
                self._nudger.start()

    @property
    def running(self) -> bool:
        """Whether the watch thread runs in this process."""
        thread = self._thread
        return thread is not None and self._pid == os.getpid() and thread.is_alive()

    def _joinable(self) -> tuple[threading.Thread | None, ...]:
        return self._thread, self._nudger

    # -- nudging a quiet watch ------------------------------------------------------------------

    def nudge(self) -> bool | None:
        """When the store is synced and unconfirmed for ``nudge_after`` seconds or more (the TTL less
        1 s and one ``nudge_every`` tick, at least half the TTL: late enough that a watch with any
        traffic needs none, early enough that the answer comes before the TTL passes): one
        consistent list of at most one pod, then ``WatchedPods.progress``. Returns whether that
        confirmed the store, or ``None`` when no list was needed or it failed. Before listing, each
        of ``peers`` (``VersionedLister``: the Reader's live client) whose ``last_version`` was sent
        after the store's last confirmation is offered to the store (``by-peer``: no request)."""
        age = self.store.staleness()
        if age is None or age < self.nudge_after:
            return None
        confirmed_at = self.store.now() - age
        for peer in self._peers:
            seen = peer.last_version
            if seen is not None and seen.sent_at > confirmed_at and self.store.progress(seen.resource_version,
                                                                                       seen.sent_at):
                self._counters.count(self._counters.nudges, "by-peer")
                if (self.store.staleness() or 0.0) < self.nudge_after:
                    return True
        return self._nudge_by_list()

    # -- what the loop lists, opens and applies -------------------------------------------------

    def _list(self) -> tuple[list[Any], str]:
        """The scope's pods with JOB_LABEL, slim as each page is decoded (``WATCH_PAGE_SIZE`` a page)."""
        return self._live.list_snapshot(self.selector, project=slim, page_size=WATCH_PAGE_SIZE)

    def _open(self, resource_version: str) -> Any:
        return self._live.open_watch(self.selector, resource_version, self.watch_seconds)

    def _current_version(self) -> str:
        return self._live.current_version(self.selector)

    def _apply(self, kind: str, obj: dict[str, Any], live: bool) -> bool:
        """The pod slim; a DELETED one also as its evidence (``WatchedPods.apply``'s ``last_seen``)."""
        last_seen = evidence(obj) if kind == "DELETED" else None
        return self.store.apply(kind, slim(obj), confirm=live, last_seen=last_seen)


def _shut(response: Any) -> None:
    """Shuts a streaming response from any thread, so a read blocked on it returns."""
    for name in ("shutdown", "close"):
        method = getattr(response, name, None)
        if method is not None:
            with contextlib.suppress(Exception):  # best effort: the thread ends on its own anyway
                method()
