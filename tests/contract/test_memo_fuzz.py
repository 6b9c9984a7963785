"""The memos across calls (``hooks.core.built``'s JobSet, ``hooks.core.status``' checked history,
``hooks.core.apitime``'s admitted and read texts) never make two requests share an answer they
should not: every recorded payload, and seeded random mutants of it (a value changed, a key dropped,
keys reordered, an integer written as a number, a time one character off, the Job's name or
namespace), is answered by the warm memos exactly as by a fresh computation with every memo cleared:
the same status code and the same bytes. Beside the recorded payloads (none of which builds a JobSet
that a call then changes), a few seeds whose calls change the JobSet they were handed (a checkpoint
mount, nodes excluded) next to seeds with the same JobSet inputs that change nothing. The memoised
passes run every payload before its mutants, then (memos cleared) after them, then all shuffled
(all hits), then on four threads at once. A key that misses a field the answer depends on, a
memoised value a caller changes, or an entry shared between threads would answer some request as
another, and fails here (tried: a JobSet key without the namespace, the attempt or ``maxRestarts``;
a history key that takes ``1``, ``1.0`` and ``true`` as one; an admitted-text key of the first 19
characters; the memoised JobSet or history handed out itself)."""

from __future__ import annotations

import copy
import json
import pathlib
import random
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, NamedTuple

import orjson
import pytest

import podread
from hooks.core import apitime, built, status
from hooks.server.config import Settings
from hooks.server.handler import handle
from tests.record_payloads import load, scenario_dirs
from tests.support import job_request, job_spec

SEED = 20261206
MUTANTS = 10
"""Mutants per recorded payload."""
TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[tT]\d{2}:\d{2}:\d{2}")

Path = tuple[Any, ...]
Case = tuple[str, "World", dict[str, Any]]
EXCLUDED_AT = "2026-01-01T01:00:00Z"
"""The synthetic seeds' clock: attempt 0 ended ten minutes before it, so its nodes are still excluded."""


def clear_memos() -> None:
    """Forgets every memo that lives across calls."""
    built._built_json.cache_clear()
    status._checked_entries.cache_clear()
    apitime._admitted_memo.clear()
    apitime._read_memo.clear()


class World(NamedTuple):
    """What a request is answered against: the pods (a ``reader_from_snapshot`` document), the clock, the hook."""

    pods: dict[str, Any]
    now: str
    hook: str


def world(folder: pathlib.Path) -> World:
    meta = load(folder, "meta")
    return World(load(folder, "pods"), meta["now"], meta["hook"])


def answer(where: World, request: dict[str, Any]) -> tuple[int, bytes]:
    """The hook's status code and encoded body for ``request``, against ``where``."""
    now = datetime.fromisoformat(where.now.replace("Z", "+00:00"))
    result = handle(orjson.dumps(request), where.hook, reader=podread.reader_from_snapshot(where.pods),
                    clock=lambda: now, settings=Settings())
    return result.status_code, result.encoded


def ended_attempt(cls: str) -> dict[str, Any]:
    """Attempt 0's history entry, ended ten minutes before ``EXCLUDED_AT`` on two nodes, of class ``cls``."""
    return {"attempt": 0, "jobSet": "train-0", "created": "2026-01-01T00:00:00Z", "ended": "2026-01-01T00:50:00Z",
            "outcome": "Failed", "class": cls, "cause": "node-lost", "failedNodes": ["node-a", "node-b"]}


def seeds() -> list[tuple[str, World, dict[str, Any]]]:
    """Requests whose call changes the JobSet it was handed (nodes excluded, a checkpoint mounted), each
    beside one with the same JobSet inputs (name, namespace, attempt, replicatedJobs, launcher,
    maxRestarts, managedBy) whose call changes nothing: one memo entry, two answers."""
    empty = World({"cache": {"pods": []}, "live": {"pods": []}, "jobs": {"items": []}}, EXCLUDED_AT, "sync")
    spec = job_spec(max_restarts=9)

    def restarting(cls: str, spec: dict[str, Any]) -> dict[str, Any]:
        return job_request(spec=spec, status={"phase": "Restarting", "attempt": 0, "restarts": 1,
                                              "attempts": [ended_attempt(cls)]})

    return [
        ("seed-excludes-nodes", empty, restarting("node", spec)),
        ("seed-excludes-none-user-class", empty, restarting("user", spec)),
        ("seed-excludes-none-zero-seconds", empty,
         restarting("node", spec | {"failurePolicy": {"excludeNodesSeconds": 0}})),
        ("seed-mounts-a-checkpoint", empty, job_request(spec=spec | {"checkpoint": {"graceSeconds": 120}},
                                                        configmaps=True)),
        ("seed-mounts-nothing", empty, job_request(spec=spec, configmaps=True)),
    ]


def paths(value: Any, at: Path = ()) -> list[Path]:
    """Every path under ``value`` (objects and arrays included), ``at`` first."""
    found = [at]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += paths(inner, (*at, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += paths(inner, (*at, index))
    return found


def changed_time(text: str, rng: random.Random) -> str:
    """``text`` (a time) one small step off: a digit, the case of ``T``/``Z``, a fraction, an offset,
    a second the API server refuses, or a last character it refuses."""
    digits = [index for index, char in enumerate(text) if char.isdigit()]
    index = rng.choice(digits)
    choices: list[Callable[[], str]] = [
        lambda: text[:index] + str((int(text[index]) + 1) % 10) + text[index + 1:],
        lambda: text.swapcase(),
        lambda: text[:19] + ".5" + text[19:],
        lambda: text[:19] + "+00:00",
        lambda: text[:17] + "60" + text[19:],
        lambda: text[:-1] + "X",
    ]
    return rng.choice(choices)()


def changed(value: Any, rng: random.Random) -> Any:
    """``value`` changed in one small way that JSON can tell."""
    if isinstance(value, bool):
        return rng.choice([not value, int(value)])
    if isinstance(value, int):
        return rng.choice([value + 1, value - 1, float(value), -value, str(value), bool(value)])
    if isinstance(value, float):
        return rng.choice([int(value), value + 0.5])
    if isinstance(value, str):
        if TIME.match(value):
            return changed_time(value, rng)
        return rng.choice([value + "x", value[:-1], value.upper(), "", value + "-1"])
    if isinstance(value, dict):
        if not value:
            return {"x": 1}
        keys = list(value)
        dropped = rng.choice(keys)
        return rng.choice([{k: v for k, v in value.items() if k != dropped}, dict(reversed(list(value.items())))])
    if isinstance(value, list):
        if not value:
            return [None]
        dropped = rng.randrange(len(value))
        return rng.choice([value[:dropped] + value[dropped + 1:], list(reversed(value)), [*value, value[0]]])
    return rng.choice([0, "", {}, []])


def set_at(document: Any, path: Path, value: Any) -> None:
    for key in path[:-1]:
        document = document[key]
    document[path[-1]] = value


def get_at(document: Any, path: Path) -> Any:
    for key in path:
        document = document[key]
    return document


MEMO_AREAS: tuple[Path, ...] = (("metadata", "name"), ("metadata", "namespace"), ("spec", "replicatedJobs"),
                                ("spec", "launcher"), ("spec", "maxRestarts"), ("spec", "managedBy"),
                                ("status", "attempts"), ("status", "startTime"), ("status", "completionTime"))
"""What the memos' answers depend on: the JobSet's inputs, the prior history, the status' times."""


def mutant(request: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """``request`` with one or two changes, most in what the memos' answers depend on (``MEMO_AREAS``,
    a scalar more often than a whole object), the rest anywhere in its spec or status."""
    mutated = copy.deepcopy(request)
    parent = mutated["parent"]
    for _ in range(rng.choice((1, 1, 2))):
        areas = [area for area in MEMO_AREAS if _has(parent, area)]
        if rng.random() < 0.2 or not areas:
            areas = [area for area in (("spec",), ("status",)) if _has(parent, area)]
        area = rng.choice(areas)
        found = paths(get_at(parent, area), area)
        scalars = [path for path in found if not isinstance(get_at(parent, path), dict | list)]
        path = rng.choice(scalars if scalars and rng.random() < 0.7 else found)
        set_at(parent, path, changed(get_at(parent, path), rng))
    return mutated


def _has(document: Any, path: Path) -> bool:
    for key in path:
        if not isinstance(document, dict) or key not in document:
            return False
        document = document[key]
    return True


def families() -> list[list[Case]]:
    """Every recorded request and seed, each followed by its seeded mutants: (an id, its world, the request)."""
    rng = random.Random(SEED)
    bases = [(folder.name, world(folder), load(folder, "request")) for folder in scenario_dirs()] + seeds()
    return [[(name, where, request), *((f"{name}~{n}", where, mutant(request, rng)) for n in range(MUTANTS))]
            for name, where, request in bases]


def cases() -> list[Case]:
    return [case for family in families() for case in family]


Fresh = dict[str, tuple[Case, tuple[int, bytes]]]


@pytest.fixture(scope="module")
def fresh() -> Fresh:
    """Every case's answer computed with every memo cleared just before it."""
    answers = {}
    for case in cases():
        clear_memos()
        answers[case[0]] = (case, answer(case[1], case[2]))
    clear_memos()
    return answers


def test_the_seeds_change_the_jobset_they_share_a_memo_entry_with() -> None:
    """Each seed that changes its JobSet answers otherwise than its twin that does not."""
    clear_memos()
    answered = {name: answer(where, request)[1] for name, where, request in seeds()}
    assert b"NotIn" in answered["seed-excludes-nodes"]
    assert b"NotIn" not in answered["seed-excludes-none-user-class"]
    assert b"NotIn" not in answered["seed-excludes-none-zero-seconds"]
    assert answered["seed-mounts-a-checkpoint"].count(b"volumeMounts") > answered["seed-mounts-nothing"].count(
        b"volumeMounts")


def test_the_mutants_change_answers(fresh: Fresh) -> None:
    """The mutants are not all refused alike, nor all answered as their payload: the comparison below
    sees answers that differ in the details the memos keep."""
    bodies = {answered for _, answered in fresh.values()}
    ok = [answered for _, answered in fresh.values() if answered[0] == 200]
    assert len(bodies) > len(scenario_dirs()) * 2
    assert len(ok) > len(fresh) // 2


def test_warm_memos_answer_every_request_as_a_fresh_computation(fresh: Fresh) -> None:
    """Each payload (or seed) before its mutants, then after them, then all shuffled (all hits)."""
    in_families = [[fresh[name] for name, _, _ in family] for family in families()]
    shuffled = list(fresh.values())
    random.Random(SEED + 1).shuffle(shuffled)
    rounds = [("payload first", [item for family in in_families for item in family]),
              ("payload last", [item for family in in_families for item in reversed(family)]),
              ("shuffled, all hits", shuffled)]
    for round_, order in rounds:
        if round_ != "shuffled, all hits":
            clear_memos()
        for (name, where, request), expected in order:
            assert answer(where, request) == expected, f"{name} ({round_}): the memos answered otherwise"
    assert built._built_json.cache_info().hits > 100, "the JobSet memo answered"
    assert status._checked_entries.cache_info().hits > 10, "the history memo answered"
    assert apitime._admitted_memo, "the admitted texts were remembered"


def test_memos_shared_by_threads_answer_every_request_as_a_fresh_computation(fresh: Fresh) -> None:
    clear_memos()
    order = list(fresh.values()) * 2
    random.Random(SEED + 2).shuffle(order)
    with ThreadPoolExecutor(4) as pool:
        answered = list(pool.map(lambda item: answer(item[0][1], item[0][2]), order))
    wrong = [case[0] for (case, expected), got in zip(order, answered, strict=True) if got != expected]
    assert not wrong, f"answered otherwise with the memos shared by threads: {wrong[:5]}"


def test_a_status_history_mutated_by_a_caller_is_not_the_next_callers(fresh: Fresh) -> None:
    """Each call's history and JobSet are its own: a caller that changes every list and object it was
    handed (as a row may) leaves the next identical request's answer as the fresh one."""
    clear_memos()
    with_history = [(case, expected) for case, expected in fresh.values()
                    if isinstance((case[2]["parent"].get("status") or {}).get("attempts"), list)
                    and case[2]["parent"]["status"]["attempts"]]
    assert with_history, "some payloads carry a prior history"
    mutated = 0
    for (name, where, request), expected in with_history:
        try:
            first = status._entries(request["parent"]["status"]["attempts"])
        except ValueError:  # a history the API server refuses: nothing remembered to change
            continue
        mutated += 1
        for entry in first:
            entry.clear()
        first.append({"attempt": 99})
        assert answer(where, request) == expected, name
    assert mutated > 10


def test_the_fuzz_is_seeded() -> None:
    """The same seed makes the same mutants (a failure names a case that can be run again)."""
    assert json.dumps([c[2] for c in cases()[:50]]) == json.dumps([c[2] for c in cases()[:50]])
