"""The recorder: answered hook calls queued by the hook thread, written by one background thread.

The hook thread only enqueues (bounded queue, bounded pending bytes) and never waits; the writer
thread, started on the first call (after gunicorn forked the worker), turns each call into its
files (``hooks.tools.record.call``) and puts them in the bounded directory
(``hooks.tools.record.store``). A call not recorded is counted and told
(``hooks.tools.record.failures``); nothing here ever changes or delays the answer. The recorder
is middleware of the server (``wrap``), given to ``hooks.server.app.create_app`` by the composition
root (``hooks.wsgi``): it uses the server's types, and the server never imports it.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from hooks.server.config import Settings
from hooks.server.effects import Effects
from hooks.server.freshness import ParentVersions
from hooks.server.handler import Answer, HookResult
from hooks.tools.record.call import Call, folder_name, scenario_files
from hooks.tools.record.failures import WRITTEN, FailureLog
from hooks.tools.record.store import FolderStore
from podread import Reader

log = logging.getLogger("nvcre.hooks.record")

DEFAULT_MAX_COUNT = 100
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
"""Small enough for the Deployment's in-memory /tmp (an emptyDir of 64Mi shared with the metrics files)."""
DEFAULT_QUEUE_SIZE = 32
class Recorder:
    """Writes answered hook calls into ``directory`` as scenario folders, in a background thread.

    ``max_count`` and ``max_bytes`` bound the directory; ``queue_size`` bounds the calls waiting to
    be written (their request bytes are also bounded, by ``max_bytes``). The writer thread starts
    on the first call (after gunicorn forked the worker) and is a daemon.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        max_count: int = DEFAULT_MAX_COUNT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        queue_size: int = DEFAULT_QUEUE_SIZE,
    ) -> None:
        if max_count < 1 or max_bytes < 1 or queue_size < 1:
            raise ValueError("max_count, max_bytes and queue_size must be at least 1")
        self.directory = Path(directory)
        self.max_count = max_count
        self.max_bytes = max_bytes
        self._store = FolderStore(self.directory, max_count=max_count, max_bytes=max_bytes)
        self._failures = FailureLog()
        self._queue: queue.Queue[Call | None] = queue.Queue(maxsize=queue_size)
        self._lock = threading.Lock()
        self._pending_bytes = 0
        self._thread: threading.Thread | None = None
        self._closed = False
        self._sequence = itertools.count()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Recorder | None:
        """The recorder ``NVCRE_RECORD_DIR`` asks for, or ``None`` when it is unset or blank.

        ``NVCRE_RECORD_MAX_COUNT`` (default 100 folders) and ``NVCRE_RECORD_MAX_BYTES`` (default
        16 MiB) bound the directory. Raises ``ValueError`` naming the variable on a bad value. The
        directory itself is not touched here: a disk problem shows on the first write, as a logged
        and counted failure, and never stops the server.
        """
        env = os.environ if env is None else env
        directory = env.get("NVCRE_RECORD_DIR", "").strip()
        if not directory:
            return None
        max_count = _positive_int(env, "NVCRE_RECORD_MAX_COUNT", DEFAULT_MAX_COUNT)
        max_bytes = _positive_int(env, "NVCRE_RECORD_MAX_BYTES", DEFAULT_MAX_BYTES)
        log.info("recording hook calls into %s (at most %d folders, %d bytes)", directory, max_count, max_bytes)
        return cls(directory, max_count=max_count, max_bytes=max_bytes)

    def wrap(self, answer: Answer) -> Answer:
        """The recorder as middleware of the app (``hooks.server.app.create_app(middleware=...)``):
        ``answer`` with the pods kept and the clock's time noted, each answered call then
        ``submit``ted with the request it was decided on (``HookResult.decided_on``: a replay gives the
        same answer). Returns ``answer``'s result unchanged."""

        def recorded(raw: bytes, hook: str, *, reader: Reader, clock: Callable[[], datetime], settings: Settings,
                     keep_pods: bool = False, effects: Effects | None = None,
                     parents: ParentVersions | None = None) -> HookResult:
            seen: list[datetime] = []

            def noted_clock() -> datetime:
                moment = clock()
                seen.append(moment)
                return moment

            result = answer(raw, hook, reader=reader, clock=noted_clock, settings=settings, keep_pods=True,
                            effects=effects, parents=parents)
            # the request the answer was decided on: the live Job in place of a parent that was behind it
            self.submit(hook, result.decided_on or raw, result, now=seen[0] if seen else None, settings=settings)
            return result

        return recorded

    def submit(
        self, hook: str, raw: bytes, result: HookResult, *, now: datetime | None, settings: Settings
    ) -> bool:
        """Queues one answered call for writing; never blocks. Returns whether it was queued: a request
        over ``max_bytes`` is dropped as ``too-large``; a full queue, or queued requests adding up to
        more than ``max_bytes``, drops the call as ``queue-full``."""
        if len(raw) > self.max_bytes:
            self._failures.failed("too-large",
                                  f"{hook} call not recorded: its request alone is over {self.max_bytes} bytes")
            return False
        call = Call(hook, raw, result, now, settings, datetime.now(UTC))
        with self._lock:
            if self._closed:
                return False
            if self._pending_bytes + len(raw) > self.max_bytes:
                queued = False
            else:
                try:
                    self._queue.put_nowait(call)
                    self._pending_bytes += len(raw)
                    queued = True
                except queue.Full:
                    queued = False
            if queued and self._thread is None:
                self._thread = threading.Thread(target=self._run, name="nvcre-recorder", daemon=True)
                self._thread.start()
                atexit.register(self.close, 2.0)
        if not queued:
            self._failures.failed("queue-full", f"{hook} call not recorded: the writer is behind")
        return queued

    def flush(self, timeout: float = 5.0) -> bool:
        """Waits until every queued call was written (or failed); ``False`` if ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True

    def close(self, timeout: float = 5.0) -> None:
        """Writes what is queued (waiting at most ``timeout``) and stops the writer thread; calls
        submitted afterwards are ignored. Runs at interpreter exit too (a gunicorn worker stopping)."""
        with self._lock:
            thread, self._thread, self._closed = self._thread, None, True
        if thread is None:
            return
        self.flush(timeout)
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        thread.join(timeout)

    def _run(self) -> None:
        """The writer thread: writes queued calls one at a time until it gets ``None``. A call that
        fails in a way ``write`` does not expect is counted (``error``) and the thread goes on: one
        odd request must not end the recording of every later call."""
        while True:
            call = self._queue.get()
            try:
                if call is None:
                    return
                self.write(call)
            except Exception as exc:  # the writer outlives any one call
                self._failures.failed("error", f"{call.hook} call not recorded: {type(exc).__name__}: {exc}")
            finally:
                if call is not None:
                    with self._lock:
                        self._pending_bytes -= len(call.raw)
                self._queue.task_done()

    def write(self, call: Call) -> Path | None:
        """Writes one call as a scenario folder; returns its path, or ``None`` when it was not
        recorded (counted and logged). Never raises for a disk or content problem."""
        name = folder_name(call, next(self._sequence))
        try:
            files = scenario_files(call)
        except ValueError as exc:
            self._failures.failed("incomplete", f"{name} not recorded: {exc}")
            return None
        size = sum(len(data) for data in files.values())
        if size > self.max_bytes:
            self._failures.failed("too-large", f"{name} not recorded: {size} bytes, over the limit of {self.max_bytes}")
            return None
        try:
            path = self._store.put(name, files, size)
        except OSError as exc:
            self._failures.failed("disk", f"{name} not recorded in {self.directory}: {exc}")
            return None
        WRITTEN.inc()
        log.debug("recorded %s", path)
        return path


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    """``env[name]`` as a whole number of at least 1, ``default`` when unset or blank."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw, 10)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not valid: must be a whole number") from None
    if value < 1:
        raise ValueError(f"{name}={raw!r} is not valid: must be at least 1")
    return value
