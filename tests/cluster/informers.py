"""client-go's informers for the Metacontroller stand-in's ``serve`` (tests/cluster/metacontroller.py):
one ``Informer`` (a store and its event handler) fed by one ``Reflector`` (a thread that lists and
watches one resource of one namespace), as Metacontroller's shared informers are.

- ``Reflector`` (client-go ``tools/cache/reflector.go``): LIST, then WATCH from the list's
  resourceVersion with ``allowWatchBookmarks``; a watch the server ends (its ``timeoutSeconds``)
  is made again from the last resourceVersion seen (a bookmark moves it on), without a list; a
  ``410 Gone`` (an ERROR event or the watch's own answer) lists again at once; a stream that breaks
  (the connection cut, the server away) or a list that fails lists again after a backoff (0.8 s,
  doubling to 30 s, reset by a list that succeeds). ``close`` shuts the open stream down, so that a
  stop is prompt. The watch is one long request: not taken through the client's QPS.
- ``Informer``: each event updates the store at once and then calls the handler with ``(old, new)``
  (``old`` ``None``: added; ``new`` ``None``: deleted), as client-go's processor calls
  ``OnAdd``/``OnUpdate``/``OnDelete``; a list replaces the store (``Replace``): every listed object
  is an update of the one held (its resourceVersion maybe unchanged) or an add, every object held
  and not listed a delete. With a ``lag`` (``Staleness``, the tier's simulated staleness) an event
  is applied ``lag`` seconds after it came; after a failure, the events of the list that follows and
  of the ``restart_lag`` seconds after it are held until then (what the store held before the
  failure is served meanwhile).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

Obj = dict[str, Any]
StoreKey = tuple[str, str]
"""namespace (``""`` for a cluster-scoped object) and name: client-go's ``MetaNamespaceKeyFunc``."""
Notification = tuple[Obj | None, Obj | None]
"""(old, new): an add has no old, a delete no new."""

WATCH_SECONDS = 300.0
"""Each watch request's ``timeoutSeconds`` (client-go: 5-10 minutes at random); a watch that ends is made again."""
BACKOFF_FIRST, BACKOFF_MAX = 0.8, 30.0
"""client-go's reflector backoff: 800 ms, doubling, at most 30 s."""


def store_key(obj: Obj) -> StoreKey:
    metadata = obj["metadata"]
    return str(metadata.get("namespace") or ""), str(metadata["name"])


class Informer:
    """One informer's store (module doc): ``replace`` and ``event`` take what the reflector got at
    ``now``, ``pump(now)`` applies what is due, under the informer's lock, and hands the store
    (a copy) and the notifications to ``install``, still under the lock (so two pumps never
    install out of order). ``synced`` once a list was applied."""

    def __init__(self, kind: str, namespace: str, install: Callable[[Informer, dict[StoreKey, Obj],
                                                                     list[Notification]], None], *,
                 lag: float = 0.0, restart_lag: float = 0.0) -> None:
        self.kind, self.namespace, self.install = kind, namespace, install
        self.lag, self.restart_lag = lag, restart_lag
        self.store: dict[StoreKey, Obj] = {}
        self.synced = False
        self.broken = False
        self.hold_until = -float("inf")
        self._pending: deque[tuple[float, str, Any]] = deque()
        self._lock = threading.RLock()

    def replace(self, now: float, objects: list[Obj]) -> None:
        """A list's objects (client-go ``Replace``); after a failure, held ``restart_lag`` more."""
        with self._lock:
            if self.broken:
                self.broken = False
                if self.restart_lag > 0:
                    self.hold_until = max(self.hold_until, now + self.restart_lag)
            self._pending.append((self._due(now), "REPLACE", objects))
        self.pump(now)

    def event(self, now: float, kind: str, obj: Obj) -> None:
        """A watch event: ``ADDED``, ``MODIFIED`` or ``DELETED``."""
        with self._lock:
            self._pending.append((self._due(now), kind, obj))
        self.pump(now)

    def failed(self) -> None:
        """The list or the watch failed: the next list is the one after an outage."""
        with self._lock:
            self.broken = True

    def restarted(self, now: float) -> None:
        """The stale-after-restart mode on demand: what arrives in the next ``restart_lag`` seconds waits."""
        with self._lock:
            self.hold_until = now + self.restart_lag

    def pump(self, now: float) -> None:
        """Applies every pending change due at ``now``, in order, then installs the store."""
        with self._lock:
            notes: list[Notification] = []
            applied = False
            while self._pending and self._pending[0][0] <= now:
                _, kind, payload = self._pending.popleft()
                notes += self._apply(kind, payload)
                applied = True
            if applied:
                self.install(self, dict(self.store), notes)

    def _due(self, now: float) -> float:
        return max(now + self.lag, self.hold_until)

    def _apply(self, kind: str, payload: Any) -> list[Notification]:
        if kind == "REPLACE":
            listed = {store_key(obj): obj for obj in payload}
            notes: list[Notification] = [(self.store.get(key), obj) for key, obj in listed.items()]
            notes += [(old, None) for key, old in self.store.items() if key not in listed]
            self.store = listed
            self.synced = True
            return notes
        key = store_key(payload)
        if kind == "DELETED":
            return [(self.store.pop(key, payload), None)]
        old = self.store.get(key)
        self.store[key] = payload
        return [(old, payload)]


class Source(Protocol):
    """What a reflector asks of the server (``tests.cluster.metacontroller.ApiBackend``)."""

    def list_objects(self, kind: str, namespace: str) -> tuple[list[Obj], str]: ...

    def watch(self, kind: str, namespace: str, resource_version: str, seconds: float) -> Any: ...


class Gone(Exception):
    """The watch's resourceVersion is too old (410): list again."""


class Broken(Exception):
    """The stream broke before the server ended it."""


@dataclass
class Reflector:
    """Lists and watches ``informer``'s resource through ``source`` until ``stop`` (module doc);
    ``errors`` gets a line per failure. ``run`` is the thread's body."""

    informer: Informer
    source: Source
    stop: threading.Event
    errors: list[str]
    watch_seconds: float = WATCH_SECONDS
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self._response: Any = None
        self._lock = threading.Lock()

    def run(self) -> None:
        version = ""
        backoff = BACKOFF_FIRST
        informer = self.informer
        while not self.stop.is_set():
            try:
                if not version:
                    objects, version = self.source.list_objects(informer.kind, informer.namespace)
                    informer.replace(self.clock(), objects)
                    backoff = BACKOFF_FIRST
                version = self._watch(version)
            except Gone:
                version = ""
            except Exception as exc:  # a failed list or a broken stream: list again after the backoff
                if self.stop.is_set():
                    return
                informer.failed()
                self.errors.append(f"{informer.kind} in {informer.namespace or 'the cluster'}: {exc!r}")
                version = ""
                self.stop.wait(backoff)
                backoff = min(BACKOFF_MAX, backoff * 2)

    def close(self) -> None:
        """Shuts the open stream down (``run`` then ends at once once ``stop`` is set). A stream
        opened after this call under a set ``stop`` is shut down by ``_watch`` as it stores it: the
        two meet under ``_lock``, so a stop never misses a watch that was being opened."""
        with self._lock:
            response = self._response
        if response is not None:
            with contextlib.suppress(Exception):  # already closed or released
                response.shutdown()

    def _watch(self, version: str) -> str:
        """One watch request from ``version``: its events to the informer; returns the last
        resourceVersion seen when the server ended it. Raises ``Gone`` (410) or ``Broken``."""
        try:
            response = self.source.watch(self.informer.kind, self.informer.namespace, version, self.watch_seconds)
        except Exception as exc:
            if getattr(exc, "status", None) == 410:  # the watch's own answer: its resourceVersion is too old
                raise Gone(str(exc)) from exc
            raise
        with self._lock:
            self._response = response
            if self.stop.is_set():  # a stop whose close came while this request was on its way
                with contextlib.suppress(Exception):
                    response.shutdown()
        try:
            for event in _lines(response):
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        raise Gone(obj.get("message", "410"))
                    raise Broken(f"watch error: {obj}")
                version = (obj.get("metadata") or {}).get("resourceVersion") or version
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    self.informer.event(self.clock(), str(kind), obj)
        except BaseException:
            response.close()  # a stream left unread is not handed back to the pool
            raise
        else:
            response.release_conn()
        finally:
            with self._lock:
                self._response = None
        return version


def stream_events(response: Any) -> Generator[Obj, None, bytes]:
    """The watch events of a streamed urllib3 ``response`` (one JSON object a line), each as its line
    arrives. Returns what followed the last newline when the stream ended: empty when the server ended
    it after a whole event. A transport or JSON error is raised as it is."""
    buffer = b""
    for chunk in response.stream(1 << 16, decode_content=True):
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield orjson.loads(line)
    return buffer


def _lines(response: Any) -> Iterator[Obj]:
    """The watch events of a streamed response (``stream_events``). A stream cut before the server
    ended it (any error reading or decoding it, or an event left half sent) raises ``Broken``."""
    try:
        rest = yield from stream_events(response)
    except Exception as exc:
        raise Broken(repr(exc)) from exc
    if rest.strip():
        raise Broken("the stream ended inside an event")
