"""Recording real hook calls as scenario folders (``NVCRE_RECORD_DIR``), off by default.

Each hook call the server answers becomes one folder in the layout of ``tests/payloads/``
(``hooks.tools.scenario``): request.json, pods.json (the pods its Reader read, from
``podread.recording(keep_pods=True)``), meta.json (hook, the clock's ``now``, duration, decision) and
response.json. Copying the folder under ``tests/payloads/`` makes it a regression test, and
``python -m hooks replay FOLDER --diff`` replays it.

Guarantees:
- Bounded: at most ``max_count`` folders and ``max_bytes`` bytes in the directory; the oldest
  folders (by name, which starts with the UTC time) are dropped first to make room.
- Atomic: a folder is written into a ``.tmp-*`` directory next to it, every file and the directory
  fsynced, then renamed into place; a folder being dropped is renamed to ``.del-*`` before it is
  removed. Readers never see a half-written or half-removed folder.
- Never in the hook's way: the hook thread only enqueues (bounded queue, bounded pending bytes);
  one background thread per process writes. A full queue drops the call; a write that fails is
  logged and counted in ``nvcre_record_failures_total``; neither ever changes or delays the answer.
- No secrets: the hooks never read Secrets, and the one secret the server handles, the bearer
  token, travels in the Authorization header, which is never recorded (only the body is).
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import queue
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prometheus_client import Counter

from hooks.server.config import Settings
from hooks.server.effects import Effects
from hooks.server.handler import HookResult, handle
from hooks.tools.replay import RECORDED_SETTINGS
from hooks.tools.scenario import META, PODS, REQUEST, RESPONSE, dump, format_time, pods_document, request_bytes
from podread import Reader

log = logging.getLogger("nvcre.hooks.record")

DEFAULT_MAX_COUNT = 100
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
"""Small enough for the Deployment's in-memory /tmp (an emptyDir of 64Mi shared with the metrics files)."""
DEFAULT_QUEUE_SIZE = 32
STALE_TEMP_SECONDS = 600.0
"""A ``.tmp-*``/``.del-*`` entry older than this was left by a process that died mid-write."""
LOG_EVERY_SECONDS = 60.0
"""Failures are counted every time, logged at most once per this many seconds (with a count)."""

FAILURE_REASONS = ("disk", "queue-full", "too-large", "incomplete")
WRITTEN = Counter("nvcre_record_written_total", "Hook calls recorded as scenario folders.")
FAILURES = Counter(
    "nvcre_record_failures_total",
    "Hook calls not recorded, by reason: disk (the write failed), queue-full (dropped, the writer "
    "was behind), too-large (alone over NVCRE_RECORD_MAX_BYTES), incomplete (the pods were not kept).",
    ["reason"],
)
for _reason in FAILURE_REASONS:
    FAILURES.labels(reason=_reason)

_NAME_UNSAFE = re.compile(r"[^a-z0-9.-]+")


@dataclass(frozen=True)
class _Call:
    """One answered hook call waiting to be written."""

    hook: str
    raw: bytes
    result: HookResult
    now: datetime | None
    settings: Settings
    at: datetime


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
        self._queue: queue.Queue[_Call | None] = queue.Queue(maxsize=queue_size)
        self._lock = threading.Lock()
        self._pending_bytes = 0
        self._thread: threading.Thread | None = None
        self._closed = False
        self._sequence = itertools.count()
        self._swept = False
        self._last_log = -LOG_EVERY_SECONDS
        self._unlogged = 0

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

    def handle(
        self, raw: bytes, hook: str, *, reader: Reader, clock: Callable[[], datetime], settings: Settings,
        effects: Effects | None = None,
    ) -> HookResult:
        """``hooks.server.handler.handle`` with the pods kept and the clock's time noted, then ``submit``:
        what the app calls instead of ``handle`` when recording is on. Returns ``handle``'s result."""
        seen: list[datetime] = []

        def noted_clock() -> datetime:
            moment = clock()
            seen.append(moment)
            return moment

        result = handle(raw, hook, reader=reader, clock=noted_clock, settings=settings, keep_pods=True,
                        effects=effects)
        self.submit(hook, raw, result, now=seen[0] if seen else None, settings=settings)
        return result

    def submit(
        self, hook: str, raw: bytes, result: HookResult, *, now: datetime | None, settings: Settings
    ) -> bool:
        """Queues one answered call for writing; never blocks. Returns whether it was queued: a request
        over ``max_bytes`` is dropped as ``too-large``; a full queue, or queued requests adding up to
        more than ``max_bytes``, drops the call as ``queue-full``."""
        if len(raw) > self.max_bytes:
            self._failed("too-large", f"{hook} call not recorded: its request alone is over {self.max_bytes} bytes")
            return False
        call = _Call(hook, raw, result, now, settings, datetime.now(UTC))
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
            self._failed("queue-full", f"{hook} call not recorded: the writer is behind")
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
        """The writer thread: writes queued calls one at a time until it gets ``None``."""
        while True:
            call = self._queue.get()
            try:
                if call is None:
                    return
                self.write(call)
            finally:
                if call is not None:
                    with self._lock:
                        self._pending_bytes -= len(call.raw)
                self._queue.task_done()

    def write(self, call: _Call) -> Path | None:
        """Writes one call as a scenario folder; returns its path, or ``None`` when it was not
        recorded (counted and logged). Never raises for a disk or content problem."""
        name = self._folder_name(call)
        try:
            files = scenario_files(call)
        except ValueError as exc:
            self._failed("incomplete", f"{name} not recorded: {exc}")
            return None
        size = sum(len(data) for data in files.values())
        if size > self.max_bytes:
            self._failed("too-large", f"{name} not recorded: {size} bytes, over the limit of {self.max_bytes}")
            return None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._sweep_stale()
            self._make_room(count=self.max_count - 1, size=self.max_bytes - size)
            path = write_folder(self.directory, name, files)
        except OSError as exc:
            self._failed("disk", f"{name} not recorded in {self.directory}: {exc}")
            return None
        WRITTEN.inc()
        log.debug("recorded %s", path)
        return path

    def _folder_name(self, call: _Call) -> str:
        """``<UTC time>-<hook>-<namespace>-<job>-<pid>-<n>``: sorts oldest first, unique across
        the worker processes sharing the directory."""
        stamp = call.at.strftime("%Y%m%dT%H%M%S.%fZ")
        parts = [_safe(call.result.namespace), _safe(call.result.job)]
        return f"{stamp}-{call.hook}-{'-'.join(parts)}-{os.getpid()}-{next(self._sequence)}"

    def _make_room(self, *, count: int, size: int) -> None:
        """Drops the oldest folders until at most ``count`` remain holding at most ``size`` bytes."""
        folders = scenario_folders(self.directory)
        total = sum(folder_bytes for _, folder_bytes in folders)
        for path, folder_bytes in folders:
            if len(folders) <= count and total <= size:
                break
            remove_folder(path)
            folders = folders[1:]
            total -= folder_bytes

    def _sweep_stale(self) -> None:
        """Once per process: removes ``.tmp-*``/``.del-*`` entries left by a process that died."""
        if self._swept:
            return
        self._swept = True
        cutoff = time.time() - STALE_TEMP_SECONDS
        for entry in os.scandir(self.directory):
            if entry.name.startswith((".tmp-", ".del-")) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                shutil.rmtree(entry.path, ignore_errors=True)

    def _failed(self, reason: str, message: str) -> None:
        """Counts a call not recorded; logs it, at most once per LOG_EVERY_SECONDS."""
        FAILURES.labels(reason=reason).inc()
        now = time.monotonic()
        with self._lock:
            if now - self._last_log < LOG_EVERY_SECONDS:
                self._unlogged += 1
                return
            unlogged, self._unlogged, self._last_log = self._unlogged, 0, now
        more = f" ({unlogged} more not recorded since the last message)" if unlogged else ""
        log.warning("recording: %s%s", message, more, extra={"fields": {"reason": reason}})


def scenario_files(call: _Call) -> dict[str, bytes]:
    """The four files of a recorded call. Raises ``ValueError`` when the reads did not keep their pods."""
    result, decision = call.result, call.result.decision
    where = f"{result.namespace or '?'}/{result.job or '?'}"
    if decision is not None:
        what = f"{decision.phase_before or '(none)'} -> {decision.phase_after} ({decision.kind})"
    else:
        what = f"answered {result.status_code}"
    meta: dict[str, Any] = {
        "description": f"recorded {call.hook} of {where}: {what}",
        "hook": call.hook,
        "now": format_time(call.now) if call.now is not None else None,
        "recorded_at": format_time(call.at),
        "duration_seconds": round(result.seconds, 6),
        "code": result.status_code,
        "decision": decision.kind if decision else None,
        "phase_before": decision.phase_before if decision else None,
        "phase_after": decision.phase_after if decision else None,
        "namespace": result.namespace,
        "job": result.job,
        "settings": {name: getattr(call.settings, name) for name in RECORDED_SETTINGS},
        "reads": [
            {"method": r.method, "source": r.source, "selector": r.selector, "outcome": r.outcome,
             "pods": r.pods, "seconds": round(r.seconds, 6), "error": r.error}
            for r in result.reads
        ],
        "pid": os.getpid(),
    }
    return {
        REQUEST: request_bytes(call.raw, call.settings.max_body_bytes),
        PODS: dump(pods_document(result.reads)),
        META: dump(meta),
        RESPONSE: dump(result.body),
    }


def write_folder(directory: Path, name: str, files: Mapping[str, bytes]) -> Path:
    """Writes ``files`` as the folder ``directory/name``, atomically: into a ``.tmp-`` directory in
    ``directory``, every file and the directory fsynced, then renamed into place. On any error the
    temporary directory is removed and the error raised; ``directory/name`` then does not exist."""
    temporary = Path(tempfile.mkdtemp(prefix=f".tmp-{name}-", dir=directory))
    try:
        for file_name, data in files.items():
            write_file(temporary / file_name, data)
        fsync_directory(temporary)
        final = directory / name
        os.rename(temporary, final)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    fsync_directory(directory)
    return final


def write_file(path: Path, data: bytes) -> None:
    """Creates ``path`` (it must not exist) holding ``data``, flushed to disk."""
    with open(path, "xb") as handle_:
        handle_.write(data)
        handle_.flush()
        os.fsync(handle_.fileno())


def fsync_directory(path: Path) -> None:
    """Flushes a directory's entries (new names, renames) to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def scenario_folders(directory: Path) -> list[tuple[Path, int]]:
    """The recorded folders in ``directory`` (names not starting with ``.``), oldest first, each
    with the bytes its files hold. A folder that vanishes meanwhile (another worker dropped it) is
    skipped."""
    folders = []
    for entry in sorted(os.scandir(directory), key=lambda item: item.name):
        if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            size = sum(item.stat(follow_symlinks=False).st_size for item in os.scandir(entry.path))
        except FileNotFoundError:
            continue
        folders.append((Path(entry.path), size))
    return folders


def remove_folder(path: Path) -> None:
    """Removes a recorded folder atomically for readers: renamed to ``.del-*`` first, then deleted.
    A folder already gone (another worker dropped it) is fine."""
    doomed = path.with_name(f".del-{path.name}-{os.getpid()}")
    try:
        os.rename(path, doomed)
    except FileNotFoundError:
        return
    shutil.rmtree(doomed, ignore_errors=True)


def _safe(name: str) -> str:
    """``name`` reduced to what a folder name can safely hold (it came from the request)."""
    return _NAME_UNSAFE.sub("_", name.lower())[:63] or "_"


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
