"""Type fuzz over the recorded requests: no value in any field of any request gets a 5xx.

Every field of every ``tests/payloads/*/request.json`` (found by walking the request, the root
included) is swapped for each JSON type (string, integer, float, booleans, null, object, array),
deleted, or set to an extreme (the 64-bit integer bounds, 0, -1, the empty string, a very long
string, times at the ends of ``datetime``'s range); every optional field of the CRD's ``spec`` and
``status`` that a request lacks is added with each of those values. Each case is answered by
``hooks.server.handler.handle`` with the scenario's own Reader (``podread.reader_from_snapshot`` over
its pods.json, at its meta.json ``now``, as ``tests/contract/test_payloads.py`` does) and its Events and
writes queued (``hooks.server.effects``, into memory). It must answer below 500, every 4xx body must
be ``{"error": <message>}`` naming the field changed (one of its keys) or the request part it broke,
and no effect may fail to be queued.

Field paths are deduplicated across payloads: list indexes and the keys of the child and related
maps are collapsed into a pattern (``children.<group>.*.status.conditions[].type``), and each
variant of each pattern is tried in up to ``SCENARIOS_PER_PATTERN`` scenarios (the first that has
it, then others drawn with a fixed seed, so the variants spread over the scenarios): about 30,000
cases, always the same, in well under a minute on two cores. The count is printed.

Every time field of the status (each the CRD declares ``format: date-time``) is also set to every
spelling the API server admits (``tests.support.timespellings.ADMITTED``: lower-case ``t``/``z``,
fractions, offsets, and those that name no instant), where a scenario has it or added where it
lacks it, in sync and finalize scenarios whose own request is answered 200: each must be answered
200 too, never a 4xx or a 5xx (issue 31: a status the API server admitted is always answered).
"""

from __future__ import annotations

import copy
import json
import logging
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

import pytest

import podread
from hooks.server.config import Settings
from hooks.server.effects import Effects
from hooks.server.handler import handle
from hooks.server.writer import MemoryWriter
from tests.record_payloads import load, post, scenario_dirs
from tests.support import crdschema
from tests.support.timespellings import ADMITTED

SEED = 20
SCENARIOS_PER_PATTERN = 8
ADDED_SCENARIOS = 8
"""How many scenarios lacking an optional CRD field get it added."""
TIME_SCENARIOS = 4
"""For each status time field and admitted spelling, how many sync and how many finalize scenarios."""
LIST_ITEMS = {"attempts": {"attempt": 0, "jobSet": "fuzzed-0"}, "conditions": {"type": "Fuzzed", "status": "True"},
              "excludedNodes": {"node": "fuzzed-node", "class": "node", "attempt": 0}}
"""An item of each status list a time is in, for a scenario that has no such list."""
DELETE = object()
LONG = "x" * 100_000
VARIANTS: tuple[tuple[str, Any], ...] = (
    ("string", "x"), ("integer", 7), ("float", 1.5), ("true", True), ("false", False), ("null", None),
    ("object", {}), ("array", []), ("deleted", DELETE), ("int64-max", 2**63 - 1), ("int64-min", -(2**63)),
    ("zero", 0), ("minus-one", -1), ("empty-string", ""), ("long-string", LONG),
    ("far-future", "9999-12-31T23:59:59Z"), ("far-past", "0001-01-01T00:00:00+23:59"),
    ("array-of-null", [None]), ("object-of-null", {"x": None}),
)
Path = tuple[str | int, ...]
CHILD_MAPS = ("children", "related")



@dataclass(frozen=True)
class Scenario:
    """One recorded payload: its request (and the request as JSON text, which each case parses into a
    copy of its own), hook and clock, and the Reader of its pods.json."""

    name: str
    request: Mapping[str, Any]
    hook: str
    now: datetime
    reader: Any
    text: str


@dataclass(frozen=True)
class Case:
    """One changed request: ``path`` in ``scenario`` set to ``variant`` (or deleted, or added)."""

    scenario: Scenario
    path: Path
    variant: str
    value: Any

    def body(self) -> bytes:
        request = json.loads(self.scenario.text)  # a fresh copy: faster than deepcopy, the same JSON
        return json.dumps(changed(request, self.path, self.value)).encode()

    def __str__(self) -> str:
        return f"{self.scenario.name}: {shown(self.path)} = {self.variant}"


@cache
def scenarios() -> tuple[Scenario, ...]:
    found = []
    for folder in scenario_dirs():
        meta = load(folder, "meta")
        request = load(folder, "request")
        found.append(Scenario(folder.name, request, meta["hook"],
                              datetime.fromisoformat(meta["now"].replace("Z", "+00:00")),
                              podread.reader_from_snapshot(load(folder, "pods")), json.dumps(request)))
    return tuple(found)


def walk(value: Any, path: Path = ()) -> Iterator[Path]:
    """Every path in ``value``, the root (``()``) first, parents before children."""
    yield path
    if isinstance(value, Mapping):
        for key, child in value.items():
            yield from walk(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from walk(child, (*path, index))


def pattern(path: Path) -> str:
    """``path`` with list indexes collapsed to ``[]`` and the keys of the child and related maps to ``*``."""
    parts: list[str] = []
    for depth, key in enumerate(path):
        if isinstance(key, int):
            parts.append("[]")
        elif depth == 2 and path[0] in CHILD_MAPS:
            parts.append(".*")
        else:
            parts.append(f".{key}" if parts else str(key))
    return "".join(parts) or "<request>"


def shown(path: Path) -> str:
    return "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in path).lstrip(".") or "<request>"


def changed(request: dict[str, Any], path: Path, value: Any) -> Any:
    """``request`` with ``path`` set to ``value`` (removed for ``DELETE``; missing parents are added)."""
    if not path:
        return None if value is DELETE else copy.deepcopy(value)
    node: Any = request
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node[key]
    last = path[-1]
    if value is DELETE:
        if isinstance(node, dict):
            node.pop(last, None)
        else:
            del node[last]
    else:
        node[last] = copy.deepcopy(value)
    return request


def crd_paths() -> list[Path]:
    """Every field the CRD declares under ``spec`` and ``status``, down to the Job templates (what
    the API server stores is open from there on), list items as index 0."""
    schema = crdschema.crd_schema(crdschema.REPO_ROOT / "manifests" / "crd-job.yaml", "v1alpha1")
    found: list[Path] = []

    def visit(node: Mapping[str, Any], path: Path) -> None:
        found.append(path)
        for key, child in (node.get("properties") or {}).items():
            visit(child, (*path, key))
        if isinstance(node.get("items"), Mapping):
            visit(node["items"], (*path, 0))

    for part in ("spec", "status"):
        visit(schema["properties"][part], ("parent", part))
    return found


def crd_time_paths() -> list[Path]:
    """Every field the CRD declares ``format: date-time`` under ``status`` (list items as index 0)."""
    schema = crdschema.crd_schema(crdschema.REPO_ROOT / "manifests" / "crd-job.yaml", "v1alpha1")

    def at(path: Path) -> Mapping[str, Any]:
        node = schema
        for key in path[1:]:
            node = node["items"] if isinstance(key, int) else node["properties"][key]
        return node

    return [path for path in crd_paths() if path[1] == "status" and at(path).get("format") == "date-time"]


def present(request: Any, path: Path) -> bool:
    """Whether ``path`` is in ``request``."""
    node = request
    for key in path:
        found = key < len(node) if isinstance(node, list) and isinstance(key, int) else (
            isinstance(node, Mapping) and key in node)
        if not found:
            return False
        node = node[key]
    return True


def addable(request: Any, path: Path) -> bool:
    """Whether ``path`` is missing from ``request`` and can be added (its parents are objects, or
    missing; a list index only into an existing list with that index)."""
    node = request
    for depth, key in enumerate(path):
        if isinstance(key, int):
            if not isinstance(node, list) or key >= len(node):
                return False
            node = node[key]
            continue
        if not isinstance(node, Mapping):
            return False
        if key not in node:
            return all(isinstance(rest, str) for rest in path[depth + 1:])
        node = node[key]
    return False


@cache
def all_cases() -> tuple[Case, ...]:
    """Every case, in a fixed order: each field pattern in up to ``SCENARIOS_PER_PATTERN`` scenarios
    with every variant, then each CRD field added to up to ``ADDED_SCENARIOS`` scenarios lacking it."""
    rng = random.Random(SEED)
    where: dict[str, list[tuple[Scenario, Path]]] = {}
    for scenario in scenarios():
        seen: set[str] = set()
        for path in walk(scenario.request):
            key = pattern(path)
            if key not in seen:
                seen.add(key)
                where.setdefault(key, []).append((scenario, path))
    cases: list[Case] = []
    for key in sorted(where):
        first, *others = where[key]
        for name, value in VARIANTS:
            chosen = [first, *rng.sample(others, min(len(others), SCENARIOS_PER_PATTERN - 1))]
            cases.extend(Case(scenario, path, name, value) for scenario, path in chosen)
    for path in crd_paths():
        lacking = [s for s in scenarios() if addable(s.request, path)]
        for name, value in VARIANTS:
            if value is not DELETE:
                chosen = rng.sample(lacking, min(len(lacking), ADDED_SCENARIOS))
                cases.extend(Case(scenario, path, f"added {name}", value) for scenario in chosen)
    return tuple(cases)



def answer_code(case: Case) -> int:
    """The HTTP code ``handle`` answers ``case`` with."""
    return handle(case.body(), case.scenario.hook, reader=case.scenario.reader, clock=lambda: case.scenario.now,
                  settings=Settings()).status_code


@cache
def time_cases() -> tuple[Case, ...]:
    """Each status time field (``crd_time_paths``) in each admitted spelling, in up to
    ``TIME_SCENARIOS`` sync and as many finalize scenarios that have it or can have it added, of
    those whose own request is answered 200; the same cases every run."""
    rng = random.Random(SEED)
    answered = [s for s in scenarios() if answer_code(Case(s, ("controller",), "unchanged", {})) == 200]
    cases: list[Case] = []
    for path in crd_time_paths():
        for hook in ("sync", "finalize"):
            fits = [s for s in answered if s.hook == hook and (present(s.request, path) or addable(s.request, path))]
            for scenario in rng.sample(fits, min(len(fits), TIME_SCENARIOS)):
                cases.extend(Case(scenario, path, f"admitted {name}", text) for name, text in ADMITTED.items())
            if not fits and 0 in path:  # no such list in these scenarios: a list of one item is added
                listed = path[:path.index(0)]
                fits = [s for s in answered if s.hook == hook and addable(s.request, listed)]
                for scenario in rng.sample(fits, min(len(fits), TIME_SCENARIOS)):
                    cases.extend(Case(scenario, listed, f"added one item, {path[-1]} admitted {name}",
                                      [{**LIST_ITEMS[str(listed[-1])], str(path[-1]): text}])
                                 for name, text in ADMITTED.items())
    return tuple(cases)


def problem(case: Case, effects: Effects | None = None) -> str | None:
    """What is wrong with the answer to ``case`` (``None``: nothing); with ``effects``, a 200's
    Events and writes are queued there too (``Effects.submit`` logs what it cannot queue)."""
    result = handle(case.body(), case.scenario.hook, reader=case.scenario.reader, clock=lambda: case.scenario.now,
                    settings=Settings(), effects=effects)
    code, body = result.status_code, result.body
    if code >= 500:
        return f"{code} {body}"
    if code == 200:
        return None
    if set(body) != {"error"} or not isinstance(body["error"], str) or not body["error"]:
        return f"{code} with a body that is not {{'error': <message>}}: {body}"
    names = [str(key) for key in case.path if isinstance(key, str)] or ["request"]
    if not any(name in body["error"] for name in names):
        return f"{code} whose message names none of {names[-3:]}: {body['error'][:200]}"
    return None


def test_every_field_of_every_recorded_request_gets_no_5xx(capsys: pytest.CaptureFixture[str],
                                                           caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)
    effects = Effects(MemoryWriter())
    cases = all_cases()
    failures = [f"{case}: {found}" for case in cases if (found := problem(case, effects)) is not None]
    assert effects.flush()
    failures += [f"effects: {record.getMessage()}" for record in caplog.records if record.name.startswith(
        "nvcre.hooks.effects")]
    with capsys.disabled():  # the count, in make test's output too
        print(f"\ntype fuzz: {len(cases)} cases over {len({pattern(c.path) for c in cases})} field patterns of "
              f"{len(scenarios())} recorded requests, {len(failures)} failed")
    assert len(cases) > 5000
    assert failures == [], f"{len(failures)} of {len(cases)} cases:\n" + "\n".join(failures[:60])


def test_every_admitted_spelling_of_every_status_time_is_answered(capsys: pytest.CaptureFixture[str]) -> None:
    cases = time_cases()
    failures = [f"{case}: {code}" for case in cases if (code := answer_code(case)) != 200]
    with capsys.disabled():
        print(f"\ntype fuzz of the status times: {len(cases)} cases over {len(crd_time_paths())} fields, "
              f"{len(failures)} not answered 200")
    for hook in ("sync", "finalize"):  # every field, in either hook: set, or in an item added
        fields = {(*case.path, *((0, *set(case.value[0]) - set(LIST_ITEMS[str(case.path[-1])]))
                                  if isinstance(case.value, list) else ())) for case in cases
                  if case.scenario.hook == hook}
        assert fields == set(crd_time_paths()), (hook, fields)
    assert failures == [], f"{len(failures)} of {len(cases)} cases:\n" + "\n".join(failures[:60])


def test_patterns_collapse_indexes_and_child_keys() -> None:
    path: Path = ("children", "JobSet.jobset.x-k8s.io/v1alpha2", "train-0", "status", "conditions", 3, "type")
    assert pattern(path) == "children.JobSet.jobset.x-k8s.io/v1alpha2.*.status.conditions[].type"
    assert pattern(()) == "<request>"
    assert changed({"a": [1, {"b": 2}]}, ("a", 1, "b"), DELETE) == {"a": [1, {}]}
    assert changed({"a": {}}, ("a", "b", "c"), 5) == {"a": {"b": {"c": 5}}}
    assert addable({"parent": {"spec": {}}}, ("parent", "spec", "drain", "stuckAfterSeconds"))
    assert not addable({"parent": {"spec": {"drain": 3}}}, ("parent", "spec", "drain", "stuckAfterSeconds"))


def test_the_fuzz_finds_a_5xx_when_there_is_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check is not vacuous: a decision that raises on a value is reported as a 500."""
    import hooks.server.handler as handler

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OverflowError("date value out of range")

    monkeypatch.setattr(handler, "decide", broken)
    case = next(case for case in all_cases() if pattern(case.path) == "parent.status.startTime" and
                case.variant == "far-future")
    assert problem(case) == "500 {'error': 'internal error: OverflowError'}"


def test_a_4xx_that_names_another_field_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    import hooks.server.handler as handler
    from hooks.core.observed import InvalidRequest

    case = next(case for case in all_cases() if pattern(case.path) == "parent.status.message" and
                case.variant == "integer")
    assert problem(case) is None  # 400 "parent.status.message: expected a string, got integer"

    def vague(payload: object, hook: str) -> Any:
        raise InvalidRequest(400, "bad request")

    monkeypatch.setattr(handler, "parse_request", vague)
    assert "names none of" in str(problem(case))


def test_an_admitted_queue_managed_job_with_a_null_pod_spec_or_metadata_is_no_5xx() -> None:
    """A case the fuzz's seeded draw met once the scenarios grew: behind Kueue, an admitted
    Workload's node labels were merged into ``template.spec`` set to null (``setdefault`` kept the null):
    a 500. Null counts as unset."""
    folder = next(d for d in scenario_dirs() if d.name == "v2-queued-admitted-on-a-flavor-with-node-labels")
    for part in ("spec", "metadata"):
        request = json.loads((folder / "request.json").read_text())
        request["parent"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][part] = None
        code, body = post(folder, request)
        assert code == 200, (part, body)
        (child,) = [c for c in body["children"] if c["kind"] == "JobSet"]
        pod = child["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
        assert isinstance(pod["spec"], dict) and isinstance(pod["metadata"], dict)
