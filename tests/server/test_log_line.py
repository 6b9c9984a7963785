"""hooks.server.logs: the per-call line written without a LogRecord when every handler it reaches is a
plain JSON stream handler is the line the record would have given; any other handler gets the record."""

from __future__ import annotations

import io
import logging
from typing import Any

import orjson
import pytest

from hooks.server import logs

CALL: dict[str, Any] = {"hook": "sync", "namespace": "team-a", "job": "train", "code": 200, "seconds": 0.0012345,
                        "body_bytes": 1462, "phase_before": "Running", "phase_after": "Running", "decision": "steady"}


class Read:
    """A ReadRecord as ``log_hook_call`` reads one."""

    def __init__(self, source: str, outcome: str = "ok") -> None:
        self.source, self.outcome = source, outcome


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch) -> logging.Logger:
    """``logs.log`` as a logger of its own at INFO, not propagating, with the clock fixed. Its
    handlers are those a test gives it (``only``): pytest puts its capture handlers on it too."""
    logger = logging.getLogger("nvcre.hooks.test_log_line")
    monkeypatch.setattr(logger, "propagate", False)
    monkeypatch.setattr(logger, "level", logging.INFO)
    monkeypatch.setattr(logger, "handlers", [])
    monkeypatch.setattr(logger, "filters", [])
    monkeypatch.setattr(logs, "log", logger)
    monkeypatch.setattr(logs.time, "time", lambda: 1767225600.1234567)  # LogRecord reads the same clock
    return logger


def only(logger: logging.Logger, *handlers: logging.Handler) -> None:
    """``handlers`` are all of ``logger``'s (pytest's capture handlers taken off)."""
    logger.handlers[:] = handlers


def stream_handler(formatter: logging.Formatter | None = None) -> tuple[logging.StreamHandler[Any], io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter or logs.JsonFormatter())
    return handler, stream


def written(**changes: Any) -> None:
    logs.log_hook_call(**{**CALL, **changes}, reads=[Read("cache"), Read("live", "error")])


def test_the_direct_line_is_the_records_line(isolated: logging.Logger, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same call, once written directly and once through a LogRecord (the direct path turned
    off): the same bytes, for a 200 (INFO) and a 409 (WARNING)."""
    handler, stream = stream_handler()
    only(isolated, handler)
    assert logs._json_streams(isolated, logging.INFO) == [handler]
    written()
    written(code=409, job="", namespace="")
    direct = stream.getvalue()
    stream.seek(0), stream.truncate()
    monkeypatch.setattr(logs, "_json_streams", lambda logger, level: None)
    written()
    written(code=409, job="", namespace="")
    assert direct == stream.getvalue()
    first = orjson.loads(direct.splitlines()[0])
    assert first["time"] == "2026-01-01T00:00:00.123+00:00" and first["message"] == "sync team-a/train -> 200"
    assert first["reads"] == {"cache": 1, "live": 1} and first["read_errors"] == 1 and first["level"] == "INFO"


def test_two_json_handlers_each_get_the_line_and_a_higher_level_handler_none(isolated: logging.Logger) -> None:
    one, first = stream_handler()
    two, second = stream_handler()
    warnings_only, third = stream_handler()
    warnings_only.setLevel(logging.WARNING)
    only(isolated, one, two, warnings_only)
    written()
    assert first.getvalue() == second.getvalue() and first.getvalue().count("\n") == 1
    assert third.getvalue() == ""


@pytest.mark.parametrize("other", ["formatter", "filter", "logger filter", "subclass"])
def test_any_other_handler_gets_the_record_with_its_source(isolated: logging.Logger, other: str) -> None:
    """A formatter of its own, a filter on the handler or the logger, a StreamHandler subclass: the
    record is built (the filter sees it, the formatter reads its source location)."""
    seen: list[logging.LogRecord] = []

    def keep(record: logging.LogRecord) -> bool:
        seen.append(record)
        return True

    formatter = logging.Formatter("%(funcName)s %(message)s") if other == "formatter" else None
    handler, stream = stream_handler(formatter)
    if other == "subclass":
        handler = type("Sub", (logging.StreamHandler,), {})(stream)
        handler.setFormatter(logs.JsonFormatter())
    only(isolated, handler)
    if other == "filter":
        handler.addFilter(keep)
    if other == "logger filter":
        isolated.addFilter(keep)
    assert logs._json_streams(isolated, logging.INFO) is None
    written()
    if other == "formatter":
        assert stream.getvalue() == "log_hook_call sync team-a/train -> 200\n"
    elif other != "subclass":
        [record] = seen
        assert record.funcName == "log_hook_call" and record.pathname == logs.__file__
    assert "sync team-a/train -> 200" in stream.getvalue()


def test_no_handler_at_all_goes_through_logging(isolated: logging.Logger) -> None:
    """No handler reached: ``logging.lastResort`` decides, as before."""
    only(isolated)
    assert logs._json_streams(isolated, logging.INFO) is None


def test_time_writes_what_isoformat_wrote() -> None:
    """``logs._time`` is ``datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")``,
    written by arithmetic and %-formatting (issue 32 item 4): millisecond and second edges, the epoch,
    times before it and random times."""
    import random
    from datetime import UTC, datetime

    rng = random.Random(20261206)
    times = [0.0, 0.0009, 0.9995, 1.999999, 1796583601.276, 253402300799.999, -0.0004, -1.5, -86400.0005]
    times += [rng.uniform(0, 4e9) for _ in range(5000)]
    # a second's last microsecond, rounded up into the next second (fromtimestamp carries it), and the
    # next lines of one second, in order and not: the kept text of the second (``_second``) is reread
    moments = [rng.uniform(1.7e9, 1.8e9) for _ in range(300)]
    times += [float(int(m)) + edge for m in moments for edge in (0.9999994, 0.9999995, 0.9999996, 0.9999999, 0.0)]
    times += [second + rng.random() for second in (1796583601.0, 1796583601.0, 1796583602.0, 1796583601.0)
              for _ in range(50)]
    for created in times:
        assert logs._time(created) == datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds"), created


def test_read_counts_and_errors_in_one_pass() -> None:
    """The line's ``reads`` are counted by source (sorted by source) and its ``read_errors`` are the
    reads that did not end ``ok``, whatever the reads' order and however many (issue 32 item 4
    counts both in one pass)."""
    reads = [Read("live"), Read("cache", "error"), Read("live", "error"), Read("departed"), Read("cache")]
    assert logs._tally(reads) == ({"cache": 2, "departed": 1, "live": 2}, 2)
    assert list(logs.read_counts(reads)) == ["cache", "departed", "live"]
    assert logs._tally([]) == ({}, 0)
    assert logs._tally(iter([Read("live", "error")])) == ({"live": 1}, 1)


def test_a_hook_call_s_fields_are_plain_so_the_unchecked_copy_writes_the_checked_line(
        isolated: logging.Logger, monkeypatch: pytest.MonkeyPatch) -> None:
    """``log_hook_call`` hands ``_line`` its fields as ``plain`` (copied without asking whether a key
    must be renamed, issue 32 item 4): they are strings, none reserved, so the line is the one the
    checked copy writes."""
    seen: list[dict[str, Any]] = []
    line = logs._line

    def kept(*args: Any, **kwargs: Any) -> str:
        seen.append(args[5])
        return line(*args, **kwargs)

    handler, stream = stream_handler()
    only(isolated, handler)
    monkeypatch.setattr(logs, "_line", kept)
    written()
    (fields,) = seen
    assert all(type(key) is str for key in fields) and logs._RESERVED.isdisjoint(fields)
    assert line(1.5, "INFO", "x", 1, "m", fields, plain=True) == line(1.5, "INFO", "x", 1, "m", fields)
    assert stream.getvalue() == line(1767225600.1234567, "INFO", isolated.name, logs.os.getpid(),
                                     "sync team-a/train -> 200", fields) + "\n"
