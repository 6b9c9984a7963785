"""What recording counts, and how a call not recorded is told: counters and a rate-limited warning.

``WRITTEN`` and ``FAILURES`` (by reason) are prometheus-client counters of this process; the warning
goes to the logger ``nvcre.hooks.record`` at most once per ``LOG_EVERY_SECONDS``, with the number
of calls not recorded since the last one.
"""

from __future__ import annotations

import logging
import threading
import time

from prometheus_client import Counter

log = logging.getLogger("nvcre.hooks.record")

LOG_EVERY_SECONDS = 60.0
"""Failures are counted every time, logged at most once per this many seconds (with a count)."""

FAILURE_REASONS = ("disk", "queue-full", "too-large", "incomplete", "error")
WRITTEN = Counter("nvcre_record_written_total", "Hook calls recorded as scenario folders.")
FAILURES = Counter(
    "nvcre_record_failures_total",
    "Hook calls not recorded, by reason: disk (the write failed), queue-full (dropped, the writer "
    "was behind), too-large (alone over NVCRE_RECORD_MAX_BYTES), incomplete (the pods were not kept), error "
    "(writing it failed unexpectedly: a bug, the message says what).",
    ["reason"],
)
for _reason in FAILURE_REASONS:
    FAILURES.labels(reason=_reason)


class FailureLog:
    """Counts and tells the calls one recorder did not record; safe from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_log = -LOG_EVERY_SECONDS
        self._unlogged = 0

    def failed(self, reason: str, message: str) -> None:
        """Counts a call not recorded (``reason``, one of ``FAILURE_REASONS``); logs ``message`` at
        most once per LOG_EVERY_SECONDS, naming how many more were not recorded meanwhile."""
        FAILURES.labels(reason=reason).inc()
        now = time.monotonic()
        with self._lock:
            if now - self._last_log < LOG_EVERY_SECONDS:
                self._unlogged += 1
                return
            unlogged, self._unlogged, self._last_log = self._unlogged, 0, now
        more = f" ({unlogged} more not recorded since the last message)" if unlogged else ""
        log.warning("recording: %s%s", message, more, extra={"fields": {"reason": reason}})
