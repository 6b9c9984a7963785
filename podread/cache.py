"""PodCache: the label-scoped Pod cache, fed by a watch or filled by lists, bounded by a TTL.

It holds only pods that carry JOB_LABEL, slim (``podread.slim``)."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Hashable, Sequence

import cachetools

from podread import calldeadline
from podread.cached import CachedRead
from podread.constants import JOB_INDEX_FIELD, JOB_LABEL, NODE_NAME_INDEX_FIELD
from podread.errors import CacheScopeError, DeadlineExceeded, NoSourceError, PodReadError
from podread.metrics import ReadMetrics, default_metrics
from podread.selector import Counted, Pod, PodLister, PodSelector, counted
from podread.slim import slim
from podread.watch import PodWatch

DEFAULT_TTL_SECONDS = 5.0
DEFAULT_MAX_ENTRIES = 10_000


class _Fill:
    """One list in flight for one cache key; the threads that miss the same key wait on it."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self.pods: Counted | None = None
        self.error: BaseException | None = None

    def finish(self, pods: Counted | None, error: BaseException | None) -> None:
        self.pods, self.error = pods, error
        self._done.set()

    def wait(self) -> Counted:
        """The fill's pods, or its error; within the hook call's deadline when one is in force
        (``DeadlineExceeded`` when the fill is not done by then)."""
        left = calldeadline.remaining()
        if not self._done.wait(None if left is None else max(0.0, left)):
            raise DeadlineExceeded("waited for a cache fill another read had started until the hook call's "
                                   "deadline for reads passed")
        if self.error is not None:
            shared = copy.copy(self.error)
            raise shared from self.error
        assert self.pods is not None
        return self.pods


class PodCache:
    """Pods that carry JOB_LABEL, listed from ``source`` and kept for ``ttl_seconds``.

    Reads: ``list_pods(selector)`` answers two kinds of selector, each through one key:
    - a job: ``labels`` holds JOB_LABEL=<job> (namespace optional) -> key (JOB_INDEX_FIELD, ns, job);
      the fill lists ``JOB_LABEL=<job>`` in that namespace.
    - a node: ``node_name`` is set and the selector requires JOB_LABEL (as a term or a value) -> key
      (NODE_NAME_INDEX_FIELD, node); the fill lists ``JOB_LABEL`` (exists) with ``spec.nodeName=<node>``
      in all namespaces.
    Any other selector raises ``CacheScopeError``: the cache never goes to the API server for pods it
    cannot hold. The pods returned are the entry's pods that match the whole selector. It is the
    Reader's ``CachedLister`` (``podread.cached``): ``read`` answers the same pods in a
    ``CachedRead`` that also names ``source`` when this very call listed them.

    Sources, in order (``watches`` empty is TTL mode, ``NVCRE_CACHE_MODE=ttl``):
    - the watch (``watches``: ``PodWatch``es, one per scope): a key in a watch's scope is answered
      from its pods, with no API call, while that watch confirmed them less than ``ttl_seconds``
      ago (``WatchedPods.answer``). The first read of a key in its scope starts the watch (in this
      process: after a fork, the child starts its own). Answered pods were never listed by this
      call (``read`` says ``False``), so ``Reader.active_job_pods`` still asks the API server when
      they show no active pod.
    - otherwise (the watch is down, lagging past the TTL, not synced yet, or the key is outside
      its scope) the TTL entry, filled from ``source`` as below: a broken watch never makes the
      cache older than a TTL entry.

    Freshness of a TTL entry: at most ``ttl_seconds`` old (measured on ``clock``, from when its list
    returned); a key costs at most one successful list per TTL, whatever the number of reads (a
    failed list stores nothing, so the next read lists again). Concurrent misses
    of one key share one list. A failed list raises ``PodReadError`` to every reader waiting for it
    and stores nothing: an error is never cached, and never becomes "no pods".

    Bounds: at most ``max_entries`` TTL keys (least recently used evicted first). Pods are stored
    slim (``podread.slim.slim``: identity, labels, timestamps, node, phase); a pod without JOB_LABEL
    in a list is dropped, never stored. Thread-safe. Callers must not mutate returned pods.
    """

    def __init__(
        self,
        source: PodLister | None,
        *,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
        metrics: ReadMetrics | None = None,
        no_source_reason: str = "the cache has no source to list pods from",
        watches: Sequence[PodWatch] = (),
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError(f"ttl_seconds must be > 0, got {ttl_seconds}")
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self._source = source
        self._no_source_reason = no_source_reason
        self._entries: cachetools.TTLCache[Hashable, Counted] = cachetools.TTLCache(
            maxsize=max_entries, ttl=ttl_seconds, timer=clock
        )
        self._fills: dict[Hashable, _Fill] = {}
        self._lock = threading.Lock()
        self._metrics = metrics or default_metrics()
        self.ttl_seconds = ttl_seconds
        self.max_entries = max_entries
        self.watches = tuple(watches)

    def close(self) -> None:
        """Stops the watches (if any). Reads still work afterwards, from TTL fills."""
        for watch in self.watches:
            watch.stop()

    def list_pods(self, selector: PodSelector) -> list[Pod]:
        """Returns the cached pods ``selector`` selects, filling its key first when absent or expired."""
        return self.read(selector).pods

    def read(self, selector: PodSelector) -> CachedRead:
        """Like ``list_pods`` (``CachedLister``), and says whether this very call listed the pods from
        the source (it filled the entry itself: ``listed_from`` is ``source``), rather than answering
        from the watch, an entry listed earlier or a fill another thread had started (``None``). The
        Reader uses it to skip a second, identical API read.
        """
        key, fill_selector = self._key(selector)
        entry, filled = self._get(key, fill_selector)
        listed_from = self._source if filled else None
        if selector is fill_selector or selector == fill_selector:  # every job read: the entry is the answer
            return CachedRead(list(entry.pods), listed_from, entry.active)
        return CachedRead([pod for pod in entry.pods if selector.matches(pod)], listed_from)

    def departed_pods(self, namespace: str, workload: str) -> list[Pod]:
        """The departed pods of ``workload`` in ``namespace`` that the watch covering ``namespace``
        saw deleted (``WatchedPods.departed``: bounded, as last seen, annotated); empty in TTL mode
        or when no watch covers the namespace. Starts no watch and sends no request."""
        for watch in self.watches:
            if watch.store.covers((JOB_INDEX_FIELD, namespace, "")):
                return watch.store.departed(namespace, workload)
        return []

    @property
    def source(self) -> PodLister | None:
        """What the cache lists pods from (normally the Reader's live client)."""
        return self._source

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @staticmethod
    def _key(selector: PodSelector) -> tuple[tuple[str, ...], PodSelector]:
        """The entry ``selector`` is answered from and the selector that fills it (``selector``
        itself when it selects exactly that); raises ``CacheScopeError`` for any other selector."""
        job = selector.labels.get(JOB_LABEL)
        if job is not None:
            key = (JOB_INDEX_FIELD, selector.namespace or "", job)
            if len(selector.labels) == 1 and not selector.has_labels and not selector.label_in \
                    and selector.node_name is None:
                return key, selector  # already the fill's selector (every job read): no second one built
            return key, PodSelector(namespace=selector.namespace, labels={JOB_LABEL: job})
        if selector.node_name is not None and JOB_LABEL in selector.has_labels:
            return (NODE_NAME_INDEX_FIELD, selector.node_name), PodSelector(
                has_labels=(JOB_LABEL,), node_name=selector.node_name
            )
        raise CacheScopeError(
            f"the pod cache holds only pods labelled {JOB_LABEL} and answers reads by job or by node; "
            f"it cannot answer {selector.describe()}"
        )

    def _get(self, key: tuple[str, ...], fill_selector: PodSelector) -> tuple[Counted, bool]:
        """The entry for ``key`` (its pods, counted once: ``Counted``; never to be mutated) and
        whether this call filled it; fills it (once) when missing."""
        index = key[0]
        for watch in self.watches:
            if watch.store.covers(key):
                watch.start()
                watched = watch.store.counted_answer(key)
                if watched is not None:
                    self._metrics.lookup(index, "watch").inc()
                    return watched, False
                break
        with self._lock:
            try:  # one lookup (TTLCache.get asks __contains__, then __getitem__: two, each reading the clock)
                entry: Counted | None = self._entries[key]
            except KeyError:  # missing, or expired
                entry = None
            if entry is not None:
                self._metrics.lookup(index, "hit").inc()
                return entry, False
            fill = self._fills.get(key)
            leader = fill is None
            if fill is None:
                fill = self._fills[key] = _Fill()
        if not leader:
            self._metrics.lookup(index, "shared").inc()
            return fill.wait(), False
        self._metrics.lookup(index, "miss").inc()
        pods: Counted | None = None
        error = None
        try:
            pods = counted(self._list(fill_selector))
        except PodReadError as exc:
            error = exc
        except Exception as exc:  # a lister bug must reach every waiter as a read failure, not hang them
            error = PodReadError(f"unexpected error while filling the cache: {exc!r}", code="unexpected")
            error.__cause__ = exc
        with self._lock:
            del self._fills[key]
            if pods is not None:
                self._entries[key] = pods
        # Waiters get copies of the error as it is now: the Reader names its own method on the one
        # it raises, and each waiter's Reader must name its own.
        fill.finish(pods, copy.copy(error) if error is not None else None)
        self._metrics.fill(index, "ok" if error is None else "error").inc()
        if error is not None:
            raise error
        assert pods is not None
        return pods, True

    def _list(self, fill_selector: PodSelector) -> list[Pod]:
        if self._source is None:
            raise NoSourceError(self._no_source_reason, source="cache")
        listed = self._source.list_pods(fill_selector)
        # Keep exactly what the fill selected (which always requires JOB_LABEL), whatever the source
        # returned: no pod without the label is ever stored, and a hit needs no filtering.
        return [slim(pod) for pod in listed if fill_selector.matches(pod)]
