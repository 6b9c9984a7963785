"""``hooks.core.apitime``: the API server's ``date-time`` rule, exactly, and what each admitted
spelling reads as.

The verdicts in ``ADMITTED`` and ``REFUSED`` were checked against kube-openapi's
``strfmt.Default.Validates("date-time", ...)`` compiled from the module the control plane is built
from (and 250,000 generated spellings agreed); ``tests/cluster/test_status_times.py`` checks them on
the real API server.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hooks.core import apitime

AT = datetime(2025, 6, 1, tzinfo=UTC)

READABLE = {
    "2025-06-01T00:00:00Z": AT,
    "2025-06-01t00:00:00z": AT,
    "2025-06-01t00:00:00Z": AT,
    "2025-06-01T00:00:00z": AT,
    "2025-06-01T00:00:00.5Z": AT + timedelta(microseconds=500_000),
    "2025-06-01T00:00:00.123456789Z": AT + timedelta(microseconds=123_456),  # cut, not rounded
    "2025-06-01T00:00:00,25Z": AT + timedelta(microseconds=250_000),
    "2025-06-01T02:00:00+02:00": AT,
    "2025-05-31t19:30:00-04:30": AT,
    "2025-06-01T00:00:00-00:00": AT,
    "2025-06-01T23:59:59+23:59": AT + timedelta(seconds=59),
    "2024-02-29T00:00:00Z": datetime(2024, 2, 29, tzinfo=UTC),
    "0001-01-01T00:00:00-23:59": datetime(1, 1, 1, 23, 59, tzinfo=UTC),
}
"""Admitted spellings and the instant each names."""

UNREADABLE = {
    "0000-01-01T00:00:00Z": "year 0000",
    "0000-02-29T00:00:00Z": "year 0000",
    "2025-06-01T00:00:00+24:00": "offset is beyond 23:59",
    "2025-06-01T00:00:00+99:99": "offset is beyond 23:59",
    "2025-06-01T00:00:00-00:60": "offset is beyond 23:59",
    "2025-06-01T00:00:00ZTanything": "second 't'",
    "2025-06-01t00:00:00zt": "second 't'",
    "2025-06-01T00:00:0012Z": "'1' separates the fraction",
    "2025-06-01T00:00:00x5Z": "'x' separates the fraction",
    "0001-01-01T00:00:00+23:59": "outside the range of times in UTC",
    "9999-12-31T23:59:59-00:01": "outside the range of times in UTC",
}
"""Admitted spellings that name no instant, and why."""

REFUSED = [
    "", "x", "2025-02-30T00:00:00Z", "2025-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2025-04-31T00:00:00Z",
    "2025-13-01T00:00:00Z", "2025-00-01T00:00:00Z", "2025-06-00T00:00:00Z", "2025-06-01T24:00:00Z",
    "2025-06-01T00:60:00Z", "2025-06-01T00:00:60Z", "2025-06-01T00:00:00", "2025-06-01", "2025-06-01 00:00:00Z",
    "2025-06-01T00:00Z", "2025-6-01T00:00:00Z", "+025-06-01T00:00:00Z", "20250601T000000Z",
    "2025-06-01T00:00:00Z\n", "2025-06-01T00:00:00.Z", "2025-06-01T00:00:00+0100", "2025-06-01T0:00:00Z",
    "\uff12\uff10\uff12\uff15-06-01T00:00:00Z", "2025-06-01T00:00:00+01", " 2025-06-01T00:00:00Z",
]
"""Spellings the API server refuses: no real Job's status carries one."""


@pytest.mark.parametrize(("text", "instant"), READABLE.items(), ids=list(READABLE))
def test_an_admitted_spelling_reads_as_its_instant_in_utc(text: str, instant: datetime) -> None:
    assert apitime.admitted(text)
    at = apitime.read(text)
    assert at == instant and at.tzinfo == UTC


@pytest.mark.parametrize(("text", "why"), UNREADABLE.items(), ids=list(UNREADABLE))
def test_an_admitted_spelling_that_names_no_instant_is_unreadable(text: str, why: str) -> None:
    assert apitime.admitted(text)
    with pytest.raises(apitime.Unreadable, match=why):
        apitime.read(text)


@pytest.mark.parametrize("text", REFUSED)
def test_a_spelling_the_api_server_refuses_is_not_admitted(text: str) -> None:
    assert not apitime.admitted(text)
    with pytest.raises(apitime.NotAdmitted):
        apitime.read(text)


@pytest.mark.parametrize("value", [None, 5, 1.5, True, [], {}, b"2025-06-01T00:00:00Z"])
def test_a_value_that_is_not_a_string_is_not_admitted(value: object) -> None:
    assert not apitime.admitted(value)
    with pytest.raises(apitime.NotAdmitted):
        apitime.read(value)


_DIGITS = st.text("0123456789", min_size=2, max_size=2)
_SPELLINGS = st.builds(
    lambda year, month, day, t, hour, minute, second, fraction, zone: (
        f"{year:04d}-{month:02d}-{day:02d}{t}{hour}:{minute}:{second}{fraction}{zone}"),
    st.integers(0, 9999), st.integers(0, 13), st.integers(0, 32), st.sampled_from("tT"), _DIGITS, _DIGITS, _DIGITS,
    st.one_of(st.just(""), st.builds(lambda sep, digits: sep + digits, st.characters(exclude_characters="\n"),
                                     st.text("0123456789", min_size=1, max_size=12))),
    st.one_of(st.sampled_from(["z", "Z"]), st.builds(lambda sign, h, m: f"{sign}{h}:{m}", st.sampled_from("+-"),
                                                       _DIGITS, _DIGITS)),
)


@settings(max_examples=600, deadline=None)
@given(st.one_of(_SPELLINGS, st.text(max_size=40)))
def test_read_raises_only_its_two_errors_and_agrees_with_admitted(text: str) -> None:
    try:
        at = apitime.read(text)
    except apitime.NotAdmitted:
        assert not apitime.admitted(text)
    except apitime.Unreadable:
        assert apitime.admitted(text)
    else:
        assert apitime.admitted(text) and at.tzinfo == UTC


def test_a_text_read_again_is_not_parsed_again_and_answers_as_the_first_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The memo behind ``read`` (issue 32 item 4: a sync reads each pod's ``startTime``, the same
    texts call after call): one parse per text, the same instant every time, a refused text never
    remembered, and at most ``READ_MEMO_MAX`` texts held."""
    parsed: list[object] = []
    unmemoized = apitime._read

    def counting(text: object) -> datetime:
        parsed.append(text)
        return unmemoized(text)

    monkeypatch.setattr(apitime, "_read", counting)
    monkeypatch.setattr(apitime, "_read_memo", {})
    monkeypatch.setattr(apitime, "_admitted_memo", set())  # admitted's own memo (below) starts empty too
    text = "2025-06-01t02:00:00+02:00"
    assert [apitime.read(text) for _ in range(3)] == [AT] * 3
    assert parsed == [text]
    for _ in range(2):
        with pytest.raises(apitime.NotAdmitted):
            apitime.read("2025-06-01 00:00:00")
    assert parsed == [text, "2025-06-01 00:00:00", "2025-06-01 00:00:00"]
    monkeypatch.setattr(apitime, "READ_MEMO_MAX", 2)
    for second in range(5):
        apitime.read(f"2025-06-01T00:00:0{second}Z")
    assert len(apitime._read_memo) <= 2
    assert apitime.read("2025-06-01T00:00:04Z") == AT + timedelta(seconds=4)
    monkeypatch.setattr(apitime, "_parts", lambda text: None)  # a remembered text is admitted unparsed
    assert apitime.admitted("2025-06-01T00:00:04Z") and not apitime.admitted("2025-06-01T00:00:09Z")


def test_an_admitted_text_is_remembered_and_any_other_text_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The memo behind ``admitted`` (issue 32 item 4: every request checks the prior status' times):
    one check per admitted text; a text that differs in one character, or a refused one, is checked
    (and refused) every time; at most ``ADMITTED_MEMO_MAX`` texts held."""
    checked: list[str] = []
    unmemoized = apitime._parts

    def counting(text: str) -> object:
        checked.append(text)
        return unmemoized(text)

    monkeypatch.setattr(apitime, "_parts", counting)
    monkeypatch.setattr(apitime, "_admitted_memo", set())
    monkeypatch.setattr(apitime, "_read_memo", {})
    good, day_off, clock_off = "2025-02-28T23:59:59Z", "2025-02-29T23:59:59Z", "2025-02-28T24:59:59Z"
    assert [apitime.admitted(good) for _ in range(3)] == [True] * 3
    assert checked == [good]
    assert [apitime.admitted(text) for text in (day_off, clock_off, day_off)] == [False] * 3
    assert checked == [good, day_off, clock_off, day_off]
    assert apitime.admitted(good) and checked[-1] == day_off
    monkeypatch.setattr(apitime, "ADMITTED_MEMO_MAX", 2)
    for second in range(5):
        assert apitime.admitted(f"2025-06-01T00:00:0{second}Z")
    assert len(apitime._admitted_memo) <= 2
