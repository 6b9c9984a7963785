"""hooks.core.built: the JobSet remembered across calls answers only what its inputs build, a fresh
copy every time (issue 32 item 4)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from hooks.core import built
from hooks.core.jobset import InvalidSpec, build_jobset
from hooks.core.observed import parse_request
from hooks.core.work import Context
from tests.support import FakeReader, job_spec
from tests.support.requests import job_request

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def context(spec: dict[str, Any], *, name: str = "train", namespace: str = "default") -> Context:
    """The Context of a sync of the Job ``namespace/name`` with ``spec``."""
    observed = parse_request(job_request(name=name, namespace=namespace, spec=spec), "sync")
    return Context(observed, FakeReader([]), NOW)


def direct(ctx: Context, attempt: int) -> dict[str, Any]:
    """``build_jobset`` itself, without the memo."""
    return build_jobset(ctx.job_object(), attempt)


def image(spec: dict[str, Any], value: str) -> None:
    spec["replicatedJobs"][-1]["template"]["spec"]["template"]["spec"]["containers"][0]["image"] = value


def changes() -> list[tuple[str, Callable[[dict[str, Any]], None], dict[str, str]]]:
    """Each input ``build_jobset`` reads, changed alone: (what, how the spec changes, how the Job's names change)."""
    return [
        ("a value deep in a template", lambda spec: image(spec, "other:2"), {}),
        ("the replicas", lambda spec: spec["replicatedJobs"][-1].update(replicas=3), {}),
        ("an integer written as a number", lambda spec: spec["replicatedJobs"][-1].update(replicas=2.0), {}),
        ("the order of a template's keys", lambda spec: spec["replicatedJobs"].__setitem__(
            -1, dict(reversed(list(spec["replicatedJobs"][-1].items())))), {}),
        ("the launcher", lambda spec: spec.update(launcher="worker"), {}),
        ("maxRestarts", lambda spec: spec.update(maxRestarts=-1), {}),
        ("managedBy", lambda spec: spec.update(managedBy="kueue.x-k8s.io/multikueue"), {}),
        ("the Job's name", lambda spec: None, {"name": "other"}),
        ("the namespace", lambda spec: None, {"namespace": "team-b"}),
    ]


def outcome(build: Callable[[], dict[str, Any]]) -> bytes:
    """What ``build`` answers, as JSON in its own key order (so that an order or a type tells): the
    JobSet, or the ``InvalidSpec`` it raises."""
    try:
        return orjson.dumps(build())
    except InvalidSpec as refused:
        return orjson.dumps({"InvalidSpec": refused.reason, "code": refused.code})


@pytest.mark.parametrize(("what", "change", "names"), changes(), ids=[what for what, _, _ in changes()])
def test_a_changed_input_misses_the_memo(what: str, change: Callable[[dict[str, Any]], None],
                                         names: dict[str, str]) -> None:
    """After the unchanged Job was built (and remembered), the changed one is built as
    ``build_jobset`` builds it, not answered from the memo; a key too coarse fails here."""
    base = context(job_spec(max_restarts=1))
    assert built._desired(base, 0) == direct(base, 0)
    hits = built._built_json.cache_info().hits
    assert built._desired(base, 0) == direct(base, 0)
    assert built._built_json.cache_info().hits == hits + 1, "the same inputs are a hit"
    spec = job_spec(max_restarts=1)
    change(spec)
    changed = context(spec, **names)
    answered = outcome(lambda: built._desired(changed, 0))
    assert answered == outcome(lambda: direct(changed, 0))
    assert answered != outcome(lambda: direct(base, 0)), what


def test_another_attempt_misses_the_memo() -> None:
    ctx = context(job_spec())
    first, second = built._desired(ctx, 0), built._desired(ctx, 1)
    assert (first, second) == (direct(ctx, 0), direct(ctx, 1))
    assert first["metadata"]["name"] == "train-0" and second["metadata"]["name"] == "train-1"


def test_every_call_gets_its_own_copy() -> None:
    """A call that changes its JobSet (``checkpoint.mount``, ``exclusion.exclude`` do) leaves the
    next call's as built."""
    ctx = context(job_spec())
    expected = copy.deepcopy(direct(ctx, 0))
    first = built._desired(ctx, 0)
    first["metadata"]["labels"]["changed"] = "yes"
    first["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"].clear()
    assert built._desired(ctx, 0) == expected


def test_a_spec_that_cannot_be_built_is_refused_every_time() -> None:
    spec = job_spec()
    spec["replicatedJobs"] = []
    ctx = context(spec)
    for _ in range(2):
        with pytest.raises(InvalidSpec) as refused:
            built._desired(ctx, 0)
        assert refused.value.code == "NoReplicatedJobs"
