"""JSON logs: one JSON object per line, for the server's own logs and gunicorn's.

- ``JsonFormatter`` renders any ``logging`` record as JSON; structured fields travel in
  ``extra={"fields": {...}}``.
- ``log_hook_call`` writes the one line per hook call: names, phases, decision, reads, code, time.
  Request content is never echoed beyond names and sizes.
- ``configure`` sets up logging for a process that has none (the CLI, ``flask run``);
  ``gunicorn_logging`` is the ``logconfig_dict`` of ``hooks/server/gunicorn.conf.py``, which also makes
  gunicorn's access log JSON.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from collections.abc import Iterable
from typing import Any

import orjson

from hooks.core.declared import MAPPING

log = logging.getLogger("nvcre.hooks")

_RESERVED = frozenset(("time", "level", "logger", "message", "pid"))


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON line: time (UTC, ms), level, logger, pid, message, the record's
    ``fields`` mapping when present, and ``exception`` (the traceback) when the record has one."""

    def format(self, record: logging.LogRecord) -> str:
        """The JSON line for ``record``; fields that would shadow the fixed keys are prefixed ``field_``."""
        exception = self.formatException(record.exc_info) if record.exc_info else None
        return _line(record.created, record.levelname, record.name, record.process, record.getMessage(),
                     getattr(record, "fields", None), exception)


def _line(created: float, level: str, logger: str, pid: int | None, message: str, fields: object,
          exception: str | None = None, *, plain: bool = False) -> str:
    """The JSON line ``JsonFormatter`` writes of a record with these attributes (``fields``: the
    record's ``fields``, read only when a mapping; ``exception``: the formatted traceback, if any).
    ``plain``: the caller's ``fields`` is a dict whose keys are all strings and none of ``_RESERVED``
    (``log_hook_call``'s own), copied as it is without asking (issue 32 item 4)."""
    doc: dict[str, Any] = {"time": _time(created), "level": level, "logger": logger, "pid": pid, "message": message}
    if plain:
        doc.update(fields)  # type: ignore[call-overload]  # a dict, said the caller
    elif isinstance(fields, MAPPING):
        if _RESERVED.isdisjoint(fields) and all(type(key) is str for key in fields):
            doc.update(fields)  # the usual case (a hook call's line): no key to rename, copied as it is
        else:
            for key, value in fields.items():
                doc[f"field_{key}" if key in _RESERVED else str(key)] = value
    if exception is not None:
        doc["exception"] = exception
    return orjson.dumps(doc, default=str).decode()


def _time(created: float) -> str:
    """``created`` (a ``time.time()``) as a line's ``time``: what
    ``datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")`` writes
    (``2026-12-06T19:00:01.276+00:00``). The microseconds are rounded as ``fromtimestamp`` rounds
    them (half to even, carried into the second), and the text of the second is kept for the next
    line of the same second (``_second``): a line is written only by arithmetic and one %-format
    (issue 32 item 4)."""
    global _second
    fraction, whole = math.modf(created)
    micro = round(fraction * 1e6)
    if micro >= 1_000_000:
        micro -= 1_000_000
        whole += 1.0
    elif micro < 0:
        micro += 1_000_000
        whole -= 1.0
    second, text = _second
    if whole != second:
        text = "%04d-%02d-%02dT%02d:%02d:%02d" % time.gmtime(whole)[:6]  # noqa: UP031 (as below)
        _second = (whole, text)  # one tuple, replaced whole: a thread reads the old one or the new
    return "%s.%03d+00:00" % (text, micro // 1000)  # noqa: UP031 (half the time of the f-string form)


_second: tuple[float, str] = (float("nan"), "")
"""The last second ``_time`` wrote and its text (``nan`` equals no second)."""


def configure(level: str) -> None:
    """Sends logs to stderr as JSON at ``level``, unless the process already configured logging.

    gunicorn (through ``gunicorn_logging``) and pytest install their own root handlers first; they
    are left alone, so calling this from the app factory never duplicates lines.
    """
    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root.addHandler(handler)
    root.setLevel(level)


def gunicorn_logging(level: str) -> dict[str, Any]:
    """gunicorn's ``logconfig_dict``: every logger as JSON on stderr at ``level``; the access log
    (already JSON, from gunicorn's ``access_log_format``) passed through as is."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "json": {"()": "hooks.server.logs.JsonFormatter"},
            "raw": {"format": "%(message)s"},
        },
        "handlers": {
            "json": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"},
            "access": {"class": "logging.StreamHandler", "formatter": "raw", "stream": "ext://sys.stderr"},
        },
        "root": {"level": level, "handlers": ["json"]},
        "loggers": {
            "gunicorn.error": {"level": level, "handlers": ["json"], "propagate": False},
            "gunicorn.access": {"level": level, "handlers": ["access"], "propagate": False},
        },
    }


def read_counts(reads: Iterable[Any]) -> dict[str, int]:
    """How many reads went to each source, e.g. ``{"cache": 1, "live": 1}``, from ReadRecords."""
    return _tally(reads)[0]


def _tally(reads: Iterable[Any]) -> tuple[dict[str, int], int]:
    """``read_counts(reads)`` and how many of ``reads`` did not end ``ok``, in one pass (a hook
    call's line says both, issue 32 item 4)."""
    counts: dict[str, int] = {}
    errors = 0
    for record in reads:
        counts[record.source] = counts.get(record.source, 0) + 1
        if record.outcome != "ok":
            errors += 1
    return (dict(sorted(counts.items())) if len(counts) > 1 else counts), errors


def log_hook_call(
    *,
    hook: str,
    namespace: str,
    job: str,
    code: int,
    seconds: float,
    body_bytes: int,
    reads: Iterable[Any] = (),
    phase_before: str = "",
    phase_after: str = "",
    decision: str = "",
) -> None:
    """Writes the one structured line of a hook call.

    Level INFO for a 200, WARNING for a 4xx, ERROR for a 5xx. Carries names, sizes, phases, the
    decision kind, the reads by source and how many of them failed; never request content.
    """
    level = logging.INFO if code < 400 else logging.WARNING if code < 500 else logging.ERROR
    if not log.isEnabledFor(level):
        return  # filtered out: nothing to build (issue 32 item 4)
    counts, errors = _tally(reads)
    fields = {  # strings, none of them one of ``_RESERVED`` (tests/server/test_log_line.py): ``_line``'s ``plain``
        "hook": hook,
        "namespace": namespace,
        "job": job,
        "phase_before": phase_before,
        "phase_after": phase_after,
        "decision": decision,
        "reads": counts,
        "read_errors": errors,
        "code": code,
        "duration_ms": round(seconds * 1000, 3),
        "request_bytes": body_bytes,
    }
    target = f" {namespace}/{job}" if job else ""
    streams = _json_streams(log, level)
    if streams is None:
        log.log(level, "%s%s -> %d", hook, target, code, extra={"fields": fields})
        return
    # Every handler the record would reach writes it with JsonFormatter to its stream: the same line,
    # formatted once, written as each handler's emit writes it, without the LogRecord (issue 32 item 4).
    created = time.time()  # what LogRecord takes as ``created``
    line = _line(created, logging.getLevelName(level), log.name, os.getpid() if logging.logMultiprocessing else None,
                 f"{hook}{target} -> {code}", fields, plain=True)
    for handler in streams:
        handler.acquire()
        try:
            handler.stream.write(line + handler.terminator)
            handler.flush()
        except RecursionError:
            raise
        except Exception:
            handler.handleError(log.makeRecord(log.name, level, __file__, 0, "%s%s -> %d", (hook, target, code),
                                               None, extra={"fields": fields}))
        finally:
            handler.release()


def _json_streams(logger: logging.Logger, level: int) -> list[logging.StreamHandler[Any]] | None:
    """The handlers a record of ``logger`` at ``level`` reaches, when each is a plain
    ``logging.StreamHandler`` (not a subclass) formatting with ``JsonFormatter`` (not a subclass) and
    nothing on the way filters (no logger's or handler's filters): their output is then one
    ``JsonFormatter`` line each. ``None`` when any part is otherwise (caplog, a file, a filter, a
    formatter of its own) or none is reached (``logging.lastResort``): the record must be built then."""
    found: list[logging.StreamHandler[Any]] = []
    current: logging.Logger | None = logger
    while current is not None:
        if current.filters:
            return None
        for handler in current.handlers:
            if (type(handler) is not logging.StreamHandler or type(handler.formatter) is not JsonFormatter
                    or handler.filters):
                return None
            if level >= handler.level:
                found.append(handler)
        current = current.parent if current.propagate else None
    return found or None
