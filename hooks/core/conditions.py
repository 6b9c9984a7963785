"""Kubernetes-style status conditions: read one, set one, keep the list deterministic.

A condition is a plain dict with ``type``, ``status`` ("True", "False" or "Unknown"), ``reason``,
``message`` and ``lastTransitionTime`` (RFC 3339, UTC, seconds precision, ``Z`` suffix).
``lastTransitionTime`` moves only when a condition's ``status`` changes; reason and message may change
without moving it. Lists are kept sorted by ``type`` so the same state always serializes the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from hooks.core.vocab import ConditionStatus

Condition = dict[str, Any]

TRUE = ConditionStatus.TRUE
FALSE = ConditionStatus.FALSE
UNKNOWN = ConditionStatus.UNKNOWN

_FIELDS = ("type", "status", "reason", "message", "lastTransitionTime")


def format_time(now: datetime) -> str:
    """Formats ``now`` as RFC 3339 in UTC with seconds precision (``2026-01-01T00:00:00Z``).

    A naive datetime is taken to be UTC already.
    """
    if now.tzinfo is not None:
        now = now.astimezone(UTC)
    return now.replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def normalize(condition: Mapping[str, Any]) -> Condition:
    """Returns a copy of ``condition`` holding only the standard fields, in their standard order."""
    return {key: condition[key] for key in _FIELDS if key in condition}


def get_condition(conditions: Iterable[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    """Returns the condition of type ``type_`` from ``conditions``, or ``None`` when there is none."""
    for condition in conditions:
        if condition.get("type") == type_:
            return condition
    return None


def set_condition(
    conditions: Iterable[Mapping[str, Any]],
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: datetime,
) -> list[Condition]:
    """Returns a new condition list with condition ``type_`` set to the given values.

    Reads ``conditions`` (not modified). ``lastTransitionTime`` is kept from the existing condition
    when its ``status`` is unchanged and it has one; otherwise it becomes ``now``. The result is
    sorted by type, one condition per type.
    """
    since = transition_time(conditions, type_, status, now)
    updated = {"type": type_, "status": status, "reason": reason, "message": message,
               "lastTransitionTime": since}
    rest = [normalize(c) for c in conditions if c.get("type") != type_]
    return sort_conditions([*rest, updated])


def transition_time(conditions: Iterable[Mapping[str, Any]], type_: str, status: str, now: datetime) -> Any:
    """The ``lastTransitionTime`` condition ``type_`` has once set to ``status`` (``set_condition``):
    the existing condition's when its ``status`` is unchanged and it has one, else ``now``."""
    previous = get_condition(conditions, type_)
    if previous is not None and previous.get("status") == status and previous.get("lastTransitionTime"):
        return previous["lastTransitionTime"]
    return format_time(now)


def sort_conditions(conditions: Iterable[Mapping[str, Any]]) -> list[Condition]:
    """Returns ``conditions`` normalized, one per type (the first wins), sorted by type."""
    seen: dict[str, Condition] = {}
    for condition in conditions:
        seen.setdefault(str(condition.get("type", "")), normalize(condition))
    return [seen[key] for key in sorted(seen)]
