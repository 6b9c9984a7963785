"""Time limits of a Job: ``spec.activeDeadlineSeconds`` and ``spec.ttlSecondsAfterFinished``.

Pure: reads the spec, the times recorded in the status and the decision's ``now``; never the wall
clock. Both limits count from a moment recorded once in the status and fed back
(``status.startTime``: when the first attempt's JobSet was first answered; ``status.completionTime``:
when the Job first became Succeeded or Failed), so the same request decides the same way, and a
status fed back stays the same. ``wake_in`` tells the caller when to be called again
(``resyncAfterSeconds``), so a limit is acted on when it passes, not at the next unrelated resync.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from hooks.core import apitime
from hooks.core.conditions import format_time
from hooks.core.jobset import InvalidSpec

MAX_SECONDS = 10 * 365 * 24 * 3600
"""The largest limit accepted (ten years): enough for any job, and far from datetime's range."""
STUCK_AFTER_DEFAULT = 300
"""``spec.drain.stuckAfterSeconds`` when it is unset (the CRD's default)."""


def parse_time(text: str) -> datetime | None:
    """A time of the status or of an object the API server stamped, read as the API server admits
    it (``hooks.core.apitime``: ``2026-01-01T00:00:00Z``, ``2026-01-01t00:00:00.5z``,
    ``...+02:00``), as an aware datetime in UTC; ``None`` for ``""``. Raises ``ValueError`` (and
    nothing else) for anything else: a text the API server refuses (``apitime.NotAdmitted``, a
    time without an offset included) or one it admits that names no instant (``apitime.Unreadable``:
    ``0001-01-01T00:00:00+23:59`` is in year 0 in UTC)."""
    if not text:
        return None
    return apitime.read(text)


def time_or_none(text: object) -> datetime | None:
    """``text`` as ``parse_time`` reads it, ``None`` for anything that is not such a time (evidence
    read from objects the hooks do not own, and the status' informative times: a bad time there is
    no time, never an error)."""
    try:
        return parse_time(text) if isinstance(text, str) else None
    except ValueError:
        return None


def check(spec: Mapping[str, Any]) -> None:
    """Checks the time limits of ``spec``: each unset or an integer (``activeDeadlineSeconds`` and
    ``drain.stuckAfterSeconds`` at least 1, the others at least 0), at most ``MAX_SECONDS``;
    ``forceDeleteStuckPodsAfterSeconds`` not below ``stuckAfterSeconds`` (default 300; ``null`` is
    unset, as the API server prunes it). Raises ``InvalidSpec`` (code ``InvalidTimeLimit``) and
    nothing else."""
    drain = spec.get("drain")
    drain = {} if drain is None else drain
    if not isinstance(drain, Mapping):
        raise InvalidSpec(f"spec.drain must be an object, got {type(drain).__name__}", "InvalidTimeLimit")
    for path, value, low in (("activeDeadlineSeconds", spec.get("activeDeadlineSeconds"), 1),
                             ("ttlSecondsAfterFinished", spec.get("ttlSecondsAfterFinished"), 0),
                             ("drain.stuckAfterSeconds", drain.get("stuckAfterSeconds"), 1),
                             ("drain.forceDeleteStuckPodsAfterSeconds",
                              drain.get("forceDeleteStuckPodsAfterSeconds"), 0)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_SECONDS:
            raise InvalidSpec(f"spec.{path} must be an integer from {low} to {MAX_SECONDS}, got {value!r}",
                              "InvalidTimeLimit")
    force, after = drain.get("forceDeleteStuckPodsAfterSeconds"), drain.get("stuckAfterSeconds")
    after = STUCK_AFTER_DEFAULT if after is None else after  # null is unset, as the CRD's CEL rule reads it
    if force is not None and force < after:
        raise InvalidSpec(f"spec.drain.forceDeleteStuckPodsAfterSeconds ({force}) must be at least stuckAfterSeconds "
                          f"({after}): a pod is only force-deleted once it is known to be stuck", "InvalidTimeLimit")


def _limit(spec: Mapping[str, Any], key: str) -> int | None:
    value = spec.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > MAX_SECONDS:
        return None
    return value


def deadline_at(spec: Mapping[str, Any], start_time: str) -> datetime | None:
    """When the Job's active deadline passes: ``startTime + activeDeadlineSeconds``, or ``None``
    without either, when ``startTime`` is not a time (``parse_time``), or when the sum is past
    ``datetime``'s range (a moment that never comes). Never raises."""
    return _after(_limit(spec, "activeDeadlineSeconds"), start_time)


def ttl_at(spec: Mapping[str, Any], completion_time: str) -> datetime | None:
    """When a finished Job is to be deleted: ``completionTime + ttlSecondsAfterFinished``, or
    ``None`` without either, when ``completionTime`` is not a time, or when the sum is past
    ``datetime``'s range. Never raises."""
    return _after(_limit(spec, "ttlSecondsAfterFinished"), completion_time)


def _after(seconds: int | None, since: str) -> datetime | None:
    """``since`` (a status time) plus ``seconds``; ``None`` when either is missing or unusable, or
    when the sum is past ``datetime``'s range."""
    if seconds is None:
        return None
    try:
        start = parse_time(since)
        return None if start is None else start + timedelta(seconds=seconds)
    except (ValueError, OverflowError):
        return None


def passed(moment: datetime | None, now: datetime) -> bool:
    """Whether ``moment`` is set and ``now`` is at or after it."""
    return moment is not None and _aware(now) >= moment


def wake_in(moment: datetime | None, now: datetime) -> float | None:
    """Whole seconds from ``now`` until ``moment`` (at least 1, at most ``MAX_SECONDS``: a wake-up
    further away is asked again by then), or ``None`` when it is unset or past. Never raises."""
    if moment is None or passed(moment, now):
        return None
    return float(min(MAX_SECONDS, max(1, math.ceil((moment - _aware(now)).total_seconds()))))


def stamp(moment: datetime) -> str:
    """``moment`` as the status writes times."""
    return format_time(moment)


def _aware(now: datetime) -> datetime:
    return now if now.tzinfo is not None else now.replace(tzinfo=UTC)
