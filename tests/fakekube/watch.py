"""The fake API server's pod watch, served as kube-apiserver serves one (checked against its source,
k8s.io/apiserver v0.37 ``pkg/storage/cacher``, and the real server in ``tests/cluster``):

- ``GET .../pods?watch=true``: a 200 with ``Transfer-Encoding: chunked``, one JSON event per line,
  ``{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": ...}``; objects carry ``kind`` and
  ``apiVersion``.
- ``resourceVersion``: unset or ``"0"``: first a synthetic ADDED for every pod the selectors select,
  then the changes; ``N``: every change after N; N older than the kept history: one ERROR event
  whose object is a ``Status`` (code 410, reason ``Expired``), then the end of the stream (as the
  watch cache answers; the HTTP-410 form of the same refusal is a ``Fault``); N newer than the
  store: 504 ``Too large resource version``.
- Selectors apply to each change as the watch cache applies them: a pod that starts matching is an
  ADDED, one that stops matching a DELETED carrying its previous content under the change's
  resourceVersion (its labels as they were), one that matches before and after a MODIFIED, others
  are not sent. A deletion's event carries the deletion's resourceVersion.
- ``allowWatchBookmarks=true``: BOOKMARK events whose object has only ``metadata.resourceVersion``
  (and the zero values Go writes: ``creationTimestamp: null``, ``spec.containers: null``,
  ``status: {}``), due 2 s before the watch's timeout and every ``bookmark_interval`` (60 s on
  the real server), and on ``FakeKubeServer.bookmark()``. A bookmark carries the pods' watch cache
  resourceVersion (the last pod change anywhere, or the global resourceVersion at the last
  consistent list: the real cacher asks etcd for progress then), is sent only when nothing is
  pending for the watch, and only when that resourceVersion is newer than everything the watch has
  sent: a due bookmark with nothing new is skipped, as the real cacher skips it (so a quiet watch
  gets no bookmark until some pod changes or some client lists pods).
- ``timeoutSeconds``: the server ends the stream (a final zero-length chunk) after that long
  (default 1800 s; the real server picks 30-60 min).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from tests.fakekube.selectors import FieldSelector, LabelSelector
from tests.fakekube.store import Change, Entry, at_version, dumps

DEFAULT_TIMEOUT_SECONDS = 1800.0
PRE_TIMEOUT_BOOKMARK = 2.0


def bookmark_line(rv: int) -> bytes:
    """A BOOKMARK event as the real server writes one for pods."""
    obj = {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": str(rv), "creationTimestamp": None},
           "spec": {"containers": None}, "status": {}}
    return dumps({"type": "BOOKMARK", "object": obj}) + b"\n"


def expired_line(message: str) -> bytes:
    """The ERROR event of a watch from a resourceVersion the server no longer has."""
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
              "reason": "Expired", "code": 410}
    return dumps({"type": "ERROR", "object": status}) + b"\n"


def event_line(kind: str, raw: bytes) -> bytes:
    """An ADDED/MODIFIED/DELETED event around a stored pod's compact JSON (list-item form)."""
    return b'{"type":"' + kind.encode() + b'","object":{"kind":"Pod","apiVersion":"v1",' + raw[1:] + b"}\n"


class Watcher:
    """One open watch: its selectors, its pending lines, its clock. Fed by the store under its lock."""

    def __init__(self, namespace: str | None, labels: LabelSelector, fields: FieldSelector, *, timeout: float,
                 bookmarks: bool, bookmark_interval: float, start_rv: int = 0) -> None:
        self.namespace, self.labels, self.fields = namespace, labels, fields
        self.bookmarks = bookmarks
        self._seen_rv = start_rv
        self._cond = threading.Condition()
        self._pending: list[tuple[int, bytes]] = []
        self._sent_rv = start_rv
        self._held = False
        self._held_lines: list[tuple[int, bytes]] = []
        self._broken = False
        self._ended = False
        self._bookmark_now = False
        started = time.monotonic()
        self.deadline = started + timeout
        self._bookmark_interval = bookmark_interval
        self._next_bookmark = started + bookmark_interval
        self._pre_timeout_sent = timeout <= PRE_TIMEOUT_BOOKMARK

    # -- feeding -----------------------------------------------------------------------------------

    def selects(self, entry: Entry | None) -> bool:
        """Whether this watch's selectors select ``entry``."""
        if entry is None:
            return False
        if self.namespace is not None and entry.key[0] != self.namespace:
            return False
        if self.labels.requirements and not self.labels.matches(entry.labels):
            return False
        return not self.fields.terms or self.fields.matches(entry.fields)

    def line_for(self, change: Change) -> bytes | None:
        """The event this watch sends for ``change``, or ``None``."""
        if change.old is None and change.new is None:
            return None  # progress of the watch cache, no object
        before, after = self.selects(change.old), self.selects(change.new)
        if change.new is None:
            return event_line("DELETED", change.raw) if before else None
        if after:
            return event_line("MODIFIED" if before else "ADDED", change.raw)
        if before and change.old is not None:
            return event_line("DELETED", at_version(change.old, change.rv))
        return None

    def offer(self, change: Change) -> None:
        """A store listener (called in the order of the changes): queues the event ``change`` makes
        for this watch, if any, and notes that every change up to ``change.rv`` has been queued."""
        line = self.line_for(change)
        with self._cond:
            if line is not None:
                (self._held_lines if self._held else self._pending).append((change.rv, line))
            self._seen_rv = max(self._seen_rv, change.rv)
            self._cond.notify_all()

    def started_at(self, rv: int) -> None:
        """The watch cache's resourceVersion when this watch subscribed (where it starts)."""
        with self._cond:
            self._seen_rv = max(self._seen_rv, rv)
            self._sent_rv = max(self._sent_rv, rv)

    def push(self, lines: list[tuple[int, bytes]]) -> None:
        """Queues ``(resourceVersion, line)`` pairs as they are (held back while ``hold`` is in force)."""
        with self._cond:
            (self._held_lines if self._held else self._pending).extend(lines)
            self._cond.notify_all()

    def hold(self) -> None:
        """Holds back the events from now on (neither sent nor bookmarked past)."""
        with self._cond:
            self._held = True

    def release(self, reverse: bool = False) -> None:
        """Sends the held events, in reverse order with ``reverse`` (out of order)."""
        with self._cond:
            lines = self._held_lines[::-1] if reverse else self._held_lines
            self._pending.extend(lines)
            self._held_lines, self._held = [], False
            self._cond.notify_all()

    def bookmark(self) -> None:
        """Asks for a bookmark now."""
        with self._cond:
            self._bookmark_now = True
            self._cond.notify_all()

    def break_(self) -> None:
        """Cuts the stream: the connection is dropped without its final chunk."""
        with self._cond:
            self._broken = True
            self._cond.notify_all()

    def end(self) -> None:
        """Ends the stream cleanly (as at its timeout)."""
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    # -- serving -----------------------------------------------------------------------------------

    def next_lines(self, stopping: threading.Event, gone: Callable[[], bool]) -> tuple[list[bytes], bool]:
        """Waits for something to send: (lines, finished). Raises ``ConnectionError`` when broken, the
        server stops or the client went away (``gone``, checked at least every 0.2 s)."""
        with self._cond:
            while True:
                if self._broken or stopping.is_set() or gone():
                    raise ConnectionError("fakekube: watch broken")
                if self._pending:
                    pending, self._pending = self._pending, []
                    self._sent_rv = max([self._sent_rv, *(rv for rv, _ in pending)])
                    return [line for _, line in pending], False
                now = time.monotonic()
                if self._ended or now >= self.deadline:
                    return [], True
                due = self._bookmark_due(now)
                if due and not self._held_lines and not self._held and self._seen_rv > self._sent_rv:
                    self._sent_rv = self._seen_rv
                    return [bookmark_line(self._seen_rv)], False
                wake = min(self.deadline, self._next_wake())
                self._cond.wait(max(0.0, min(wake - now, 0.2)))

    def _next_wake(self) -> float:
        wake = self._next_bookmark if self.bookmarks else float("inf")
        if self.bookmarks and not self._pre_timeout_sent:
            wake = min(wake, self.deadline - PRE_TIMEOUT_BOOKMARK)
        return wake

    def _bookmark_due(self, now: float) -> bool:
        """Whether a bookmark is due now (and books it as sent)."""
        if not self.bookmarks:
            self._bookmark_now = False
            return False
        due = self._bookmark_now or now >= self._next_bookmark
        if not self._pre_timeout_sent and now >= self.deadline - PRE_TIMEOUT_BOOKMARK:
            self._pre_timeout_sent = due = True
        if due:
            self._bookmark_now = False
            self._next_bookmark = now + self._bookmark_interval
        return due


def initial_lines(watcher: Watcher, backlog: list[Change], entries: list[Entry]) -> list[bytes]:
    """What a new watch sends first: synthetic ADDEDs (from "now"/"any") or the changes since its RV."""
    lines = [event_line("ADDED", entry.raw) for entry in entries if watcher.selects(entry)]
    for change in backlog:
        line = watcher.line_for(change)
        if line is not None:
            lines.append(line)
    return lines


def lines_for(watcher: Watcher, changes: list[Change]) -> list[tuple[int, bytes]]:
    """``(resourceVersion, line)`` of the events ``changes`` make for ``watcher``."""
    return [(change.rv, line) for change in changes if (line := watcher.line_for(change)) is not None]


def parse_timeout(query: dict[str, str] | Any) -> float:
    """``timeoutSeconds`` as seconds (default ``DEFAULT_TIMEOUT_SECONDS``); ``ValueError`` if bad."""
    text = query.get("timeoutSeconds", "")
    if not text:
        return DEFAULT_TIMEOUT_SECONDS
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return float(value) if value else DEFAULT_TIMEOUT_SECONDS
