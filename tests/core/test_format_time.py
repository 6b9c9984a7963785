"""``conditions.format_time`` writes exactly what ``isoformat`` wrote before it was made cheaper
(issue 32 item 4): seconds precision in UTC with a ``Z``, for aware (any offset), naive (taken as
UTC) and early-year moments."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

from hooks.core.conditions import format_time


def _isoformat(now: datetime) -> str:
    """The former body of ``format_time``."""
    if now.tzinfo is not None:
        now = now.astimezone(UTC)
    return now.replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def test_format_time_writes_what_isoformat_wrote() -> None:
    rng = random.Random(20261206)
    moments = [datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999999),
               datetime(5, 3, 4, 5, 6, 7), datetime(2026, 12, 6, 19, 0, 1, 999999, tzinfo=timezone(timedelta(hours=5)))]
    for _ in range(2000):
        moment = datetime(rng.randint(2, 9998), 1, 1) + timedelta(seconds=rng.randint(0, 365 * 86400),
                                                                  microseconds=rng.randint(0, 999999))
        offset = rng.choice([None, UTC, timezone(timedelta(minutes=rng.randint(-1439, 1439)))])
        moments.append(moment if offset is None else moment.replace(tzinfo=offset))
    for moment in moments:
        assert format_time(moment) == _isoformat(moment), moment
