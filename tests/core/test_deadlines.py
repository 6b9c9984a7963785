"""hooks.core.deadlines is total: times parse to UTC or raise ValueError, limits never raise (no value
the CRD admits may become a 5xx). The limits are read from the typed spec (``hooks.core.request.Spec``):
a limit of the wrong JSON type never gets here (a 400 when the request is read)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest

from hooks.core import deadlines
from hooks.core.declared import InvalidRequest
from hooks.core.jobset import InvalidSpec
from hooks.core.request import read_spec

NOW = datetime(2026, 1, 1, tzinfo=UTC)
EXTREMES = ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "0001-01-01T00:00:00+23:59",
            "9999-12-31T23:59:59-23:59", "9999-12-31T23:59:59", "2026-01-01T00:00:00Z", "not a time", "",
            "2026-13-01T00:00:00Z"]
LIMITS = [0, 1, 3600, deadlines.MAX_SECONDS, deadlines.MAX_SECONDS + 1, 2**63 - 1, -(2**63), -1, None]
WRONG_TYPES = ["60", 1.5, True, [], {}]


def test_parse_time_gives_utc() -> None:
    assert deadlines.parse_time("2026-01-01T01:00:00+01:00") == NOW
    assert deadlines.parse_time("2026-01-01T01:00:00+01:00").tzinfo == UTC  # type: ignore[union-attr]
    assert deadlines.parse_time("2026-01-01T00:00:00Z") == NOW
    assert deadlines.parse_time("2026-01-01t00:00:00.999999999z") == NOW + timedelta(microseconds=999999)
    assert deadlines.parse_time("") is None


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59", "x",
                                  "2026-13-01T00:00:00Z", "2026-01-01T00:00:00", "2026-01-01",
                                  "2026-01-01 00:00:00Z", "0000-01-01T00:00:00Z"])
def test_a_time_outside_the_utc_range_or_not_a_time_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        deadlines.parse_time(text)


def test_a_non_string_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        deadlines.parse_time(5)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", EXTREMES)
@pytest.mark.parametrize("seconds", LIMITS)
def test_deadline_and_ttl_never_raise(text: str, seconds: object) -> None:
    for at in (deadlines.deadline_at(read_spec({"activeDeadlineSeconds": seconds}), text),
               deadlines.ttl_at(read_spec({"ttlSecondsAfterFinished": seconds}), text)):
        assert at is None or at.tzinfo == UTC
        for now in (NOW, datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC), datetime(2026, 1, 1)):
            deadlines.passed(at, now)
            wake = deadlines.wake_in(at, now)
            assert wake is None or 1 <= wake <= deadlines.MAX_SECONDS


def test_a_moment_past_the_range_never_comes() -> None:
    spec = read_spec({"activeDeadlineSeconds": 60, "ttlSecondsAfterFinished": 60})
    assert deadlines.deadline_at(spec, "9999-12-31T23:59:59Z") is None
    assert deadlines.ttl_at(spec, "9999-12-31T23:59:59Z") is None
    assert deadlines.deadline_at(spec, "0001-01-01T00:00:00+23:59") is None
    assert deadlines.deadline_at(spec, "2026-01-01T00:00:00+01:00") == NOW - timedelta(hours=1) + timedelta(minutes=1)


def test_wake_in_is_bounded_so_metacontroller_can_hold_it_as_a_duration() -> None:
    far = datetime(9000, 1, 1, tzinfo=UTC)
    assert deadlines.wake_in(far, NOW) == deadlines.MAX_SECONDS
    assert deadlines.wake_in(NOW + timedelta(seconds=0.2), NOW) == 1
    assert deadlines.wake_in(NOW, NOW) is None
    assert deadlines.wake_in(NOW + timedelta(hours=1), NOW.astimezone(timezone(timedelta(hours=5)))) == 3600


def test_check_takes_a_null_stuck_after_as_its_default() -> None:
    deadlines.check(read_spec({"drain": {"stuckAfterSeconds": None, "forceDeleteStuckPodsAfterSeconds": 300}}))
    with pytest.raises(InvalidSpec, match="at least stuckAfterSeconds"):
        deadlines.check(read_spec({"drain": {"stuckAfterSeconds": None, "forceDeleteStuckPodsAfterSeconds": 299}}))


@pytest.mark.parametrize("drain", ["x", [], 5])
def test_a_drain_that_is_not_an_object_is_refused_when_read(drain: object) -> None:
    with pytest.raises(InvalidRequest, match=r"^spec\.drain: expected an object"):
        read_spec({"drain": drain})


@pytest.mark.parametrize("value", WRONG_TYPES)
@pytest.mark.parametrize("key", ["activeDeadlineSeconds", "ttlSecondsAfterFinished", "drain.stuckAfterSeconds",
                                 "drain.forceDeleteStuckPodsAfterSeconds"])
def test_a_limit_of_the_wrong_json_type_is_refused_when_read(key: str, value: object) -> None:
    spec: dict[str, object] = {"drain": {key.removeprefix("drain."): value}} if key.startswith("drain.") else \
        {key: value}
    with pytest.raises(InvalidRequest, match=re.escape(f"spec.{key}: expected an integer")):
        read_spec(spec)


def test_a_limit_out_of_its_range_is_read_as_none() -> None:
    """``activeDeadlineSeconds: 0`` (``InvalidSpec``: the CRD's minimum is 1) sets no deadline."""
    assert deadlines.deadline_at(read_spec({"activeDeadlineSeconds": 0}), "2026-01-01T00:00:00Z") is None
    assert deadlines.ttl_at(read_spec({"ttlSecondsAfterFinished": 0}), "2026-01-01T00:00:00Z") == NOW


@pytest.mark.parametrize("value", [2**63 - 1, -(2**63), deadlines.MAX_SECONDS + 1, -1])
@pytest.mark.parametrize("key", ["activeDeadlineSeconds", "ttlSecondsAfterFinished", "drain.stuckAfterSeconds",
                                 "drain.forceDeleteStuckPodsAfterSeconds"])
def test_check_refuses_out_of_range_limits_naming_them(key: str, value: object) -> None:
    spec: dict[str, object] = {"drain": {key.removeprefix("drain."): value}} if key.startswith("drain.") else \
        {key: value}
    with pytest.raises(InvalidSpec, match=re.escape(f"spec.{key}")) as refused:
        deadlines.check(read_spec(spec))
    assert refused.value.code == "InvalidTimeLimit"
