"""The lifecycle model (issue 32): the five teardowns are declarations run by one protocol
(``rows.teardown.teardown``) that returns a ``Step``; ``lifecycle.apply`` is the one place a Step
enters the work; a gate runs before the barrier and, when it lets the JobSet run, evidence asks the
lifecycle (not a list of its own) whether a running JobSet may stand next to the phase."""

from __future__ import annotations

import ast
import inspect
import pathlib
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from hooks.core import conditions as cond
from hooks.core import decide as decide_module
from hooks.core import evidence, lifecycle
from hooks.core.actions import DeleteJob, ForceDeletePod
from hooks.core.decide import decide
from hooks.core.lifecycle import ConditionChange, GateVerdict, JobSetFate, Move, Record, Step, Teardown, apply
from hooks.core.observed import parse_request
from hooks.core.rows import current, deadline, kueue, mismatch, terminal
from hooks.core.rows.teardown import DELETE, SUSPEND, teardown
from hooks.core.status import Status
from hooks.core.vocab import TORN_DOWN, ConditionType, EndCause, Outcome, Phase, Quota
from hooks.core.work import Context, Work
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod, workload_child

NOW = datetime(2026, 1, 1, tzinfo=UTC)
QUEUE = {"kueue.x-k8s.io/queue-name": "team"}
ROOT = pathlib.Path(__file__).resolve().parents[2]


def context(reader: Any = None, **request: Any) -> Context:
    observed = parse_request(job_request(**request), "finalize" if request.get("finalizing") else "sync")
    return Context(observed, reader if reader is not None else FakeReader(), NOW)


def work_of(ctx: Context) -> Work:
    prior = ctx.observed.status
    return Work.of(prior, conditions=cond.sort_conditions(prior.conditions))


def running_pod(attempt: int = 0) -> dict[str, Any]:
    return make_pod(f"train-{attempt}-worker-0-0", job="train", workload=f"train-{attempt}", replicated_job="worker")


RUNNING = {"phase": "Running", "attempt": 0, "workload": "train-0"}


# ---- the five declarations, one protocol -----------------------------------------------------------------

@pytest.mark.parametrize(("declared", "holding", "done", "quota", "outcome"), [
    (DELETE, Phase.TERMINATING, Phase.TERMINATING, (Quota.KEEP, Quota.RELEASE), Outcome.PROCEEDED),
    (SUSPEND, Phase.SUSPENDING, Phase.SUSPENDED, (Quota.KEEP, Quota.RELEASE), Outcome.PROCEEDED),
    (deadline.DEADLINE, Phase.TERMINATING, Phase.FAILED, (None, None), Outcome.TERMINAL),
    (kueue.EVICTION, Phase.SUSPENDING, Phase.QUEUED, (Quota.KEEP, Quota.RELEASE), Outcome.PROCEEDED),
])
def test_a_teardown_holds_on_the_barrier_then_steps_as_declared(declared: Teardown, holding: Phase, done: Phase,
                                                               quota: tuple[Quota | None, Quota | None],
                                                               outcome: Outcome) -> None:
    """The JobSet is left out, the workload cleared; held: the holding phase, the barrier's words;
    drained: the done phase and the declared outcome. ``teardown`` writes nothing into the work: the
    step carries the barrier's record (``Drained``), and the caller applies it."""
    held_ctx = context(FakeReader([running_pod()]), status=RUNNING, jobsets=[jobset_child("train", 0)])
    work = work_of(held_ctx)
    before = work_of(held_ctx)
    held = teardown(held_ctx, work, declared)
    assert (held.phase, held.outcome, held.quota, held.jobset, held.children, held.workload, held.transition) == (
        holding, Outcome.HELD, quota[0], JobSetFate.DROP, (), "", declared.move)
    assert "waiting for JobSet train-0 to be deleted" in (held.message or "") and not held.finalized
    assert work == before, "the teardown writes nothing: not even the barrier's record"
    assert held.record is not None and (held.record.active_pods, held.record.resync) == (1, True)
    assert [(c.type, c.reason) for c in held.record.conditions] == [("Drained", "WorkloadPresent")]
    apply(held_ctx, held, work)
    assert [c.reason for c in work.conditions if c.type == "Drained"] == ["WorkloadPresent"]
    assert (work.active_pods, work.resync, work.phase) == (1, True, holding)
    drained_ctx = context(status=RUNNING)
    passed = teardown(drained_ctx, work_of(drained_ctx), declared)
    assert (passed.phase, passed.outcome, passed.quota, passed.finalized) == (
        done, outcome, quota[1], declared is DELETE)


def test_each_teardown_s_own_words_frame_the_barrier_s() -> None:
    ctx = context(FakeReader([running_pod()]), status=RUNNING, labels=QUEUE, jobsets=[jobset_child("train", 0)],
                  workloads=[workload_child("train", state="evicted", reason="Preempted", message="by a higher one")])
    evicted = teardown(ctx, work_of(ctx), kueue.EVICTION)
    assert evicted.message == ("evicted by Kueue (Preempted): by a higher one; waiting for JobSet train-0 to be "
                               "deleted and 1 active pod: train-0-worker-0-0 before releasing the quota")
    assert [(c.type, c.status, c.reason) for c in evicted.conditions] == [("Admitted", "False", "Preempted")]
    past = context(FakeReader([running_pod()]), status=RUNNING | {"startTime": "2025-12-31T00:00:00Z"},
                   spec=job_spec() | {"activeDeadlineSeconds": 60}, jobsets=[jobset_child("train", 0)])
    exceeded = teardown(past, work_of(past), deadline.DEADLINE)
    assert (exceeded.message or "").startswith("deadline exceeded, tearing down: waiting for JobSet train-0")
    assert [c.type for c in exceeded.conditions] == ["DeadlineExceeded"]  # Failed only once it passed


def test_an_eviction_at_the_last_attempt_ends_the_job_instead_of_queueing() -> None:
    ctx = context(status={"phase": "Running", "attempt": 9999, "workload": "train-9999"}, labels=QUEUE,
                  workloads=[workload_child("train", state="evicted")])
    step = teardown(ctx, work_of(ctx), kueue.EVICTION)
    assert (step.phase, step.outcome, step.quota, step.transition, step.message) == (
        Phase.FAILED, Outcome.TERMINAL, Quota.RELEASE, Move.ATTEMPT_LIMIT, "")
    assert [c.type for c in step.conditions] == ["Admitted", "Failed"]


def test_the_next_attempt_s_hold_leaves_the_phase_and_the_children_to_the_row_before() -> None:
    ctx = context(FakeReader([running_pod()]), status={"phase": "Restarting", "attempt": 0, "restarts": 1})
    work = work_of(ctx)
    held = teardown(ctx, work, current.NEXT_ATTEMPT)
    assert (held.phase, held.children, held.jobset, held.quota, held.outcome) == (
        None, None, None, Quota.KEEP, Outcome.HELD)
    drained = context(status={"phase": "Restarting", "attempt": 3, "restarts": 1})
    passed = teardown(drained, work_of(drained), current.NEXT_ATTEMPT)
    assert (passed.phase, passed.attempt, passed.outcome) == (Phase.PENDING, 4, Outcome.PROCEEDED)
    last = context(status={"phase": "Restarting", "attempt": 9999, "restarts": 1})
    limited = teardown(last, work_of(last), current.NEXT_ATTEMPT)
    assert (limited.phase, limited.transition, limited.workload) == (Phase.FAILED, Move.ATTEMPT_LIMIT, "")


def test_decide_matches_the_teardowns_as_declarations_and_the_history_reads_how_they_end() -> None:
    assert (DELETE.ends, SUSPEND.ends, kueue.EVICTION.ends, deadline.DEADLINE.ends) == (
        EndCause.DELETED, EndCause.SUSPENDED, EndCause.EVICTED, EndCause.DEADLINE_EXCEEDED)
    assert {end for end in (DELETE.ends, SUSPEND.ends, kueue.EVICTION.ends, deadline.DEADLINE.ends)} == TORN_DOWN
    assert decide_module.teardown_row(context(finalizing=True, deleting="2025-12-31T00:00:00Z")) is DELETE
    assert decide_module.teardown_row(context(spec=job_spec(suspend=True))) is SUSPEND


# ---- the step, applied in one place ----------------------------------------------------------------------

def test_apply_writes_what_the_step_says_and_leaves_the_rest() -> None:
    ctx = context()
    work = Work(phase="Running", attempt=2, restarts=1, workload="train-2", message="before", conditions=(),
                children=[{"kind": "JobSet"}])
    apply(ctx, Step(Outcome.HELD, conditions=(ConditionChange(ConditionType.DRAINED, "False", "PodsActive", "x"),),
                    resync=True, transition=Move.SUSPEND), work)
    assert (work.phase, work.attempt, work.workload, work.message, work.children, work.kind, work.resync) == (
        "Running", 2, "train-2", "before", [{"kind": "JobSet"}], Outcome.HELD, True)
    assert [(c.type, c.last_transition_time) for c in work.conditions] == [("Drained", "2026-01-01T00:00:00Z")]
    apply(ctx, Step(Outcome.PROCEEDED, phase=Phase.PENDING, attempt=3, message="", children=(), workload="",
                    quota=Quota.RELEASE, finalized=True, wakes=(lifecycle.Wake("ttl", 30.0),)), work)
    assert (work.phase, work.attempt, work.message, work.children, work.quota, work.finalized, work.wake) == (
        Phase.PENDING, 3, "", [], Quota.RELEASE, True, 30.0)
    assert work.resync and work.transition == Move.SUSPEND, "a step that names no move leaves the one made"


def test_apply_writes_a_barrier_s_record_before_the_step_s_conditions_and_a_change_at_its_own_time() -> None:
    ctx = context()
    work = Work(phase="Running", attempt=0, restarts=0, workload="train-0", active_pods=3, conditions=())
    deletes = (ForceDeletePod("default", "p", "uid", "node-a", "stuck"),)
    record = Record(conditions=(ConditionChange(ConditionType.DRAINED, "False", "PodsActive", "x",
                                                since="2025-12-31T00:00:00Z"),),
                    active_pods=None, resync=True, stuck_pods=2, deletes=deletes)
    apply(ctx, Step(Outcome.HELD, record=record, actions=(DeleteJob("default", "train", "u", "why"),),
                    conditions=(ConditionChange(ConditionType.DRAINED, "False", "Other", "y"),)), work)
    assert [(c.reason, c.last_transition_time) for c in work.conditions] == [("Other", "2025-12-31T00:00:00Z")]
    assert (work.active_pods, work.resync, work.stuck_pods) == (3, True, 2), "a failed read keeps the count"
    assert work.actions == [*deletes, DeleteJob("default", "train", "u", "why")]


def test_then_is_one_step_that_says_what_two_applied_in_turn_say() -> None:
    """``lifecycle.then``: the next attempt's step is the teardown's, then rows 7-11's, applied once;
    applying the composed step gives the work that applying both in turn gives."""
    ctx = context()
    first = Step(Outcome.PROCEEDED, phase=Phase.PENDING, attempt=1, message="", workload="", resync=True,
                 conditions=(ConditionChange(ConditionType.DRAINED, "True", "NoActivePods", ""),),
                 record=Record(active_pods=0), transition=Move.NEXT_ATTEMPT)
    second = Step(Outcome.CREATED, workload="train-1", children=({"kind": "JobSet"},), message="waiting",
                  conditions=(ConditionChange(ConditionType.INVALID_SPEC, "False", "Valid", ""),))
    one, two = (Work(phase="Restarting", attempt=0, restarts=1, conditions=()) for _ in range(2))
    apply(ctx, first, one)
    apply(ctx, second, one)
    apply(ctx, lifecycle.then(first, second), two)
    assert one == two
    with pytest.raises(ValueError, match="record"):
        lifecycle.then(first, first)


def test_the_arrows_between_two_phases_are_the_table_s_in_its_order() -> None:
    """``lifecycle.arrows`` looks the pair up in an index built from ``ARROWS`` (every decision
    asks): for every pair of the table's ends, and a pair of none, it answers what a walk over the
    table answers, in the table's order."""
    ends = sorted({end for arrow in lifecycle.ARROWS for end in (arrow.source, arrow.target)} | {"Nowhere"})
    for source in ends:
        for target in ends:
            walked = tuple(a for a in lifecycle.ARROWS if (a.source, a.target) == (source, target))
            assert lifecycle.arrows(source, target) == walked, (source, target)
    assert lifecycle.arrows(Phase.RUNNING, Phase.SUSPENDING) == lifecycle.arrows("Running", "Suspending")
    assert len(lifecycle.arrows("Running", "Suspending")) == 2  # spec.suspend, then evicted by Kueue


def work_writers() -> set[str]:
    """Every function of hooks/core that assigns a Work's phase, outcome or message itself."""
    found = set()
    for path in sorted((ROOT / "hooks" / "core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            for inner in ast.walk(node):
                targets = (inner.targets if isinstance(inner, ast.Assign)
                           else [inner.target] if isinstance(inner, ast.AugAssign) else [])
                for target in targets:
                    for part in target.elts if isinstance(target, ast.Tuple) else [target]:
                        if (isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name)
                                and part.value.id == "work" and part.attr in ("phase", "kind", "message")):
                            found.add(f"{path.relative_to(ROOT / 'hooks' / 'core')}:{node.name}")
    return found


STILL_WRITING: set[str] = set()
"""Every row returns a Step, the gang's hold is a value (``gang.Placement``) decide turns into one,
and the answer cuts the message on a copy: nothing writes the phase, outcome or message but ``apply``."""


def test_the_phase_outcome_and_message_enter_the_work_through_apply_or_a_row_not_yet_converted() -> None:
    """A ratchet: ``lifecycle.apply`` is the one place a Step writes them; the rows that still write
    the work themselves are named here, so a new row returns a Step (and a converted row leaves this
    list)."""
    assert work_writers() == STILL_WRITING | {"lifecycle.py:apply"}


ROWS = (teardown, terminal.final, current.resume, current.restart, current.next_attempt, current.steady,
        current.failed, current.run, current.invalid_spec, kueue.queued, mismatch.hold, deadline.delete_job,
        kueue.release_quota)
"""Every row of the table (1-13), each returning a ``Step``."""


def test_the_rows_that_return_steps_write_no_phase_outcome_or_message() -> None:
    for function in ROWS:
        path = pathlib.Path(inspect.getsourcefile(function) or "")
        assert f"{path.relative_to(ROOT / 'hooks' / 'core')}:{function.__name__}" not in work_writers()
        assert "apply(" not in inspect.getsource(function), function.__name__
        assert inspect.signature(function).return_annotation in ("Step", "Step | None"), function.__name__
    assert {row.then for row in decide_module.ON_THE_PHASE} <= set(ROWS)


def written_fields(function: Any) -> set[str]:
    """The ``work.<field>`` names ``function``'s own body writes: assigned, or changed in place
    (``work.<field>.append``/``extend``/``update``)."""
    fields = set()
    for node in ast.walk(ast.parse(inspect.getsource(function))):
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AugAssign) else [])
        for target in targets:
            for part in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == "work":
                    fields.add(part.attr)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("append", "extend", "update") and isinstance(node.func.value, ast.Attribute)
                and isinstance(node.func.value.value, ast.Name) and node.func.value.value.id == "work"):
            fields.add(node.func.value.attr)
    return fields


def test_the_rows_the_barrier_s_record_and_the_gang_write_nothing_into_the_work() -> None:
    """Rows 12 and 13, the barrier's record, the teardown and the gang return values: none of them
    (nor the functions of their modules) writes any field of the work."""
    import hooks.core.barrier
    import hooks.core.gang
    import hooks.core.rows.teardown
    for module in (hooks.core.gang, hooks.core.barrier, hooks.core.rows.teardown):
        for name, function in vars(module).items():
            if inspect.isfunction(function) and function.__module__ == module.__name__:
                assert not written_fields(function), f"{module.__name__}.{name}"
    for function in (deadline.delete_job, kueue.release_quota, current.next_attempt, current.run):
        assert not written_fields(function), function.__name__


# ---- gates, and what evidence asks the lifecycle ------------------------------------------------------------

@dataclass(frozen=True)
class Checkpoint:
    """A gate as issue 33 would declare one: the JobSet runs while it waits for an acknowledgement
    (here: a label on the Job), and its condition says it waits."""

    name: str = "checkpoint"
    running_legal: bool = True

    def check(self, ctx: Context, work: Work) -> GateVerdict:
        if ctx.observed.labels.get("saved") == "yes":
            return GateVerdict(True)
        return GateVerdict(False, "waiting for the workload to save a checkpoint", (
            ConditionChange(ConditionType.DRAINED, "False", "Checkpointing", "asked the workload to save"),))

    def waiting(self, status: Status) -> bool:
        return any(c.type == "Drained" and c.reason == "Checkpointing" for c in status.conditions)


class Counting(FakeReader):
    def __init__(self, pods: list[dict[str, Any]]) -> None:
        super().__init__(pods)
        self.calls: Counter[str] = Counter()

    def active_job_pods(self, *args: Any, **kwargs: Any) -> Any:
        self.calls["active_job_pods"] += 1
        return super().active_job_pods(*args, **kwargs)


def test_a_gate_must_be_listed_where_evidence_reads_it() -> None:
    with pytest.raises(ValueError, match="not listed"):
        replace(SUSPEND, gates=(Checkpoint(),))


def test_a_gate_that_holds_keeps_the_jobset_running_and_reads_no_barrier(monkeypatch: pytest.MonkeyPatch) -> None:
    gate = Checkpoint()
    monkeypatch.setattr(lifecycle, "GATES", (gate,))
    gated = replace(SUSPEND, gates=(gate,))
    reader = Counting([running_pod()])
    ctx = context(reader, status=RUNNING, spec=job_spec(suspend=True), jobsets=[jobset_child("train", 0)])
    step = teardown(ctx, work_of(ctx), gated)
    assert (step.phase, step.outcome, step.jobset, step.message) == (
        Phase.SUSPENDING, Outcome.HELD, JobSetFate.KEEP, "waiting for the workload to save a checkpoint")
    assert [c["metadata"]["name"] for c in step.children or ()] == ["train-0"]
    assert reader.calls["active_job_pods"] == 0, "the barrier is not read while a gate holds"
    saved = context(reader, status=RUNNING, spec=job_spec(suspend=True), jobsets=[jobset_child("train", 0)],
                    labels={"saved": "yes"})
    assert teardown(saved, work_of(saved), gated).jobset == JobSetFate.DROP  # then the barrier, as declared
    assert reader.calls["active_job_pods"] == 1


def test_evidence_asks_the_lifecycle_whether_a_running_jobset_may_stand_next_to_the_phase(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def mismatch(status: dict[str, Any]) -> tuple[str, str] | None:
        observed = parse_request(job_request(status=status, jobsets=[jobset_child("train", 0)]), "sync")
        return evidence.status_mismatch(observed, 0, status["phase"])

    suspending = {"phase": "Suspending", "attempt": 0}
    assert mismatch(suspending) == ("PhaseDisagrees", "status.phase is Suspending, but JobSet train-0 runs")
    assert mismatch({"phase": "Restarting", "attempt": 0, "restarts": 1}) == (
        "PhaseDisagrees", "status.phase is Restarting, but JobSet train-0 is running, not failed")
    assert mismatch({"phase": "Running", "attempt": 0}) is None
    waiting = suspending | {"conditions": [{"type": "Drained", "status": "False", "reason": "Checkpointing",
                                            "message": "", "lastTransitionTime": "2025-12-31T00:00:00Z"}]}
    assert mismatch(waiting) is not None, "no gate is declared: nothing lets the JobSet run"
    monkeypatch.setattr(lifecycle, "GATES", (Checkpoint(),))
    assert mismatch(waiting) is None, "a gate that lets the JobSet run waits: the phase agrees"
    assert mismatch(suspending) is not None


def test_every_phase_s_rule_is_what_evidence_held_before_the_table() -> None:
    """The table says what evidence's own lists said: Restarting only next to a failed JobSet,
    Suspending and Suspended not next to a running one, the others anything (the terminal claims
    are hooks.core.claims')."""
    rules = {phase: rule.jobset for phase, rule in lifecycle.PHASES.items()}
    assert {p for p, r in rules.items() if r == lifecycle.Coexist.ENDED} == {Phase.SUSPENDING, Phase.SUSPENDED}
    assert {p for p, r in rules.items() if r == lifecycle.Coexist.FAILED} == {Phase.RESTARTING}


def test_a_decision_names_the_move_its_step_made() -> None:
    d = decide(parse_request(job_request(spec=job_spec(suspend=True), status=RUNNING,
                                         jobsets=[jobset_child("train", 0)]), "sync"),
               FakeReader([running_pod()]), NOW)
    assert (d.phase_after, d.kind, d.transition) == ("Suspending", "held", "suspend")


def test_a_restart_spends_the_verdict_s_charge_when_the_step_is_applied() -> None:
    """Row 8 returns the restart as a Step that carries its Charge; nothing is counted until
    ``apply`` writes it (then once: restarts+1 when counted, restartsByCause[cause]+1)."""
    ctx = context(FakeReader([running_pod()]), spec=job_spec(max_restarts=2), status=RUNNING,
                  jobsets=[jobset_child("train", 0, state="Failed")])
    work = work_of(ctx)
    step = current.steady(ctx, work)
    assert (step.phase, step.outcome, step.transition, step.jobset) == (
        Phase.RESTARTING, Outcome.HELD, Move.FAIL, JobSetFate.KEEP)
    assert step.charge is not None and step.charge.counted and (work.restarts, work.restarts_by_cause) == (0, {})
    apply(ctx, step, work)
    assert (work.restarts, work.restarts_by_cause) == (1, {step.charge.cause: 1})
    assert work.last_failure["cause"] == step.charge.cause and work.workload == ""


def test_the_next_attempt_is_one_step_decided_on_a_view_of_the_work() -> None:
    """Once the barrier passed, rows 7-11 decide attempt+1 on ``lifecycle.ahead`` (a copy): the work is
    not written, and the one step returned starts attempt+1 (the teardown's attempt, the barrier's
    record, then rows 7-11's JobSet), applied once."""
    ctx = context(status={"phase": "Restarting", "attempt": 3, "restarts": 1, "workload": ""})
    work = work_of(ctx)
    before = work_of(ctx)
    step = current.restart(ctx, work)
    assert work == before, "the row writes nothing"
    assert (step.attempt, step.outcome, step.transition, step.workload) == (
        4, Outcome.PROCEEDED, Move.NEXT_ATTEMPT, "train-4")
    assert step.record is not None and [c.reason for c in step.record.conditions] == ["NoActivePods"]
    assert [c["metadata"]["name"] for c in step.children or ()] == ["train-4"]
    apply(ctx, step, work)
    assert (work.attempt, work.phase, work.workload) == (4, Phase.PENDING, "train-4")
