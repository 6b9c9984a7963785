"""A time as the API server admits it: the one reader of every time the hooks read.

Every time a request carries was written through the API server: the status' times (the CRD's
``format: date-time``, which anyone with status write may spell as the API server allows) and the
times of the objects it stamps itself (``creationTimestamp``, ``deletionTimestamp``, conditions'
``lastTransitionTime``: always ``2006-01-02T15:04:05Z``). The API server's rule for ``date-time`` is
kube-openapi's ``strfmt.IsDateTime`` (``k8s.io/kube-openapi/pkg/validation/strfmt/time.go``; the
apiextensions validation uses ``strfmt.Default``), ported here exactly (``admitted``):

- the text is split at every ``t`` or ``T``: the part before the first is a date Go's
  ``time.Parse("2006-01-02", ...)`` reads (four digits, a month 01-12, a day that exists in that
  month: ``2025-02-30`` is refused, ``0000-02-29`` admitted); the part after it matches
  ``HH:MM:SS(.F+)?(z|Z|+hh:mm|-hh:mm)`` with ``HH`` <= 23, ``MM`` and ``SS`` <= 59 (no leap second),
  where the fraction's separator is any one character and ``hh:mm`` any digits; whatever follows a
  second ``t`` is not looked at;
- so lower case ``t`` and ``z``, fractions of any length and any offset are admitted.

``read`` turns an admitted text into an instant: an aware ``datetime`` in UTC. Some admitted texts
name no instant it can tell: text after a second ``t``, a fraction not after ``.`` or ``,``, an
offset beyond ``±23:59``, year 0000, or a moment outside ``datetime``'s range once in UTC
(``0001-01-01T00:00:00+23:59``). Those are ``Unreadable``: admitted, so never a reason to refuse a
request, and never evidence either (the claims they make are held, ``hooks.core.claims``). A text
the API server does not admit is ``NotAdmitted``. Fractions are cut to microseconds.

Pure: the standard library only, so every reader of a request (``hooks.core.status``,
``hooks.core.historyentry``, ``hooks.core.deadlines``) shares it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

SHOWN = 40
"""How many characters of a time a message repeats."""
DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
"""The days of each month outside a leap year."""

_SPLIT = re.compile("[tT]")
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_CLOCK = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?([zZ]|([+-])([0-9]{2}):([0-9]{2}))")
"""strfmt's ``DateTimePattern`` on the text after the first ``t``, ``z`` in either case: Go lowers
the whole text first, and no other character lowers to ``t`` or ``z``. ``fullmatch`` is Go's
``^...$`` (Python's ``$`` would also match before a final newline); ``.`` matches any character
but a newline in both."""


class NotAdmitted(ValueError):
    """The API server refuses this text as a ``date-time``."""


class Unreadable(ValueError):
    """The API server admits this text as a ``date-time``, but it names no instant the hooks can tell."""


def admitted(text: object) -> bool:
    """Whether the API server admits ``text`` as a ``format: date-time`` string (``strfmt.IsDateTime``;
    ``""`` is not one). Never raises. A text ``read`` remembers was admitted (it read as an instant).

    An admitted text is remembered (``_admitted_memo``, up to ``ADMITTED_MEMO_MAX`` texts, then all
    are forgotten at once) and not split and matched again: every request checks the times of the
    prior status, the same texts call after call (issue 32 item 4). The answer is the text's alone,
    so the memo can only answer what the text would; a refused text is checked again each time."""
    if not isinstance(text, str):
        return False
    if text in _admitted_memo or text in _read_memo:
        return True
    if _parts(text) is None:
        return False
    if type(text) is not str:  # a subclass may compare or hash otherwise: checked each time
        return True
    if len(_admitted_memo) >= ADMITTED_MEMO_MAX:
        _admitted_memo.clear()
    _admitted_memo.add(text)
    return True


ADMITTED_MEMO_MAX = 4096
"""How many admitted texts ``admitted`` remembers before it forgets them all (a bound on memory)."""
_admitted_memo: set[str] = set()


READ_MEMO_MAX = 4096
"""How many texts ``read`` remembers the instant of before it forgets them all (a bound on memory:
the times of a cluster's pods and statuses repeat from call to call, and a gang's pods share a few)."""
_read_memo: dict[str, datetime] = {}


def read(text: object) -> datetime:
    """``text`` (an admitted ``date-time``) as an aware ``datetime`` in UTC. Raises ``NotAdmitted``
    when the API server would refuse it, ``Unreadable`` when it admits it but it names no instant
    (the module doc); both are ``ValueError``, and nothing else is raised.

    A text read once is not read again: its instant (a ``datetime``, immutable) is remembered by the
    text, up to ``READ_MEMO_MAX`` texts (then all are forgotten at once), so every call answers as
    the first did; a refused text is read again each time. A sync reads the ``startTime`` of every
    pod of its Job (``hooks.core.history.started_at``), the same texts call after call."""
    if type(text) is str:
        found = _read_memo.get(text)
        if found is not None:
            return found
    instant = _read(text)
    if type(text) is str:
        if len(_read_memo) >= READ_MEMO_MAX:
            _read_memo.clear()
        _read_memo[text] = instant
    return instant


def _read(text: object) -> datetime:
    """``read`` without the memo: the text parsed."""
    shown = repr(text[:SHOWN]) if isinstance(text, str) else type(text).__name__
    parts = _parts(text) if isinstance(text, str) else None
    if parts is None:
        raise NotAdmitted(f"{shown} is not a date-time the API server admits")
    date, clock, rest = parts
    fraction, zone = clock.group(4), clock.group(5)
    why = ("text follows a second 't'" if rest
           else "year 0000 is before any datetime" if date[0] == 0
           else f"{fraction[0]!r} separates the fraction of a second" if fraction and fraction[0] not in ".,"
           else "its offset is beyond 23:59" if len(zone) > 1 and (int(clock.group(7)) > 23 or int(clock.group(8)) > 59)
           else "")
    if why:
        raise Unreadable(f"{shown} names no instant: {why}")
    offset = timedelta(0) if len(zone) == 1 else (
        (-1 if clock.group(6) == "-" else 1) * timedelta(hours=int(clock.group(7)), minutes=int(clock.group(8))))
    micro = int((fraction[1:] + "000000")[:6]) if fraction else 0
    local = datetime(*date, int(clock.group(1)), int(clock.group(2)), int(clock.group(3)), micro,
                     tzinfo=timezone(offset))
    try:
        return local.astimezone(UTC)
    except OverflowError:
        raise Unreadable(f"{shown} names no instant: it is outside the range of times in UTC") from None


def _parts(text: str) -> tuple[tuple[int, int, int], re.Match[str], list[str]] | None:
    """``strfmt.IsDateTime``: the date (year, month, day), the clock's match and what follows a
    second ``t``; ``None`` when the API server refuses ``text``."""
    date_text, *times = _SPLIT.split(text)
    if not times:
        return None
    date = _date(date_text)
    clock = _CLOCK.fullmatch(times[0])
    if date is None or clock is None or clock.group(1) > "23" or clock.group(2) > "59" or clock.group(3) > "59":
        return None
    return date, clock, times[1:]


def _date(text: str) -> tuple[int, int, int] | None:
    """``strfmt.IsDate``: Go's ``time.Parse("2006-01-02", text)``, whose day must exist in its month
    (Go's proleptic Gregorian calendar: year 0000 is a leap year)."""
    found = _DATE.fullmatch(text)
    if found is None:
        return None
    year, month, day = (int(group) for group in found.groups())
    if not 1 <= month <= 12:
        return None
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = 29 if month == 2 and leap else DAYS[month - 1]
    return (year, month, day) if 1 <= day <= days else None
