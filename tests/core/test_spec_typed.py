"""The Job's spec is read typed where it is declared (issue 32, item 2): ``hooks.core.request.Spec`` is
the one home of each spec field's JSON type, range and default; ``parse_request`` produces it once, and
every core module reads its attributes, never the raw mapping (no ``spec.get(...)`` re-parse in the rows).
The JobSet templates (``replicatedJobs``) and the failure-policy rules stay raw inside it, as written."""

from __future__ import annotations

import ast
from pathlib import Path

import msgspec
import pytest

from hooks.core import budget, deadlines, gang, history, stuck
from hooks.core.declared import InvalidRequest
from hooks.core.jobset import InvalidSpec, build_jobset, spec_of
from hooks.core.observed import parse_request
from hooks.core.request import (
    MAX_SECONDS,
    STUCK_AFTER_DEFAULT,
    DrainSpec,
    GangSpec,
    Spec,
    default_of,
    range_of,
    read_spec,
)
from tests.support import job_request, job_spec

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "hooks" / "core"
DECLARING = CORE / "request.py"
VOCABULARY = CORE / "vocab.py"
DECLARED_CONSTANTS = {"MAX_SECONDS", "STUCK_AFTER_DEFAULT", "DEFAULT_HISTORY_LIMIT", "GANG_POLICIES",
                      "WHEN_UNAVAILABLE"}
"""The constants a spec field's range or default is written with: bound to a literal in ``request.py`` only."""
DECLARED_WORDS = {"Gang", "Wait", "StartWithoutGang"}
"""The values ``spec.gang``'s fields admit: the vocabulary's words (``hooks.core.vocab``), which
``request.py`` declares the fields with; written nowhere else (``"None"`` is also the cluster's
default policy, ``GangCluster``, so it is not searched for)."""


def _is_spec(node: ast.expr) -> bool:
    """Whether ``node`` names a spec: the name ``spec`` or an attribute ``.spec`` (``ctx.observed.spec``)."""
    return (isinstance(node, ast.Name) and node.id == "spec") or (
        isinstance(node, ast.Attribute) and node.attr == "spec")


def reparses(path: Path) -> list[str]:
    """Where ``path`` reads a spec as a raw mapping: ``spec.get(...)``, ``spec[...]``, ``observed.spec.get(...)``,
    or a parameter ``spec`` not annotated ``Spec``; each as ``line: what``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        got = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
            and _is_spec(node.func.value)
        if got or (isinstance(node, ast.Subscript) and _is_spec(node.value)):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.arg) and node.arg == "spec" and (
                node.annotation is None or ast.unparse(node.annotation) != "Spec"):
            found.append(f"{node.lineno}: parameter spec: {ast.unparse(node.annotation) if node.annotation else '?'}")
    return found


def declares_again(path: Path) -> list[str]:
    """Where ``path`` writes a spec field's range or default itself: binds one of ``DECLARED_CONSTANTS``
    to a value computed from literals, or holds the literal ``STUCK_AFTER_DEFAULT`` or a ``spec.gang``
    value; each as ``line: what``."""
    found = []
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)}
            value = node.value
            literal = value is not None and all(isinstance(part, ast.Constant | ast.Tuple | ast.BinOp | ast.operator
                                                               | ast.expr_context) for part in ast.walk(value))
            if names & DECLARED_CONSTANTS and literal:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Constant) and (
                (type(node.value) is int and node.value in (STUCK_AFTER_DEFAULT, MAX_SECONDS))
                or node.value in DECLARED_WORDS):
            found.append(f"{node.lineno}: {node.value!r}")
    return found


def core_modules() -> list[Path]:
    return [path for path in sorted(CORE.rglob("*.py")) if path not in (DECLARING, VOCABULARY)]


def test_no_core_module_reads_the_spec_as_a_raw_mapping() -> None:
    found = {str(path.relative_to(ROOT)): lines for path in core_modules() if (lines := reparses(path))}
    assert found == {}


def test_each_spec_fields_range_and_default_are_written_once() -> None:
    found = {str(path.relative_to(ROOT)): lines for path in [*core_modules(), ROOT / "hooks" / "server" / "config.py"]
             if (lines := declares_again(path))}
    assert found == {}
    assert declares_again(DECLARING), "the declaring module itself is where they are written"


def test_the_planted_second_readings_are_found(tmp_path: Path) -> None:
    planted = tmp_path / "rows.py"
    planted.write_text("def f(ctx, spec: Mapping[str, Any]):\n"
                       "    a = ctx.observed.spec.get('launcher')\n"
                       "    b = spec['maxRestarts']\n"
                       "    return a, b, spec.get('drain')\n")
    assert [line.split(":")[0] for line in reparses(planted)] == ["1", "2", "3", "4"]
    planted.write_text("STUCK_AFTER_DEFAULT = 300\nMAX_SECONDS = 10 * 365 * 24 * 3600\n"
                       "def f(x):\n    return x or 'Wait'\n")
    assert sorted(line.split(":")[0] for line in declares_again(planted)) == ["1", "1", "2", "4"]


def test_the_spec_is_typed_once_and_frozen() -> None:
    observed = parse_request(job_request(spec={**job_spec(), "maxRestarts": 2}), "sync")
    assert isinstance(observed.spec, Spec) and observed.spec.max_restarts == 2
    with pytest.raises(AttributeError):
        observed.spec.max_restarts = 3  # type: ignore[misc]
    assert spec_of({"spec": observed.spec}) is observed.spec, "the Job built from it reuses the value"
    assert observed.spec.replicated_jobs == job_spec()["replicatedJobs"], "the JobSet templates stay as written"


def test_an_unset_or_null_field_reads_as_its_one_declared_default() -> None:
    for raw in ({}, {"maxRestarts": None, "attemptsHistoryLimit": None, "suspend": None, "drain": None, "gang": None},
                {"drain": {"stuckAfterSeconds": None}, "gang": {"whenUnavailable": None}}):
        spec = read_spec(raw)
        assert stuck.stuck_after(spec) == spec.drain.stuck_after_seconds == default_of(DrainSpec, "stuck_after_seconds")
        assert default_of(DrainSpec, "stuck_after_seconds") == STUCK_AFTER_DEFAULT == deadlines.STUCK_AFTER_DEFAULT
        assert history.limit(spec) == default_of(Spec, "attempts_history_limit") == history.DEFAULT_LIMIT
        assert budget.max_restarts(spec) == default_of(Spec, "max_restarts") == 0
        assert gang.when_unavailable(spec) == default_of(GangSpec, "when_unavailable") == gang.WAIT
        assert gang.policy(spec, "cluster's") == "cluster's"
        assert spec.suspend is False and spec.active_deadline_seconds is None


def test_the_checks_refuse_what_the_declared_ranges_refuse() -> None:
    """Each bound a check refuses at is the declared one, in the check's own words."""
    bounds = range_of(Spec, "active_deadline_seconds")
    deadlines.check(read_spec({"activeDeadlineSeconds": bounds.low}))
    with pytest.raises(InvalidSpec, match=f"from {bounds.low} to {bounds.high}, got {bounds.low - 1}"):
        deadlines.check(read_spec({"activeDeadlineSeconds": bounds.low - 1}))
    with pytest.raises(InvalidSpec, match=rf"at least stuckAfterSeconds \({STUCK_AFTER_DEFAULT}\)"):
        deadlines.check(read_spec({"drain": {"forceDeleteStuckPodsAfterSeconds": STUCK_AFTER_DEFAULT - 1}}))
    with pytest.raises(InvalidSpec, match=r"spec\.gang\.whenUnavailable must be one of Wait, StartWithoutGang"):
        gang.check(read_spec({"gang": {"whenUnavailable": "Later"}}))
    assert range_of(Spec, "attempts_history_limit").high == history.MAX_LIMIT


def test_a_struct_field_is_declared_with_its_default() -> None:
    """Every spec field reads as a value of its type when unset: a struct field is never ``None``."""
    spec = read_spec({"drain": None, "gang": None})
    assert isinstance(spec.drain, DrainSpec) and isinstance(spec.gang, GangSpec)
    for declared in (Spec, DrainSpec, GangSpec):
        for field in msgspec.structs.fields(declared):
            assert field.default is not msgspec.NODEFAULT, f"{declared.__name__}.{field.name} has a default"


def test_a_job_built_by_hand_is_read_as_a_request_is() -> None:
    """``build_jobset`` of a raw Job (the CRD cross-check, the tests): the spec is read once by
    ``spec_of``; a field of the wrong JSON type is ``InvalidSpec`` in the words a request's 400 has."""
    job = {"metadata": {"name": "train", "namespace": "default"}, "spec": {**job_spec(), "maxRestarts": "3"}}
    with pytest.raises(InvalidSpec, match=r"^spec\.maxRestarts: expected an integer, got string$"):
        build_jobset(job, 0)
    with pytest.raises(InvalidSpec, match=r"^spec must be an object$"):
        build_jobset({**job, "spec": ["x"]}, 0)
    raw = {**job, "spec": job_spec()}
    assert build_jobset(raw, 0) == build_jobset({**raw, "spec": read_spec(job_spec())}, 0)


def test_the_400_words_of_the_failure_policy_are_kept() -> None:
    """The rules stay raw, yet a rule or matcher of the wrong JSON type is the same 400 as when each rule
    was a declared Struct."""
    for rules, words in (([{"name": "a", "onExitCodes": 3}], "rules[0].onExitCodes: expected an object, got integer"),
                         ([{"onJobSetFailure": []}], "rules[0].onJobSetFailure: expected an object, got array"),
                         ([5], "rules[0]: expected an object, got integer"),
                         ({}, "rules: expected an array, got object")):
        with pytest.raises(InvalidRequest) as refused:
            parse_request(job_request(spec={**job_spec(), "failurePolicy": {"rules": rules}}), "sync")
        assert refused.value.message == f"parent.spec.failurePolicy.{words}"
    rule = {"name": "a", "action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]}
    spec = parse_request(job_request(spec={**job_spec(), "failurePolicy": {"rules": [rule]}}), "sync").spec
    assert spec.rules == [rule], "a rule is kept whole, its fields as written"
