"""The pure parts of the Metacontroller stand-in (tests/cluster/metacontroller.py): no I/O, no clock
of their own (every ``now`` is passed in), so tests/contract/test_metacontroller_parts.py checks each fast.

Each part follows Metacontroller v4.17.2 (reference/metacontroller-facts.md, "Runtime behaviour"):

- ``decode_response``: the hook answer decoded into typed fields as ``pkg/hooks`` does with
  ``sigs.k8s.io/json`` (fact 6): v2 is strict (an unknown or duplicate top-level field fails), and in
  both modes a field of the wrong JSON type fails the sync (``resyncAfterSeconds`` a number,
  ``finalized`` a bool, ``status`` an object, ``children`` a list of objects that name their kind);
- ``selector_matches``, ``claim`` and ``desired_children`` (fact 7): ``generateSelector`` selects
  children by ``controller-uid``; ``claimChildren`` adopts matching orphans, releases owned children
  that stopped matching, ignores children another controller owns; a desired child whose labels do
  not match the selector fails the whole sync; ``with_last_applied`` is what a create adds
  (``metacontroller.k8s.io/last-applied-configuration``);
- ``TokenBucket``, ``ItemBackoff`` and ``RequeueLimiter`` (fact 8): client-go's token bucket (the
  client's QPS 5 / burst 10, the workqueue's global 10 qps / burst 100) and
  ``DefaultControllerRateLimiter`` (the larger of the bucket's delay and a per-item exponential
  backoff from 5 ms to 1000 s, reset by ``forget`` after a sync that succeeded);
- ``WorkQueue`` (facts 8, 9): a key is queued once, ``add`` makes it ready now, ``add_after``
  keeps only the earliest pending time per key (client-go's delaying queue), a key being processed
  is never handed to a second worker;
- ``ResyncTimer`` (fact 9): the informer's resync period, re-enqueueing every parent at once;
- ``CustomizeCache`` (fact 10): the customize answer per (uid, generation), 20 minutes;
- ``LaggedCache`` (fact 1): an informer's cache, serving what the server held ``lag`` seconds ago,
  and, once the server comes back after a failed list, what it held before the outage for
  ``restart_lag`` more seconds (a watch that relists after an API server restart).
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

CONTROLLER_UID = "controller-uid"
LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"
RESPONSE_FIELDS = ("status", "children", "resyncAfterSeconds", "finalized")
GC_FINALIZERS = frozenset({"foregroundDeletion", "orphan"})
CUSTOMIZE_TTL_SECONDS = 20 * 60.0

Obj = dict[str, Any]
T = TypeVar("T")


# -- fact 6: the response decoder ------------------------------------------------------------------

class DecodeError(ValueError):
    """The answer cannot be decoded: Metacontroller fails the sync (no child or status write)."""


@dataclass(frozen=True)
class Response:
    """A decoded hook answer: ``status`` (``None`` when absent or null), the desired ``children``,
    ``resync_after`` seconds (0 when absent) and ``finalized``."""

    status: Obj | None
    children: list[Obj]
    resync_after: float = 0.0
    finalized: bool = False


def decode_response(body: bytes, *, strict: bool) -> Response:
    """Reads the 200 body ``body``; decides, as Go's decoder into ``CompositeHookResponse`` would,
    whether it decodes (``strict``: the v2 default, unknown and duplicate top-level fields refused;
    loose: they are ignored, the last duplicate wins). Field names are case-sensitive. Returns the
    ``Response``; raises ``DecodeError`` saying why not."""
    keys: list[list[str]] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys.append([key for key, _ in items])
        return dict(items)

    try:
        top = json.loads(body, object_pairs_hook=pairs)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecodeError(f"can't unmarshal webhookResponse: {exc}") from exc
    if top is None:
        return Response(None, [])  # JSON null decodes to the zero response
    if not isinstance(top, dict):
        raise DecodeError(f"the answer is not a JSON object: {type(top).__name__}")
    if strict:
        names = keys[-1]  # the outermost object is the last one completed
        duplicates = sorted({key for key in names if names.count(key) > 1})
        if duplicates:
            raise DecodeError(f"duplicate field(s) {duplicates}")
        unknown = sorted(set(top) - set(RESPONSE_FIELDS))
        if unknown:
            raise DecodeError(f"unknown field(s) {unknown}")
    fields = {key: value for key, value in top.items() if key in RESPONSE_FIELDS}
    status = fields.get("status")
    if status is not None and not isinstance(status, dict):
        raise DecodeError(f"status is not an object: {status!r:.80}")
    resync = fields.get("resyncAfterSeconds")
    if resync is not None and (isinstance(resync, bool) or not isinstance(resync, int | float)):
        raise DecodeError(f"resyncAfterSeconds is not a number: {resync!r:.80}")
    finalized = fields.get("finalized")
    if finalized is not None and not isinstance(finalized, bool):
        raise DecodeError(f"finalized is not a bool: {finalized!r:.80}")
    children = fields.get("children")
    if children is not None and not isinstance(children, list):
        raise DecodeError(f"children is not a list: {children!r:.80}")
    for child in children or []:
        if not isinstance(child, dict):
            raise DecodeError(f"a child is not an object: {child!r:.80}")
        if not isinstance(child.get("kind"), str) or not child["kind"]:
            raise DecodeError(f"Object 'Kind' is missing in {json.dumps(child)[:120]}")
    return Response(status, list(children or []), float(resync or 0.0), bool(finalized))


# -- fact 7: selector, claims, desired children -----------------------------------------------------

class SelectorError(ValueError):
    """A desired child that the parent's selector would not select: the whole sync fails."""


def selector_matches(parent_uid: str, labels: Mapping[str, Any] | None) -> bool:
    """``generateSelector``: the selector is ``controller-uid=<parent uid>``."""
    return (labels or {}).get(CONTROLLER_UID) == parent_uid


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference with ``controller: true``, or ``None``."""
    for owner in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller"):
            return owner
    return None


@dataclass
class Claim:
    """What ``claim`` decided over a list of candidates: ``owned`` go into the request (adopted ones
    included, once their adoption patch succeeded); ``adopt`` and ``release`` need a patch each."""

    owned: list[Obj] = field(default_factory=list)
    adopt: list[Obj] = field(default_factory=list)
    release: list[Obj] = field(default_factory=list)


def claim(parent: Mapping[str, Any], candidates: Iterable[Obj]) -> Claim:
    """Reads ``parent`` and every child object of one type in its namespace (``candidates``, from
    the cache); decides, as client-go's ``ClaimObject``: owned and matching -> owned; owned and not
    matching -> released (unless the parent is being deleted: ignored); an orphan that matches and
    is not being deleted, while the parent is not being deleted -> adopted; another controller's
    child -> ignored."""
    metadata = parent["metadata"]
    uid, deleting = metadata["uid"], bool(metadata.get("deletionTimestamp"))
    result = Claim()
    for obj in candidates:
        owner = controller_of(obj)
        matches = selector_matches(uid, (obj.get("metadata") or {}).get("labels"))
        if owner is not None:
            if owner.get("uid") != uid:
                continue
            if matches:
                result.owned.append(obj)
            elif not deleting:
                result.release.append(obj)
            continue
        if matches and not deleting and not (obj.get("metadata") or {}).get("deletionTimestamp"):
            result.adopt.append(obj)
    return result


def desired_children(parent: Mapping[str, Any], children: Iterable[Mapping[str, Any]]) -> list[Obj]:
    """The answer's ``children`` as Metacontroller creates them: namespace defaulted to the
    parent's, the ``controller-uid`` label added when absent (never overwritten). Raises
    ``SelectorError`` when one does not match the selector (a hook that names another uid)."""
    metadata = parent["metadata"]
    result = []
    for child in children:
        obj = json.loads(json.dumps(child))
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
            raise SelectorError(f"a desired {obj.get('kind')} has no metadata.name")
        meta.setdefault("namespace", metadata["namespace"])
        labels = meta.get("labels")
        if labels is not None and not isinstance(labels, dict):
            raise SelectorError(f"invalid labels on desired child {obj['kind']} {meta['name']}")
        labels = meta.setdefault("labels", {})
        labels.setdefault(CONTROLLER_UID, metadata["uid"])
        if not selector_matches(metadata["uid"], labels):
            raise SelectorError(f"labels on desired child {obj['kind']} {meta['namespace']}/{meta['name']} "
                                "don't match parent selector")
        result.append(obj)
    return result


def with_last_applied(child: Mapping[str, Any]) -> Obj:
    """``child`` with the last-applied annotation a create adds: the object as desired (before
    the ownerReference is added), as compact JSON with sorted keys (Go's ``json.Marshal``)."""
    obj = json.loads(json.dumps(child))
    annotations = obj["metadata"].setdefault("annotations", {})
    annotations.pop(LAST_APPLIED, None)
    annotations[LAST_APPLIED] = json.dumps(child, sort_keys=True, separators=(",", ":"))
    return obj


def has_gc_finalizer(parent: Mapping[str, Any]) -> bool:
    """``foregroundDeletion`` or ``orphan`` on the parent: the garbage collector handles its
    children, so Metacontroller manages none (``finalizer.ShouldFinalize``)."""
    return bool(GC_FINALIZERS & set((parent.get("metadata") or {}).get("finalizers") or []))


# -- fact 8: rate limits ---------------------------------------------------------------------------

class TokenBucket:
    """golang.org/x/time/rate's limiter as client-go uses it: ``rate`` tokens a second, at most
    ``burst`` saved. ``reserve(now)`` takes a token and returns how long to wait for it (0 when
    one was saved); the token is taken either way, so waits queue up."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, burst
        self.tokens = float(burst)
        self.last = -math.inf

    def reserve(self, now: float) -> float:
        if self.last == -math.inf:
            self.last = now
        self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.rate)
        self.last = now
        self.tokens -= 1.0
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate

    def try_take(self, now: float) -> bool:
        """Takes a token only when one is saved (the event recorder's spam filter drops the
        event otherwise); returns whether it did."""
        if self.reserve(now) == 0.0:
            return True
        self.tokens += 1.0
        return False


class ItemBackoff:
    """client-go's per-item exponential failure limiter: ``base * 2**failures`` capped at ``cap``;
    ``forget`` resets a key."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        self.base, self.cap = base, cap
        self.failures: dict[Any, int] = {}

    def when(self, key: Any) -> float:
        count = self.failures.get(key, 0)
        self.failures[key] = count + 1
        return min(self.base * 2 ** count, self.cap)

    def forget(self, key: Any) -> None:
        self.failures.pop(key, None)


class RequeueLimiter:
    """``workqueue.DefaultControllerRateLimiter``: the larger of the per-item backoff and the
    global bucket's delay (10 qps, burst 100)."""

    def __init__(self) -> None:
        self.backoff = ItemBackoff()
        self.bucket = TokenBucket(10.0, 100)

    def when(self, key: Any, now: float) -> float:
        return max(self.backoff.when(key), self.bucket.reserve(now))

    def forget(self, key: Any) -> None:
        self.backoff.forget(key)


# -- facts 8, 9: the work queue and the resync timer -----------------------------------------------

class WorkQueue(Generic[T]):
    """client-go's rate-limiting work queue over keys ``T`` (time passed in): ``add`` makes a key
    ready now, ``add_after`` keeps the earliest pending time per key; ``take`` hands out ready keys
    not being processed (each at most once), ``done`` ends their processing. Safe to share between
    threads (``Metacontroller.serve``'s workers and informer).

    ``waits`` is the queue wait of every key taken: seconds from when it became ready (added, or its
    ``add_after`` time came; a key added again while ready keeps its first time) to when a worker
    took it, by ``clock``. Metacontroller's ``workqueue_queue_duration_seconds``."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.ready: dict[T, float] = {}
        self.waiting: dict[T, float] = {}
        self.processing: set[T] = set()
        self.waits: list[float] = []
        self.clock = clock
        self._lock = threading.RLock()

    def add(self, key: T) -> None:
        with self._lock:
            self.ready.setdefault(key, self.clock())

    def add_after(self, key: T, delay: float, now: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        at = now + delay
        with self._lock:
            if key not in self.waiting or at < self.waiting[key]:
                self.waiting[key] = at

    def take(self, now: float, limit: int) -> list[T]:
        """Moves the keys whose time came to ready; returns up to ``limit`` ready keys that no
        worker is processing, marked as processing."""
        with self._lock:
            for key, at in sorted(self.waiting.items(), key=lambda pair: pair[1]):
                if at <= now:
                    del self.waiting[key]
                    self.ready.setdefault(key, at)
            taken = [key for key in self.ready if key not in self.processing][:limit]
            taken_at = self.clock()
            for key in taken:
                self.waits.append(max(0.0, taken_at - self.ready.pop(key)))
                self.processing.add(key)
            return taken

    def done(self, key: T) -> None:
        with self._lock:
            self.processing.discard(key)

    def next_time(self) -> float:
        """The earliest time a waiting key becomes ready (``inf`` when none waits)."""
        with self._lock:
            return min(self.waiting.values(), default=math.inf)

    def __len__(self) -> int:
        """Keys ready or waiting (the queue's depth)."""
        with self._lock:
            return len(self.ready) + len(self.waiting)


class ResyncTimer:
    """The parent informer's resync (``resyncPeriodSeconds``, at least 1 s): ``due(now)`` is true
    once per period, when every parent in the cache is re-enqueued at once."""

    def __init__(self, period: float | None, now: float) -> None:
        self.period = None if period is None else max(1.0, period)
        self.next = math.inf if self.period is None else now + self.period

    def due(self, now: float) -> bool:
        if self.period is None or now < self.next:
            return False
        while self.next <= now:
            self.next += self.period
        return True


# -- fact 10: the customize cache ------------------------------------------------------------------

class CustomizeCache:
    """The customize hook's answers per (parent uid, generation), each kept ``ttl`` seconds."""

    def __init__(self, ttl: float = CUSTOMIZE_TTL_SECONDS) -> None:
        self.ttl = ttl
        self.entries: dict[tuple[str, int], tuple[float, Any]] = {}

    def get(self, uid: str, generation: int, now: float) -> Any | None:
        entry = self.entries.get((uid, generation))
        if entry is None or now - entry[0] >= self.ttl:
            self.entries.pop((uid, generation), None)
            return None
        return entry[1]

    def put(self, uid: str, generation: int, value: Any, now: float) -> None:
        self.entries[(uid, generation)] = (now, value)


# -- fact 1: the lagging informer cache ------------------------------------------------------------

@dataclass(frozen=True)
class Staleness:
    """How far behind the stand-in's caches are: the parents ``lag`` seconds, the children (and
    related objects) ``child_lag``; after the API server came back from an outage, both serve
    what they held before it for ``restart_lag`` seconds more. All zero: fresh reads."""

    lag: float = 0.0
    child_lag: float = 0.0
    restart_lag: float = 0.0


FRESH = Staleness()


class LaggedCache(Generic[T]):
    """One informer's store, fed the server's full lists (``record``) and failed lists
    (``failed``); ``view(now)`` is what the store holds at ``now``: the newest list at least
    ``lag`` seconds old (the oldest one while none is), or, in the ``restart_lag`` seconds after
    the first list that succeeded after a failure, the view at the failure. ``None`` before any
    list succeeded (an informer not synced yet). A change is "received" when a list sees it: after
    a long pause between lists the view can lag more than ``lag`` (a test that writes and then
    waits lists once right after its write: ``Metacontroller.refresh``)."""

    def __init__(self, lag: float, restart_lag: float = 0.0) -> None:
        self.lag, self.restart_lag = lag, restart_lag
        self.lists: deque[tuple[float, T]] = deque()
        self.broken_view: T | None = None
        self.broken = False
        self.frozen_until = -math.inf

    def record(self, now: float, value: T) -> None:
        if self.broken:
            self.broken = False
            if self.restart_lag > 0:
                self.frozen_until = now + self.restart_lag
        self.lists.append((now, value))
        self._trim(now)

    def failed(self, now: float) -> None:
        if not self.broken:
            self.broken_view = self._lagged(now)
            self.broken = True

    def restarted(self, now: float) -> None:
        """The stale-after-restart mode on demand: serve the current view ``restart_lag`` more
        seconds, whatever the server says meanwhile."""
        self.broken_view = self._lagged(now)
        self.frozen_until = now + self.restart_lag

    def view(self, now: float) -> T | None:
        if now < self.frozen_until and self.broken_view is not None:
            return self.broken_view
        return self._lagged(now)

    def _lagged(self, now: float) -> T | None:
        if not self.lists:
            return None
        chosen = self.lists[0][1]
        for at, value in self.lists:
            if at <= now - self.lag:
                chosen = value
            else:
                break
        return chosen

    def _trim(self, now: float) -> None:
        while len(self.lists) > 1 and self.lists[1][0] <= now - self.lag:
            self.lists.popleft()


# -- the hot-loop invariant: a status that never settles --------------------------------------------
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


def status_fields(status: Mapping[str, Any]) -> dict[str, str]:
    """A status flattened for comparison: each top-level field but ``conditions`` by name, and each
    condition's ``status``, ``reason``, ``message`` and ``lastTransitionTime`` as ``Type.part``; the
    values as canonical JSON text."""
    fields = {name: json.dumps(value, sort_keys=True) for name, value in status.items() if name != "conditions"}
    for condition in status.get("conditions") or []:
        for part in ("status", "reason", "message", "lastTransitionTime"):
            fields[f"{condition.get('type')}.{part}"] = json.dumps(condition.get(part))
    return fields


def _is_timestamp(text: str | None) -> bool:
    """Whether a flattened value is an RFC 3339 time."""
    value = json.loads(text) if text is not None else None
    return isinstance(value, str) and TIMESTAMP.match(value) is not None


class SettleJudge:
    """Whether one Job's status writes settle (the stand-in's hot-loop invariant).

    Real Metacontroller writes every status that differs from the live one, last writer wins, so a
    Job that makes progress (pods going 2 -> 1 -> 0, a condition changing reason, a history entry
    gaining its end) writes many times in a few seconds, and answers from stale cached parents can
    write an older status back once or twice before the fresh one wins again. Neither is a loop. A
    hot loop is a status that never settles; a write is *churn* when

    - it writes back a whole status already seen in the window (an oscillation ``A -> B -> A``), or
      sets a field back to an earlier value of the window for the third time (a stale answer or two
      sets one back once or twice: ``1 -> 2 -> 1 -> 2``; progress such as ``activePods`` 0 -> 2 -> 1
      -> 0 sets one back once), or
    - all it changes are timestamps (a hook that stamps ``now`` on every call: the world did not
      change, the answer did).

    More than ``limit`` churn writes within ``seconds`` is a hot loop: stale caches produce a
    bounded handful (one per cached version), a loop keeps going."""

    def __init__(self, limit: int = 6, seconds: float = 10.0) -> None:
        self.limit, self.seconds = limit, seconds
        self._seen: deque[tuple[float, dict[str, str]]] = deque()
        self._churn: deque[tuple[float, list[str]]] = deque()
        self._returns: list[tuple[float, str]] = []

    def record(self, now: float, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str] | None:
        """Judge one write (``before`` the live status it replaced, ``after`` the one written) at
        ``now``; returns the churned fields of the window when this write makes it a hot loop
        (once, at ``limit + 1``), else None."""
        while self._seen and self._seen[0][0] < now - self.seconds:
            self._seen.popleft()
        while self._churn and self._churn[0][0] < now - self.seconds:
            self._churn.popleft()
        old, new = status_fields(before), status_fields(after)
        changed = sorted(name for name in set(old) | set(new) if old.get(name) != new.get(name))
        returned = [name for name in changed if name in new
                    and any(fields.get(name) == new[name] for _, fields in self._seen)]
        self._returns = [(t, name) for t, name in self._returns if t >= now - self.seconds]
        repeated = [name for name in returned if sum(1 for _, n in self._returns if n == name) >= 2]
        self._returns += [(now, name) for name in returned]
        whole = any(fields == new for _, fields in self._seen)
        stamps_only = bool(changed) and all(_is_timestamp(new.get(name)) for name in changed)
        self._seen.append((now, old))
        if not (whole or repeated or stamps_only):
            return None
        self._churn.append((now, [f"{name}: {old.get(name)} -> {new.get(name)}" for name in (repeated or changed)]))
        if len(self._churn) != self.limit + 1:
            return None
        return sorted({text[:100] for _, texts in self._churn for text in texts})[:12]
