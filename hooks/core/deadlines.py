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
from datetime import UTC, datetime, timedelta

from hooks.core import apitime
from hooks.core.conditions import format_time
from hooks.core.jobset import InvalidSpec
from hooks.core.request import MAX_SECONDS, STUCK_AFTER_DEFAULT, Spec, kept, range_of

__all__ = ["MAX_SECONDS", "STUCK_AFTER_DEFAULT", "check", "deadline_at", "parse_time", "passed", "stamp",
           "time_or_none", "ttl_at", "wake_in"]


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


def check(spec: Spec) -> None:
    """Checks the time limits of ``spec``: each unset or within its declared ``Range``
    (``hooks.core.request``: ``activeDeadlineSeconds`` and ``drain.stuckAfterSeconds`` at least 1,
    the others at least 0, all at most ``MAX_SECONDS``); ``forceDeleteStuckPodsAfterSeconds`` not
    below ``stuckAfterSeconds`` (its declared default when unset or ``null``, as the CRD's CEL rule
    reads it). Raises ``InvalidSpec`` (code ``InvalidTimeLimit``) and nothing else."""
    drain = spec.drain
    for path, holder, name in (("activeDeadlineSeconds", spec, "active_deadline_seconds"),
                               ("ttlSecondsAfterFinished", spec, "ttl_seconds_after_finished"),
                               ("drain.stuckAfterSeconds", drain, "stuck_after_seconds"),
                               ("drain.forceDeleteStuckPodsAfterSeconds", drain,
                                "force_delete_stuck_pods_after_seconds")):
        value, bounds = getattr(holder, name), range_of(type(holder), name)
        if value is not None and not bounds.admits(value):
            raise InvalidSpec(f"spec.{path} must be an integer from {bounds.low} to {bounds.high}, got {value!r}",
                              "InvalidTimeLimit")
    force, after = drain.force_delete_stuck_pods_after_seconds, drain.stuck_after_seconds
    if force is not None and force < after:
        raise InvalidSpec(f"spec.drain.forceDeleteStuckPodsAfterSeconds ({force}) must be at least stuckAfterSeconds "
                          f"({after}): a pod is only force-deleted once it is known to be stuck", "InvalidTimeLimit")


def deadline_at(spec: Spec, start_time: str) -> datetime | None:
    """When the Job's active deadline passes: ``startTime + activeDeadlineSeconds``, or ``None``
    without either (a limit out of its range is none: ``hooks.core.request.kept``), when
    ``startTime`` is not a time (``parse_time``), or when the sum is past ``datetime``'s range (a
    moment that never comes). Never raises."""
    return _after(kept(spec, "active_deadline_seconds"), start_time)


def ttl_at(spec: Spec, completion_time: str) -> datetime | None:
    """When a finished Job is to be deleted: ``completionTime + ttlSecondsAfterFinished``, or
    ``None`` without either (or out of its range), when ``completionTime`` is not a time, or when
    the sum is past ``datetime``'s range. Never raises."""
    return _after(kept(spec, "ttl_seconds_after_finished"), completion_time)


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
