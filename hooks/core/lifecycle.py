"""The attempt lifecycle as a model of its own (issue 32): the phases and the transitions between
them, declared once; the value every row returns (``Step``, with the drain barrier's ``Record``;
``then`` makes one of two); the teardown declaration (``Teardown``) and its gates (``Gate``); and
``apply``, the one place a ``Step`` enters the ``Work``.

Pure and low in the import order: it reads nothing and imports only the vocabulary, the
conditions, the status' shapes, the budget and the actions' shapes, so that ``hooks.core.evidence``
can ask it which phase may stand next to a running JobSet. The one teardown protocol that runs a
declaration (the gates, the drain barrier and its record) is ``hooks.core.rows.teardown.teardown``;
the declarations are next to their words, in the modules of their rows (``rows.teardown``: delete
and suspend; ``rows.kueue``: the eviction; ``rows.deadline``: the active deadline; ``rows.current``:
the next attempt's hold).

The shapes are learned from kopf's frozen ``Outcome`` (a handler returns a value, the framework
applies it), JobSet's action registry and collected events, and controller-runtime's single
``Result`` (one value says what to do next and when to wake). docs/dev/lifecycle.md says what
a new gate or a new failure class touches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from hooks.core import budget, checkpoint
from hooks.core import conditions as cond
from hooks.core.actions import Action
from hooks.core.budget import Charge
from hooks.core.status import Condition, Status
from hooks.core.vocab import TERMINAL, ConditionType, EndCause, Outcome, Phase, Quota

if TYPE_CHECKING:
    from hooks.core.barrier import Drain
    from hooks.core.work import Context, Work


# ---- the phases and the transitions, declared once ----------------------------------------------------

class Coexist(StrEnum):
    """What state the current attempt's JobSet (observed, not being deleted) may be in while the
    status has a phase: ``ANY`` (the phase claims nothing about it), ``ENDED`` (a running one
    disagrees: the phase says it was left out), ``FAILED`` (only a failed one agrees: the phase
    says the attempt failed)."""

    ANY = "any"
    ENDED = "ended"
    FAILED = "failed"


@dataclass(frozen=True)
class PhaseRule:
    """One phase of the table: whether it is ``terminal`` (nothing leaves it but a deletion) and
    what JobSet may stand next to it (``jobset``)."""

    phase: Phase
    terminal: bool
    jobset: Coexist


PHASES: Mapping[Phase, PhaseRule] = {rule.phase: rule for rule in (
    PhaseRule(Phase.PENDING, terminal=False, jobset=Coexist.ANY),
    PhaseRule(Phase.RUNNING, terminal=False, jobset=Coexist.ANY),
    PhaseRule(Phase.QUEUED, terminal=False, jobset=Coexist.ANY),
    PhaseRule(Phase.RESTARTING, terminal=False, jobset=Coexist.FAILED),
    PhaseRule(Phase.SUSPENDING, terminal=False, jobset=Coexist.ENDED),
    PhaseRule(Phase.SUSPENDED, terminal=False, jobset=Coexist.ENDED),
    PhaseRule(Phase.TERMINATING, terminal=False, jobset=Coexist.ANY),
    PhaseRule(Phase.SUCCEEDED, terminal=True, jobset=Coexist.ANY),  # a terminal claim: hooks.core.claims
    PhaseRule(Phase.FAILED, terminal=True, jobset=Coexist.ANY),
)}
"""Every phase, once. ``hooks.core.evidence.status_mismatch`` asks ``jobset_disagreement``, which reads
this table (and the gates that wait, ``GATES``); ``hooks.core.vocab.TERMINAL`` is the terminal ones."""


class Move(StrEnum):
    """What makes a transition: a row, or a teardown declaration (``Teardown.move``)."""

    RUN = "run"                        # row 11: the current attempt's JobSet
    QUEUE = "queue"                    # row 11, queue-managed: waiting for Kueue's admission
    COMPLETE = "complete"              # row 10
    FAIL = "fail"                      # rows 8, 8a, 9: the failure verdict
    NEXT_ATTEMPT = "next-attempt"      # rows 5, 6: the barrier, then attempt+1
    ATTEMPT_LIMIT = "attempt-limit"    # a step past MAX_ATTEMPT
    SUSPEND = "suspend"                # row 2
    EVICT = "evict"                    # row 2a
    DEADLINE = "deadline"              # row 3a
    DELETE = "delete"                  # row 1 (and row 12 asks for it)


START = "[*]"
"""The diagram's name for "no status yet" (a new Job) and "finalized" (the Job is gone)."""


@dataclass(frozen=True)
class Arrow:
    """One transition: from ``source`` to ``target`` (a phase, or ``START``), said in ``words`` (the
    README's diagram label), made by ``by`` (the moves that take it)."""

    source: str
    target: str
    words: str
    by: tuple[Move, ...]


def _arrow(source: str, target: str, words: str, *by: Move) -> Arrow:
    return Arrow(source, target, words, by)


P, R, Q, RS = Phase.PENDING, Phase.RUNNING, Phase.QUEUED, Phase.RESTARTING
SG, SD, T = Phase.SUSPENDING, Phase.SUSPENDED, Phase.TERMINATING
OK, KO = Phase.SUCCEEDED, Phase.FAILED

ARROWS: tuple[Arrow, ...] = (
    _arrow(START, P, "JobSet <job>-0 created", Move.RUN),
    _arrow(START, SD, "created with spec.suspend (attempt 0, nothing created)", Move.SUSPEND),
    _arrow(START, Q, "queue-managed (Kueue), Workload created", Move.QUEUE),
    _arrow(Q, P, "Workload admitted, JobSet created", Move.RUN),
    _arrow(P, R, "a worker pod is active (with a gang: once the scheduler placed it, GangScheduled)", Move.RUN),
    _arrow(R, R, "every pod finished, the JobSet has not said how it ended", Move.RUN),
    _arrow(P, OK, "JobSet Completed", Move.COMPLETE),
    _arrow(R, OK, "JobSet Completed", Move.COMPLETE),
    _arrow(P, RS, "JobSet Failed, restarts left", Move.FAIL),
    _arrow(R, RS, "JobSet Failed, restarts left", Move.FAIL),
    _arrow(P, KO, "JobSet Failed, no restarts left or a FailJob rule", Move.FAIL, Move.ATTEMPT_LIMIT),
    _arrow(R, KO, "JobSet Failed, no restarts left or a FailJob rule", Move.FAIL, Move.ATTEMPT_LIMIT),
    _arrow(RS, P, "drain barrier passed, JobSet <job>-(attempt+1)", Move.NEXT_ATTEMPT),
    _arrow(RS, KO, "attempt 9999 reached (AttemptLimitReached)", Move.ATTEMPT_LIMIT),
    _arrow(RS, T, "activeDeadlineSeconds passed", Move.DEADLINE),
    _arrow(P, SG, "spec.suspend", Move.SUSPEND),
    _arrow(R, SG, "spec.suspend", Move.SUSPEND),
    _arrow(P, SG, "evicted by Kueue", Move.EVICT),
    _arrow(R, SG, "evicted by Kueue", Move.EVICT),
    _arrow(SG, SD, "drain barrier passed", Move.SUSPEND),
    _arrow(SG, R, "resumed while the checkpoint gate waits: the same attempt keeps running", Move.RUN),
    _arrow(SG, P, "suspend unset, barrier passed, next attempt (attempt+1)", Move.NEXT_ATTEMPT),
    _arrow(SG, Q, "queue-managed, drain barrier passed, quota released", Move.EVICT),
    _arrow(SD, P, "suspend unset, barrier passed, next attempt (attempt+1)", Move.NEXT_ATTEMPT),
    _arrow(SD, Q, "queue-managed, suspend unset, Workload submitted again", Move.NEXT_ATTEMPT, Move.QUEUE),
    _arrow(SD, KO, "suspend unset past activeDeadlineSeconds, or at attempt 9999", Move.DEADLINE,
           Move.ATTEMPT_LIMIT),
    _arrow(SG, KO, "suspend unset past activeDeadlineSeconds, or at attempt 9999", Move.DEADLINE,
           Move.ATTEMPT_LIMIT),
    _arrow(SD, T, "suspend unset past activeDeadlineSeconds, pods left to drain", Move.DEADLINE),
    _arrow(SG, T, "suspend unset past activeDeadlineSeconds, pods left to drain", Move.DEADLINE),
    _arrow(Q, SG, "spec.suspend", Move.SUSPEND),
    _arrow(Q, SD, "spec.suspend, nothing to drain", Move.SUSPEND),
    _arrow(Q, KO, "activeDeadlineSeconds passed (after an eviction), nothing to drain", Move.DEADLINE),
    _arrow(RS, SG, "spec.suspend", Move.SUSPEND),
    _arrow(RS, SD, "spec.suspend, nothing left to drain", Move.SUSPEND),
    _arrow(P, T, "activeDeadlineSeconds passed", Move.DEADLINE),
    _arrow(R, T, "activeDeadlineSeconds passed", Move.DEADLINE),
    _arrow(T, KO, "not deleted, drain barrier passed (DeadlineExceeded)", Move.DEADLINE),
    _arrow(T, SG, "not deleted, spec.suspend", Move.SUSPEND),
    _arrow(T, SD, "not deleted, spec.suspend, nothing left to drain", Move.SUSPEND),
    _arrow(P, T, "deleted", Move.DELETE),
    _arrow(R, T, "deleted", Move.DELETE),
    _arrow(Q, T, "deleted", Move.DELETE),
    _arrow(RS, T, "deleted", Move.DELETE),
    _arrow(SG, T, "deleted", Move.DELETE),
    _arrow(SD, T, "deleted", Move.DELETE),
    _arrow(OK, T, "deleted (by you, or ttlSecondsAfterFinished)", Move.DELETE),
    _arrow(KO, T, "deleted (by you, or ttlSecondsAfterFinished)", Move.DELETE),
    _arrow(T, START, "deleted, drain barrier passed, finalized", Move.DELETE),
)
"""Every transition the hooks make, once, in the README diagram's order: the README's mermaid block
is ``mermaid()`` (tests/contract/test_state_diagram.py checks it, and that the decisions take these
arrows and no others)."""


def mermaid() -> str:
    """The README's state diagram, rendered from ``ARROWS``."""
    lines = ["stateDiagram-v2", *(f"    {a.source} --> {a.target}: {a.words}" for a in ARROWS)]
    return "\n".join(lines) + "\n"


def _between() -> dict[tuple[str, str], tuple[Arrow, ...]]:
    """``ARROWS`` by (source, target), each pair's arrows in the table's order: read once, at import."""
    found: dict[tuple[str, str], tuple[Arrow, ...]] = {}
    for a in ARROWS:
        found[a.source, a.target] = (*found.get((a.source, a.target), ()), a)
    return found


_BETWEEN = _between()


def arrows(source: str, target: str) -> tuple[Arrow, ...]:
    """The arrows from ``source`` to ``target`` (none when the table has no such transition), in the
    table's order (``ARROWS``, looked up by the pair: every decision asks)."""
    return _BETWEEN.get((source, target), ())


def taken(move: str, source: str, target: str) -> Arrow | None:
    """The arrow ``move`` makes from ``source`` to ``target`` (phases, or ``START``); ``None`` when the
    table has none: the move left the phase where no self-loop is declared (a hold, a fixed point),
    or ``source`` is no phase of the table (a status written by hand)."""
    return next((a for a in arrows(source, target) if move in a.by), None)


ENDS: Mapping[Move, EndCause] = {
    Move.SUSPEND: EndCause.SUSPENDED,
    Move.EVICT: EndCause.EVICTED,
    Move.DEADLINE: EndCause.DEADLINE_EXCEEDED,
    Move.DELETE: EndCause.DELETED,
}
"""How a teardown's move ends the attempt it tears down, in ``status.attempts`` (``hooks.core.history``):
the one home of ``Teardown.ends``. A move not listed ends no attempt by itself: a success or a
failure is read from the JobSet's own condition (``history``), and the next attempt's hold ends none."""


@dataclass(frozen=True)
class Transition:
    """One transition a decision made, named: ``move`` from phase ``source`` to phase ``target``
    (or ``START``), from attempt ``attempts[0]`` to ``attempts[1]``, along ``arrow``: the table's
    (its README words), or ``None`` when the table does not show it, because the status it began
    from is none the hooks wrote (none at all beside a JobSet that already ended, a phase of no
    table). What ``hooks.core.events`` renders the Job's Events of a phase change from
    (``Decision.transitions``)."""

    move: Move
    source: str
    target: str
    attempts: tuple[int, int]
    arrow: Arrow | None


def path(before: tuple[str, int], start: tuple[str, int], move: str, after: tuple[str, int],
         finalized: bool) -> tuple[Transition, ...]:
    """The transitions one decision made, in order, as the table names them.

    ``before``: the prior status' phase (``""``: none yet, ``START``) and attempt; ``start``: the
    phase and attempt the row began from. They differ only when ``decide`` found that a step to the
    next attempt already happened and its status write was lost (``rows.mismatch.adopt``, or a
    never-started Job's first JobSet): that step is named first, ``Move.NEXT_ATTEMPT`` to Pending.
    Then the row's ``move`` (``Decision.transition``; ``""``: a row that names none, which makes no
    transition) from there to ``after`` (the answer's phase and attempt), and on to ``START`` when
    the answer is ``finalized``: ``_along``. A fixed point makes none."""
    steps: list[Transition] = []
    source = before[0] or START
    if start != before:
        steps += _along(Move.NEXT_ATTEMPT, source, start[0], (before[1], start[1]))
        source = start[0]
    if move:
        for target in (after[0], START) if finalized else (after[0],):
            steps += _along(Move(move), source, target, (start[1], after[1]))
            source = target
    return tuple(steps)


def _along(move: Move, source: str, target: str, attempts: tuple[int, int]) -> tuple[Transition, ...]:
    """``move`` from ``source`` to ``target``: none when the phase stays, unless the table declares
    that self-loop; the table's arrow made by ``move``; else two of its arrows both made by ``move``
    through the phase between (a teardown whose barrier passed in the call that began it: Running,
    Suspending, Suspended); else one the table does not show (``Transition.arrow`` ``None``)."""
    direct = taken(move, source, target)
    if direct is not None or source == target:
        return () if direct is None else (Transition(move, source, target, attempts, direct),)
    for first in ARROWS:
        then = taken(move, first.target, target) if first.source == source and move in first.by else None
        if then is not None:
            return (Transition(move, source, first.target, attempts, first),
                    Transition(move, first.target, target, attempts, then))
    return (Transition(move, source, target, attempts, None),)


# ---- gates: what a teardown waits for before the drain barrier --------------------------------------------

@dataclass(frozen=True)
class GateVerdict:
    """What a gate says: ``passed``, or a hold in ``words`` (the status message while it waits) with
    the condition changes it writes (its own condition, which ``Gate.waiting`` reads back)."""

    passed: bool
    words: str = ""
    conditions: tuple[ConditionChange, ...] = ()
    checkpoint: Mapping[str, Any] | None = None
    """``status.checkpoint`` as the gate leaves it (``hooks.core.checkpoint``; ``None``: unchanged)."""


class Gate(Protocol):
    """A step a teardown takes before its drain barrier (issue 33: a checkpoint the workload saves).

    ``name`` names it in words and docs; ``running_legal``: whether the current attempt's JobSet
    stays (runs) while it waits, so that ``hooks.core.evidence`` must not call a running JobSet next
    to the teardown's holding phase a disagreement while ``waiting`` (read from the status: the
    gate's own condition) says it waits; ``check`` reads the call and says pass or hold."""

    name: str
    running_legal: bool

    def check(self, ctx: Context, work: Work) -> GateVerdict: ...

    def waiting(self, status: Status) -> bool: ...


GATES: tuple[Gate, ...] = checkpoint.GATES
"""Every gate any ``Teardown`` declares (the checkpoint's, one per reason: ``hooks.core.checkpoint``).
Listed here, below ``hooks.core.evidence`` in the
import order, so that evidence can ask whether one waits; a ``Teardown`` whose gate is not listed
is refused when it is declared (``Teardown.__post_init__``)."""


def jobset_disagreement(status: Status, phase: str, name: str, state: str) -> str | None:
    """Whether the current attempt's JobSet ``name`` (observed, not being deleted; ``state``: its
    own ``"Failed"``/``"Completed"``/``""`` for running) disagrees with ``phase``, by the table
    (``PHASES[phase].jobset``); a running one is legal while a gate that lets it run waits
    (``GATES``, ``Gate.waiting`` on ``status``). Returns the words of the disagreement, or ``None``.
    A phase the table does not know claims nothing."""
    rule = PHASES.get(phase)  # type: ignore[call-overload]  # any string: a status written by anyone
    allowed = Coexist.ANY if rule is None else rule.jobset
    if allowed == Coexist.ENDED and state == "":
        if any(gate.running_legal and gate.waiting(status) for gate in GATES):
            return None
        return f"status.phase is {phase}, but JobSet {name} runs"
    if allowed == Coexist.FAILED and state != "Failed":
        return f"status.phase is {phase}, but JobSet {name} is {(state or 'running').lower()}, not failed"
    return None


# ---- the value a row returns ------------------------------------------------------------------------------

class JobSetFate(StrEnum):
    """What becomes of the current attempt's JobSet in the answer: ``KEEP`` it as observed,
    ``CREATE`` it, ``DROP`` it (Metacontroller deletes it)."""

    KEEP = "keep"
    CREATE = "create"
    DROP = "drop"


class ConditionChange(msgspec.Struct, frozen=True):
    """A condition a step sets: ``type``, ``status``, ``reason``, ``message``; stamped by ``apply``
    with the call's evidence time (``Context.stamp``), its transition time kept while its status
    does not change (``hooks.core.conditions.set_condition``). ``since``, when said: the transition
    time as the step decided it (evidence of its own: the drain barrier's, a PodGroup's), set as it
    is."""

    type: ConditionType
    status: str
    reason: str
    message: str
    since: str = ""


class Record(msgspec.Struct, frozen=True):
    """What the drain barrier puts into the status (``hooks.core.barrier.record``), carried by the
    step of the row that read it: the ``conditions`` it sets (``Drained``, ``DrainStuck``,
    ``ForceDeleteAllowed``, each with its transition time), ``active_pods`` (``None``: a read failed,
    the count is kept), ``resync`` (it holds), ``stuck_pods`` (how many it found stuck on dead nodes)
    and the force ``deletes`` it asks for."""

    conditions: tuple[ConditionChange, ...] = ()
    active_pods: int | None = None
    resync: bool = False
    stuck_pods: int = 0
    deletes: tuple[Action, ...] = ()


class Wake(msgspec.Struct, frozen=True):
    """A named wake-up: ask again in ``seconds`` because of ``name``."""

    name: str
    seconds: float


class Step(msgspec.Struct, frozen=True):
    """What a row decides, as a value: ``apply`` writes it into the ``Work``, the one place. A frozen
    msgspec Struct, like the values it carries: every call builds a few and copies them with a
    change (``msgspec.structs.replace``, which the rows import as ``replace``), at a tenth of a frozen
    dataclass' cost (issue 32 item 4).

    ``outcome`` (``Decision.kind``) is always said. Every other field is ``None`` (or empty) when
    the step leaves it as the work has it: ``phase``; ``attempt`` (the attempt it moves to);
    ``message`` (``""`` clears it); ``jobset`` (what becomes of the current JobSet) and
    ``children`` (the children answered); ``workload`` (``status.workload``); ``quota`` (a
    queue-managed Job's Workload: ``hooks.core.vocab.Quota``); ``conditions`` (set in order);
    ``active_pods``; ``last_failure`` (``status.lastFailure``: how the attempt failed, in structured
    words); ``finalized``; ``resync`` (ask again soon); ``wakes`` (named wake-ups); ``transition``
    (the move it makes, an arrow's ``by`` in ``ARROWS``); ``charge`` (what the ended attempt costs,
    ``hooks.core.budget.Charge``: ``apply`` pays it by ``budget.spend``); ``record`` (what the drain
    barrier the row read puts into the status, ``Record``: written before the step's own
    conditions); ``actions`` (the writes it asks for besides the answer, ``hooks.core.actions``);
    ``checkpoint`` (``status.checkpoint``: the request a checkpoint gate made, ``hooks.core.checkpoint``)."""

    outcome: Outcome
    phase: Phase | None = None
    attempt: int | None = None
    message: str | None = None
    jobset: JobSetFate | None = None
    children: tuple[dict[str, Any], ...] | None = None
    workload: str | None = None
    quota: Quota | None = None
    conditions: tuple[ConditionChange, ...] = ()
    active_pods: int | None = None
    last_failure: Mapping[str, Any] | None = None
    finalized: bool = False
    resync: bool = False
    wakes: tuple[Wake, ...] = ()
    transition: Move | None = None
    charge: Charge | None = None
    record: Record | None = None
    actions: tuple[Action, ...] = ()
    checkpoint: Mapping[str, Any] | None = None


def then(first: Step, second: Step) -> Step:
    """The one step that says what ``first`` then ``second`` say, applied once (``apply``): the
    outcome is ``second``'s; every other field ``second``'s where it says it, else ``first``'s; the
    conditions, ``first``'s then ``second``'s; the wake-ups ``second``'s when it names any;
    finalized and resync when either says so; the actions of both. Reads nothing else; raises
    ``ValueError`` when both carry a charge or a barrier's record (each is written once)."""
    if first.charge is not None and second.charge is not None:
        raise ValueError("two steps that each carry a charge are not one step")
    if first.record is not None and second.record is not None:
        raise ValueError("two steps that each carry a barrier's record are not one step")

    def said(name: str) -> Any:
        value = getattr(second, name)
        return value if value is not None else getattr(first, name)

    return Step(second.outcome, phase=said("phase"), attempt=said("attempt"), message=said("message"),
                jobset=said("jobset"), children=said("children"), workload=said("workload"), quota=said("quota"),
                conditions=first.conditions + second.conditions, active_pods=said("active_pods"),
                last_failure=said("last_failure"), finalized=first.finalized or second.finalized,
                resync=first.resync or second.resync, wakes=second.wakes or first.wakes,
                transition=said("transition"), charge=said("charge"), record=said("record"),
                actions=first.actions + second.actions, checkpoint=said("checkpoint"))


def apply(ctx: Context, step: Step, work: Work) -> None:
    """Writes ``step`` into ``work``: the one place a ``Step``'s phase, outcome, message, attempt,
    children, workload, quota, barrier's record (``Record``: its conditions, active pods, resync,
    stuck pods and force deletes, before the step's own), checkpoint request, conditions (stamped ``ctx.stamp``, or as
    a change's ``since`` says), active pods, last failure, charge (``restarts``,
    ``restartsByCause``: as ``hooks.core.budget.spend`` says, with the budget of
    ``ctx.observed.spec``), finalized, resync, wake-ups, actions and transition (kept when the step
    names none) enter the status and the answer. Reads ``work.conditions`` only to set the changes
    on them. Returns nothing; raises ``ValueError`` for a charge the budget refuses (a row carries
    one only once ``spend`` allowed it: never paid silently, never dropped)."""
    conditions = work.conditions
    if step.record is not None:
        conditions = _set(ctx, conditions, step.record.conditions)
        if step.record.active_pods is not None:
            work.active_pods = step.record.active_pods
        work.resync = work.resync or step.record.resync
        work.stuck_pods = step.record.stuck_pods
        work.actions = [*work.actions, *step.record.deletes]
    work.conditions = _set(ctx, conditions, step.conditions)
    work.kind = step.outcome
    if step.phase is not None:
        work.phase = step.phase
    if step.attempt is not None:
        work.attempt = step.attempt
    if step.message is not None:
        work.message = step.message
    if step.children is not None:
        work.children = list(step.children)
    if step.workload is not None:
        work.workload = step.workload
    if step.quota is not None:
        work.quota = step.quota
    if step.active_pods is not None:
        work.active_pods = step.active_pods
    if step.last_failure is not None:
        work.last_failure = dict(step.last_failure)
    if step.charge is not None:
        spent = budget.spend(ctx.observed.spec, budget.counters(ctx.observed.spec, work), step.charge)
        if not spent.allowed:
            raise ValueError(f"a step carries a charge the restart budget refuses: {step.charge}")
        work.restarts, work.restarts_by_cause = spent.counters.restarts, dict(spent.counters.by_cause)
        work.restarts_by_class = dict(spent.counters.by_class)
    work.finalized = work.finalized or step.finalized
    work.resync = work.resync or step.resync
    if step.wakes:
        work.wake = min(wake.seconds for wake in step.wakes)
    if step.actions:
        work.actions = [*work.actions, *step.actions]
    if step.transition is not None:
        work.transition = step.transition
    if step.checkpoint is not None:
        work.checkpoint = dict(step.checkpoint)


def ahead(ctx: Context, step: Step, work: Work) -> Work:
    """The work as it is once ``step`` is applied (``apply``), as a new ``Work``: ``work`` is not
    written. For a row that decides what follows a step from the step's result (the next attempt:
    rows 7-11 read attempt+1, Pending) and returns both as one (``then``)."""
    view = msgspec.structs.replace(work)
    apply(ctx, step, view)
    return view


def _set(ctx: Context, conditions: cond.Conditions, changes: tuple[ConditionChange, ...]) -> cond.Conditions:
    """``conditions`` with ``changes`` set in order: stamped ``ctx.stamp`` (its transition time kept
    while its status does not change), or at the change's own ``since``."""
    for change in changes:
        if change.since:
            conditions = cond.sort_conditions([
                Condition(type=change.type, status=change.status, reason=change.reason, message=change.message,
                          last_transition_time=change.since),
                *conditions])
        else:
            conditions = cond.set_condition(conditions, change.type, change.status, change.reason,
                                            change.message, ctx.stamp)
    return conditions


# ---- the teardown declaration ---------------------------------------------------------------------------

def _no_words(ctx: Context, work: Work) -> tuple[str, str]:
    return "", ""


def _no_conditions(ctx: Context, work: Work, passed: bool) -> tuple[ConditionChange, ...]:
    return ()


def _current(ctx: Context, work: Work) -> int:
    return work.attempt


def _nothing_first(ctx: Context, work: Work) -> Step | None:
    return None


def _refuse_nothing(ctx: Context, work: Work, drain: Drain) -> None:
    return None


def _as_declared(ctx: Context, work: Work, step: Step) -> Step:
    return step


@dataclass(frozen=True)
class Teardown:
    """A teardown, declared: what ends and how (run by ``hooks.core.rows.teardown.teardown``).

    ``move``: the transition it makes (``ARROWS``; how it ends the attempt, ``ends``, is the
    table's: ``ENDS``); ``holding``: the phase
    while it holds (``None``: as the work has it); ``done``: the phase once the barrier passed
    (``None``: as the work has it, for ``passed`` to say); ``quota_holding``/``quota_done``: what
    becomes of a queue-managed Job's Workload while it holds and once it passed (``None``: as the
    work has it); ``jobset``: what becomes of the current JobSet (``None``: as the row before it
    said); ``finalizes``: the answer says ``finalized`` once it passed; ``gates``: what it waits for,
    in order, before the drain barrier (each listed in ``GATES``).

    Its own words and checks: ``first`` (a step taken instead, before anything: the attempt limit);
    ``through`` (the attempt the barrier reads through); ``refuse`` (after the barrier, before its
    record: raises ``hooks.core.barrier.StaleRequest`` for a request behind the cluster);
    ``words`` (what frames the barrier's words while it holds: before, after); ``conditions`` (the
    conditions it sets, given whether it passed); ``passed`` (the step once it passed, from the
    declared one)."""

    move: Move
    holding: Phase | None
    done: Phase | None
    quota_holding: Quota | None
    quota_done: Quota | None
    jobset: JobSetFate | None = JobSetFate.DROP
    finalizes: bool = False
    gates: tuple[Gate, ...] = ()
    first: Callable[[Context, Work], Step | None] = _nothing_first
    through: Callable[[Context, Work], int] = _current
    refuse: Callable[[Context, Work, Drain], None] = _refuse_nothing
    words: Callable[[Context, Work], tuple[str, str]] = _no_words
    conditions: Callable[[Context, Work, bool], tuple[ConditionChange, ...]] = _no_conditions
    passed: Callable[[Context, Work, Step], Step] = _as_declared

    def __post_init__(self) -> None:
        """Refuses a gate that is not in ``GATES``: evidence would not know it lets a JobSet run."""
        unknown = [gate.name for gate in self.gates if gate not in GATES]
        if unknown:
            raise ValueError(f"teardown {self.move}: gates {unknown} are not listed in hooks.core.lifecycle.GATES")

    @property
    def ends(self) -> EndCause | None:
        """How this teardown ends the attempt in ``status.attempts``: its move's (``ENDS``; ``None``:
        it says nothing, the next attempt's hold)."""
        return ENDS.get(self.move)

    def outcome(self, passed: bool) -> Outcome:
        """``held`` while it holds; once passed, ``terminal`` into a terminal phase, else ``proceeded``."""
        if not passed:
            return Outcome.HELD
        return Outcome.TERMINAL if self.done in TERMINAL else Outcome.PROCEEDED

