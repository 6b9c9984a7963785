"""hooks.core.status: the prior history's check, remembered across calls, answers only what the
entries it is given would, and every call gets its own entries (issue 32 item 4)."""

from __future__ import annotations

from typing import Any

import pytest

from hooks.core import status
from hooks.core.declared import InvalidRequest, decode
from hooks.core.historyentry import entries_of
from hooks.core.status import Status

ENTRY: dict[str, Any] = {"attempt": 0, "jobSet": "train-0", "created": "2026-01-01T00:00:00Z",
                         "started": "2026-01-01T00:00:05Z", "ended": "2026-01-01T01:00:00Z", "outcome": "Failed",
                         "exitCode": 1, "failedNodes": ["node-a"], "drainStuck": False}


def prior(*entries: dict[str, Any]) -> Status:
    """The prior status carrying ``entries`` as ``attempts``, decoded as a request's is."""
    return decode({"phase": "Running", "attempt": len(entries), "attempts": list(entries)}, Status, "parent.status")


def refused(entries: list[dict[str, Any]]) -> str:
    with pytest.raises(InvalidRequest) as error:
        prior(*entries)
    return error.value.message


CHANGES: list[tuple[str, dict[str, Any]]] = [
    ("a time one second on", {"started": "2026-01-01T00:00:06Z"}),
    ("a node", {"failedNodes": ["node-b"]}),
    ("a boolean", {"drainStuck": True}),
    ("an exit code", {"exitCode": 2}),
    ("an integer written as a number", {"exitCode": 1.0}),
    ("a boolean for an integer", {"exitCode": True}),
    ("a time the API server refuses", {"ended": "2026-01-01T25:00:00Z"}),
    ("an empty string", {"outcome": ""}),
    ("a key it does not know", {"extra": "x"}),
]


@pytest.mark.parametrize(("what", "change"), CHANGES, ids=[what for what, _ in CHANGES])
def test_a_changed_history_misses_the_memo(what: str, change: dict[str, Any]) -> None:
    """After the unchanged history was checked (and remembered), the changed one is checked as
    ``entries_of`` checks it, not answered from the memo: a key too coarse fails here."""
    assert prior(ENTRY).attempts == list(entries_of([ENTRY]))
    hits = status._checked_entries.cache_info().hits
    assert prior(ENTRY).attempts == list(entries_of([ENTRY]))
    assert status._checked_entries.cache_info().hits == hits + 1, "the same history is a hit"
    changed = {**ENTRY, **change}
    try:
        expected: object = list(entries_of([changed]))
    except ValueError as error:
        assert str(error) in refused([changed])
        return
    answered = prior(changed).attempts
    assert answered == expected and [list(entry) for entry in answered] == [list(entry) for entry in expected]
    assert [type(value) for value in answered[0].values()] == [type(value) for value in expected[0].values()]
    if what != "a key it does not know":
        assert answered != list(entries_of([ENTRY]))


def test_the_entries_come_in_the_order_written_however_the_history_came() -> None:
    """The hooks' own history as the API server hands it back (each entry's keys sorted) or as written:
    a call gets ``entries_of``'s entries, the same bytes, from the memo as from the check."""
    import orjson

    for order in (sorted(ENTRY), list(ENTRY), list(reversed(ENTRY))):
        entry = {key: ENTRY[key] for key in order}
        for _ in range(2):  # a miss, then a hit
            assert orjson.dumps(prior(entry).attempts) == orjson.dumps(list(entries_of([entry])))
    misses = status._checked_entries.cache_info().misses
    for _ in range(2):
        with pytest.raises(ValueError):
            status._checked_entries(orjson.dumps({"not": "a list"}))
    assert status._checked_entries.cache_info().misses == misses + 2, "a refusal is checked every time"


def test_every_call_gets_its_own_entries() -> None:
    """A row that changes the history it was given (a key, the failed nodes) leaves the next call's
    as the request says."""
    first = prior(ENTRY, {**ENTRY, "attempt": 1, "jobSet": "train-1"})
    first.attempts[0]["outcome"] = "changed"
    first.attempts[1]["failedNodes"].append("node-z")
    first.attempts.append({"attempt": 9})
    assert prior(ENTRY, {**ENTRY, "attempt": 1, "jobSet": "train-1"}).attempts == list(
        entries_of([ENTRY, {**ENTRY, "attempt": 1, "jobSet": "train-1"}]))


def test_a_refused_history_is_refused_every_time() -> None:
    bad = {**ENTRY, "attempt": -1}
    assert refused([bad]) == refused([bad])
    assert refused([bad]).startswith("parent.status.attempts[0].attempt")
