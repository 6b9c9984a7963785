"""Time limits of a Job (issue 15): ``spec.activeDeadlineSeconds`` and ``spec.ttlSecondsAfterFinished``.

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

from hooks.core.conditions import format_time
from hooks.core.jobset import InvalidSpec

MAX_SECONDS = 10 * 365 * 24 * 3600
"""The largest limit accepted (ten years): enough for any job, and far from datetime's range."""


def parse_time(text: str) -> datetime | None:
    """An RFC 3339 time of the status (``2026-01-01T00:00:00Z``) as an aware datetime; ``None`` for
    ``""``. Raises ``ValueError`` for anything else."""
    if not text:
        return None
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def check(spec: Mapping[str, Any]) -> None:
    """Checks the time limits of ``spec``: each unset or an integer (``activeDeadlineSeconds`` and
    ``drain.stuckAfterSeconds`` at least 1, the others at least 0), at most ``MAX_SECONDS``;
    ``forceDeleteStuckPodsAfterSeconds`` not below ``stuckAfterSeconds`` (default 300).
    Raises ``InvalidSpec`` (code ``InvalidTimeLimit``)."""
    drain = spec.get("drain") or {}
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
    after = 300 if after is None else after  # null is unset, as the CRD's CEL rule reads it (issue 20)
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
    without either."""
    seconds = _limit(spec, "activeDeadlineSeconds")
    start = parse_time(start_time)
    if seconds is None or start is None:
        return None
    return start + timedelta(seconds=seconds)


def ttl_at(spec: Mapping[str, Any], completion_time: str) -> datetime | None:
    """When a finished Job is to be deleted: ``completionTime + ttlSecondsAfterFinished``, or
    ``None`` without either."""
    seconds = _limit(spec, "ttlSecondsAfterFinished")
    done = parse_time(completion_time)
    if seconds is None or done is None:
        return None
    return done + timedelta(seconds=seconds)


def passed(moment: datetime | None, now: datetime) -> bool:
    """Whether ``moment`` is set and ``now`` is at or after it."""
    return moment is not None and _aware(now) >= moment


def wake_in(moment: datetime | None, now: datetime) -> float | None:
    """Whole seconds from ``now`` until ``moment`` (at least 1), or ``None`` when it is unset or past."""
    if moment is None or passed(moment, now):
        return None
    return float(max(1, math.ceil((moment - _aware(now)).total_seconds())))


def stamp(moment: datetime) -> str:
    """``moment`` as the status writes times."""
    return format_time(moment)


def _aware(now: datetime) -> datetime:
    return now if now.tzinfo is not None else now.replace(tzinfo=UTC)
