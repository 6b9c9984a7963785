"""The shape of a ``status.attempts`` entry: its keys, their types and bounds, and how a
prior history is read. What goes into an entry is ``hooks.core.history``'s.

Pure, and the standard library only (with ``hooks.core.apitime`` and ``hooks.core.vocab``, which are
too: the keys are ``vocab.AttemptField``), so that whatever reads the prior status
(``hooks.core.observed``) can check a history without the decision's modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hooks.core import apitime
from hooks.core.vocab import AttemptField, FailureClass, members

F = members(AttemptField)
"""``AttemptField``'s members, read on every call (``hooks.core.vocab.members``)."""

ENTRY_KEYS: tuple[str, ...] = tuple(key.value for key in AttemptField)
"""Every key of an entry, in the order written (``hooks.core.vocab.AttemptField``), as plain strings."""
TIME_KEYS: tuple[str, ...] = tuple(key.value for key in (F.CREATED, F.STARTED, F.ENDED, F.FAILED_POD_DELETION_STARTED,
                                                         F.FAILED_POD_GRACE_PERIOD_ENDS, F.CHECKPOINT_REQUESTED,
                                                         F.CHECKPOINT_ACKNOWLEDGED, F.CHECKPOINT_EXPIRED))
STRING_LIMITS: dict[str, int] = {F.JOB_SET.value: 63, F.OUTCOME.value: 32, F.FAILED_REPLICATED_JOB.value: 63,
                                 F.FAILED_POD.value: 253, F.NODE.value: 253, F.REASON.value: 128, F.CAUSE.value: 63,
                                 F.CLASS.value: 32, F.CLASS_EVIDENCE.value: 256}
"""The longest value of each string key (the CRD's ``maxLength``); a longer one is cut when written."""
NODE_NAME_LIMIT, MAX_FAILED_NODES = 253, 8
"""``failedNodes``: each name's longest value and the most names (the CRD's ``maxLength``, ``maxItems``)."""
CLASSES = tuple(word.value for word in FailureClass)
"""``class``' values (the CRD's ``enum``)."""
MAX_ENTRIES = 100
"""``status.attempts``' ``maxItems``, and the largest ``spec.attemptsHistoryLimit``."""


def entries_of(value: object) -> tuple[dict[str, Any], ...]:
    """A prior ``status.attempts``: absent (``None``) or an array of at most ``MAX_ENTRIES`` objects,
    each with an ``attempt`` (an integer >= 0) and its other keys of the CRD's types (strings,
    times the API server admits as ``date-time``, ``hooks.core.apitime``, kept as they came even
    when they name no instant; integers, ``drainSeconds`` >= 0, ``drainStuck`` a boolean; ``class``
    one of the failure classes, ``failedNodes`` an array of at most ``MAX_FAILED_NODES`` strings;
    null and ``""`` as absent).
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
        if F.ATTEMPT not in kept:
            raise ValueError(f"{where}.attempt: expected an integer, got nothing")
        found.setdefault(kept[F.ATTEMPT], kept)
    return tuple(found[number] for number in sorted(found))


def _checked(key: str, value: object, path: str) -> Any:
    """``value`` when it has ``key``'s type (the module doc), else ``ValueError`` naming ``path``."""
    if key in (F.ATTEMPT, F.EXIT_CODE, F.DRAIN_SECONDS, F.CHECKPOINT_STEP):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{path}: expected an integer, got {_json_type(value)}")
        if key != F.EXIT_CODE and value < 0:
            raise ValueError(f"{path}: expected an integer >= 0, got {value}")
        return value
    if key == F.FAILED_NODES:
        return _names(value, path)
    if key == F.DRAIN_STUCK:
        if not isinstance(value, bool):
            raise ValueError(f"{path}: expected a boolean, got {_json_type(value)}")
        return value
    if not isinstance(value, str):
        raise ValueError(f"{path}: expected a string, got {_json_type(value)}")
    if key == F.CLASS and value not in CLASSES:
        raise ValueError(f"{path}: {value[:40]!r} is not a failure class ({', '.join(CLASSES)})")
    if key in TIME_KEYS and value and not apitime.admitted(value):
        raise ValueError(f"{path}: {value[:apitime.SHOWN]!r} is not a date-time the API server admits")
    return value


def _names(value: object, path: str) -> list[str]:
    """``failedNodes``: an array of at most ``MAX_FAILED_NODES`` node names (strings of at most
    ``NODE_NAME_LIMIT`` characters), else ``ValueError`` naming ``path``."""
    if not isinstance(value, list):
        raise ValueError(f"{path}: expected an array, got {_json_type(value)}")
    if len(value) > MAX_FAILED_NODES:
        raise ValueError(f"{path}: {len(value)} names, more than {MAX_FAILED_NODES}")
    for index, name in enumerate(value):
        if not isinstance(name, str) or not name or len(name) > NODE_NAME_LIMIT:
            raise ValueError(f"{path}[{index}]: expected a node name (1 to {NODE_NAME_LIMIT} characters), "
                             f"got {_json_type(name)}")
    return list(value)


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


def ordered(entry: Mapping[str, Any]) -> dict[str, Any]:
    """``entry`` with its keys in ``ENTRY_KEYS`` order (others dropped), each string cut to its
    ``STRING_LIMITS`` bound: the one shape every writer of ``status.attempts`` gives an entry
    (``hooks.core.history``, ``hooks.core.checkpoint``)."""
    out: dict[str, Any] = {}
    for key in ENTRY_KEYS:
        if key in entry:
            bound = STRING_LIMITS.get(key)
            if key == F.FAILED_NODES:
                out[key] = sorted({str(name)[:NODE_NAME_LIMIT] for name in entry[key]})[:MAX_FAILED_NODES]
            else:
                out[key] = str(entry[key])[:bound] if bound is not None else entry[key]
    return out


def newly_classed(before: object, after: object) -> tuple[tuple[int, str], ...]:
    """The attempts whose end got its failure class (``class``, issue 34) between two
    ``status.attempts``: ``before`` (the prior status', checked) and ``after`` (the answered one), as
    ``(attempt, class)``, by attempt; an entry classed in both (or dropped from ``after``) is not
    one. What ``hooks.server.effects`` counts once per end (``nvcre_attempt_ends_total``)."""
    has = _classes(after)
    if not has:  # every answer but the one that classifies an end (issue 32 item 4: no need to read ``before``)
        return ()
    had = _classes(before)
    return tuple((attempt, cls) for attempt, cls in sorted(has.items()) if attempt not in had)


def _classes(entries: object) -> dict[int, str]:
    """The ``class`` of each entry of ``entries`` (a ``status.attempts`` list) that has one, by its
    integer ``attempt`` (the first entry of a number); ``{}`` for anything but a list or tuple."""
    found: dict[int, str] = {}
    if isinstance(entries, list | tuple):
        for entry in entries:
            if ((type(entry) is dict or isinstance(entry, Mapping)) and isinstance(entry.get(F.ATTEMPT), int)
                    and entry.get(F.CLASS)):
                found.setdefault(entry[F.ATTEMPT], str(entry[F.CLASS]))
    return found

