"""The shape of a ``status.attempts`` entry: its keys, their types and bounds, and how a
prior history is read. What goes into an entry is ``hooks.core.history``'s.

Pure, and the standard library only (with ``hooks.core.apitime``, which is too), so that whatever
reads the prior status (``hooks.core.observed``) can check a history without the decision's modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hooks.core import apitime

ENTRY_KEYS = ("attempt", "jobSet", "created", "started", "ended", "outcome", "failedReplicatedJob", "failedPod",
              "node", "exitCode", "reason", "cause", "drainSeconds", "drainStuck", "failedPodDeletionStarted",
              "failedPodGracePeriodEnds", "checkpointRequested", "checkpointStep", "checkpointAcknowledged",
              "checkpointExpired")
"""Every key of an entry, in the order written."""
TIME_KEYS = ("created", "started", "ended", "failedPodDeletionStarted", "failedPodGracePeriodEnds",
             "checkpointRequested", "checkpointAcknowledged", "checkpointExpired")
STRING_LIMITS = {"jobSet": 63, "outcome": 32, "failedReplicatedJob": 63, "failedPod": 253, "node": 253,
                 "reason": 128, "cause": 63}
"""The longest value of each string key (the CRD's ``maxLength``); a longer one is cut when written."""
MAX_ENTRIES = 100
"""``status.attempts``' ``maxItems``, and the largest ``spec.attemptsHistoryLimit``."""


def entries_of(value: object) -> tuple[dict[str, Any], ...]:
    """A prior ``status.attempts``: absent (``None``) or an array of at most ``MAX_ENTRIES`` objects,
    each with an ``attempt`` (an integer >= 0) and its other keys of the CRD's types (strings,
    times the API server admits as ``date-time``, ``hooks.core.apitime``, kept as they came even
    when they name no instant; integers, ``drainSeconds`` >= 0, ``drainStuck`` a boolean; null and
    ``""`` as absent).
    Returns the entries with their known keys only (the API server prunes the others), one per
    attempt (the first), sorted by attempt. Raises ``ValueError`` whose message starts with the
    field's path (``attempts[0].node: expected a string, got integer``) for anything the CRD refuses."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ValueError(f"attempts: expected an array, got {_json_type(value)}")
    if len(value) > MAX_ENTRIES:
        raise ValueError(f"attempts: {len(value)} entries, more than {MAX_ENTRIES}")
    found: dict[int, dict[str, Any]] = {}
    for index, entry in enumerate(value):
        where = f"attempts[{index}]"
        if not isinstance(entry, Mapping):
            raise ValueError(f"{where}: expected an object, got {_json_type(entry)}")
        kept = {key: _checked(key, entry[key], f"{where}.{key}") for key in ENTRY_KEYS
                if entry.get(key) not in (None, "")}
        if "attempt" not in kept:
            raise ValueError(f"{where}.attempt: expected an integer, got nothing")
        found.setdefault(kept["attempt"], kept)
    return tuple(found[number] for number in sorted(found))


def _checked(key: str, value: object, path: str) -> Any:
    """``value`` when it has ``key``'s type (the module doc), else ``ValueError`` naming ``path``."""
    if key in ("attempt", "exitCode", "drainSeconds", "checkpointStep"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{path}: expected an integer, got {_json_type(value)}")
        if key != "exitCode" and value < 0:
            raise ValueError(f"{path}: expected an integer >= 0, got {value}")
        return value
    if key == "drainStuck":
        if not isinstance(value, bool):
            raise ValueError(f"{path}: expected a boolean, got {_json_type(value)}")
        return value
    if not isinstance(value, str):
        raise ValueError(f"{path}: expected a string, got {_json_type(value)}")
    if key in TIME_KEYS and value and not apitime.admitted(value):
        raise ValueError(f"{path}: {value[:apitime.SHOWN]!r} is not a date-time the API server admits")
    return value


def _json_type(value: object) -> str:
    """The JSON name of ``value``'s type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    return "array" if isinstance(value, list | tuple) else type(value).__name__
