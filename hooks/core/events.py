"""Kubernetes Events for a Job's transitions: which ones one answer makes, as plain data.

Pure: reads the decision's named transitions (``Decision.transitions``: each a ``Move`` along an
arrow of ``hooks.core.lifecycle.ARROWS``, from its phase to its phase, from one attempt to the
next), the request's ``parent.status`` (``Observed.status``: its conditions and workload only), the
answer's new status and the writes it asks for (``Decision.actions``). A phase change's Event is
rendered from the arrow the decision took, never inferred by comparing the two statuses' phases;
a fixed point takes no arrow (``lifecycle.path``) and makes none. Each event carries a ``key``
built from the new status alone (the attempt, a condition's ``lastTransitionTime``): the same
transition answered twice (Metacontroller calling again before its status write lands, or two
hooks replicas) has the same key, and ``hooks.server.effects`` names the Event object after it, so
the API server itself refuses the second (409) whichever process or replica sends it.

Rendered from the transition (``MOVED``): ``Resumed`` (the next attempt, from Suspending or
Suspended, to a new attempt), ``Restarting`` (restarting because ..., naming the failure's class,
its evidence and the budget it spends: ``status.lastFailure``' ``class`` and ``classEvidence``, issue
34), ``Suspended``, ``Failed`` (the ``Failed`` condition's words; a failure policy's ``FailJob``
also names the class and its evidence), ``Succeeded``: each the arrow's target phase.

What no move names, handled on its own (each compares one field of the prior status with the
answer's, so that it is said once):

- ``AttemptCreated``: the attempt's JobSet enters the answer. Not the move that asks for it: a
  gate after the row (the gang, ``hooks.core.gang``) may hold the JobSet back past that move, and
  the JobSet then comes in a later answer whose move (row 11's ``run``) takes no arrow. Said when
  ``status.workload`` names a JobSet the prior status did not and the answer holds it, while the
  Job is Pending or Running.
- The conditions the drain barrier's record (``hooks.core.barrier.record``), the deadline's
  teardown and the gang's pass write, once each turns: ``DrainWaiting``, ``DrainPassed``,
  ``DrainStuck``, ``DeadlineExceeded`` and, for a gang (issue 22, ``hooks.core.gang``),
  ``GangUnschedulable`` (the scheduler cannot place it), ``GangScheduled`` (placed),
  ``GangUnavailable`` and ``GangMismatch`` (its PodGroup is not the gang the hooks build). The
  barrier writes them on every call of a hold, under the same move, and the gang after the row.
- The writes the answer asks for: ``Deleting`` (TTL), ``ForceDeletingPod``.
- A checkpoint request's turns (issue 33, ``hooks.core.checkpoint``), keyed by the request id:
  ``CheckpointRequested``, ``CheckpointAckIgnored``, ``CheckpointAcknowledged``,
  ``CheckpointGraceExpired``, ``CheckpointCancelled`` and ``CheckpointAbandoned``. A gate's wait is
  no move of its own, so these compare the prior ``status.checkpoint`` with the answer's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hooks.core.actions import Action, DeleteJob, ForceDeletePod
from hooks.core.failurepolicy import spends_no_restart
from hooks.core.lifecycle import Move, Transition
from hooks.core.observed import PriorStatus
from hooks.core.vocab import ConditionStatus, ConditionType, Phase, Reason

NORMAL, WARNING = "Normal", "Warning"
GANG_CONDITION = "GangScheduled"
"""``hooks.core.gang.CONDITION`` (named here too: the events import no decision module)."""
GANG_WARNINGS = {"Unschedulable": "GangUnschedulable", "GangUnavailable": "GangUnavailable",
                 "GangMismatch": "GangMismatch"}
"""The ``GangScheduled=False`` reasons that make a Warning Event, and its reason."""
MAX_NOTE = 1024
"""events.k8s.io/v1 refuses a note over 1 kB."""


@dataclass(frozen=True)
class Event:
    """One Event to write on the Job: ``reason`` and ``action`` (CamelCase), ``type`` (``Normal``
    or ``Warning``), ``note`` (human words, at most ``MAX_NOTE`` characters) and ``key`` (what
    makes this transition this one: the same key is the same Event)."""

    reason: str
    type: str
    action: str
    note: str
    key: str


MOVED: Mapping[Phase, str] = {
    Phase.RESTARTING: "Restarting",
    Phase.SUSPENDED: "Suspended",
    Phase.FAILED: "Failed",
    Phase.SUCCEEDED: "Succeeded",
}
"""The Event of a transition into each phase that has one (the arrow's target), whatever the move;
and ``Resumed``, a next attempt from Suspending or Suspended (``resumed``)."""


def resumed(transition: Transition) -> bool:
    """Whether ``transition`` resumes the Job: the next attempt (``Move.NEXT_ATTEMPT``) from
    Suspending or Suspended to a new attempt (not a Job created suspended starting its first)."""
    return (transition.move == Move.NEXT_ATTEMPT and transition.source in (Phase.SUSPENDING, Phase.SUSPENDED)
            and transition.target in (Phase.PENDING, Phase.RUNNING)
            and transition.attempts[1] > transition.attempts[0])


CHECKPOINT_EVENTS = {"Acknowledged": ("CheckpointAcknowledged", NORMAL),
                     "GraceExpired": ("CheckpointGraceExpired", WARNING),
                     "Cancelled": ("CheckpointCancelled", NORMAL),
                     "WorkloadEnded": ("CheckpointAbandoned", WARNING)}
"""The Event of each end of a checkpoint request (``hooks.core.checkpoint``, issue 33)."""


def _checkpoint(prior: Mapping[str, Any], record: Mapping[str, Any], add: Any) -> None:
    """The checkpoint's Events (issue 33), keyed by the request id: ``CheckpointRequested`` for a new
    request, ``CheckpointAckIgnored`` (Warning) when an acknowledgement names another request, and
    one per end (``CHECKPOINT_EVENTS``)."""
    rid, outcome = str(record.get("id", "")), str(record.get("outcome", ""))
    if not rid:
        return
    new = prior.get("id") != rid
    if new:
        add("CheckpointRequested", NORMAL, "Checkpoint", f"asked attempt {record.get('attempt')} to save "
            f"({record.get('reason')}): request {rid}, deadline {record.get('deadline')}", rid)
    if record.get("ignored") and (new or prior.get("ignored") != record.get("ignored")):
        add("CheckpointAckIgnored", WARNING, "Checkpoint", f"an acknowledgement of request {record.get('ignored')} "
            f"is ignored: the request is {rid}", f"{rid}/{record.get('ignored')}")
    if outcome in CHECKPOINT_EVENTS and (new or prior.get("outcome") != outcome):
        reason, type_ = CHECKPOINT_EVENTS[outcome]
        saved = f": step {record.get('acknowledgedStep')} saved" if outcome == "Acknowledged" else ""
        add(reason, type_, "Checkpoint", f"request {rid} ({record.get('reason')}): {outcome}{saved}", rid)


BUDGET_WORDS = {"": "maxRestarts", "user": "maxRestarts (the user budget)",
                "unknown": "the unknown budget (maxRestarts unless spec.failurePolicy.budgets.unknown is set)"}
"""How the ``Restarting`` Event names the budget a class spends (``hooks.core.budget.pool``; the
others: ``the node budget``); ``""`` is a ``lastFailure`` written before issue 34, without a class."""


def _classed(failure: Mapping[str, Any]) -> str:
    """``class node (pod w-0-0: DisruptionTarget/DeletionByTaintManager); `` from ``status.lastFailure``
    (``""`` for one written before issue 34, without a class)."""
    klass = failure.get("class")
    if not klass:
        return ""
    evidence = failure.get("classEvidence")
    return f"class {klass}" + (f" ({evidence})" if evidence else "") + "; "


def transition_events(prior: PriorStatus, status: Mapping[str, Any], actions: tuple[Action, ...] = (),
                      children: tuple[str, ...] | None = None, *,
                      transitions: tuple[Transition, ...] = ()) -> list[Event]:
    """The Events of the decision that answered ``status`` to ``prior``, in a fixed order: of its
    named ``transitions`` (``Decision.transitions``; the module doc), of what no move names (the
    attempt's JobSet entering the answer, the conditions that turned) and of ``actions``.
    ``children`` names the JobSets the answer holds (``None``: take ``status.workload`` as held):
    an attempt is "created" only when its JobSet is in the answer, not while a gate holds it back.
    Most answers make none, and ``quiet`` says so first (issue 32 item 4)."""
    if quiet(prior, status, actions, transitions):
        return []
    return _events(prior, status, actions, children, transitions)


def _events(prior: PriorStatus, status: Mapping[str, Any], actions: tuple[Action, ...],
            children: tuple[str, ...] | None, transitions: tuple[Transition, ...]) -> list[Event]:
    """``transition_events`` made in full: every question asked (the one that decides them all)."""
    events: list[Event] = []
    attempt = int(status.get("attempt", 0))
    workload = str(status.get("workload", ""))
    conditions = {str(c.get("type")): c for c in status.get("conditions") or ()}
    old = {c.type: c.status for c in prior.conditions}  # the prior conditions' statuses by type
    old_gang = next(((c.status, c.reason, c.message) for c in prior.conditions if c.type == GANG_CONDITION), None)
    into = {transition.target: transition for transition in transitions}  # the phases the decision entered

    def add(reason: str, type_: str, action: str, note: str, key: str) -> None:
        text = note if len(note) <= MAX_NOTE else note[: MAX_NOTE - 3] + "..."
        events.append(Event(reason, type_, action, text, f"{reason}/{key}"))

    def turned(type_: str, value: str) -> Mapping[str, Any] | None:
        if type_ not in WATCHED:  # ``quiet`` answers "no Event" from WATCHED: a turn asked of any other type is a bug
            raise ValueError(f"condition {type_} makes an Event when it turns, but is not in events.WATCHED")
        new = conditions.get(type_)
        if new is None or new.get("status") != value or old.get(type_) == value:
            return None
        return new

    for resume in (transition for transition in transitions if resumed(transition)):
        add("Resumed", NORMAL, "Resume", f"resumed as attempt {resume.attempts[1]}", str(resume.attempts[1]))
    held = children is None or workload in children
    if workload and workload != prior.workload and status.get("phase") in (Phase.PENDING, Phase.RUNNING) and held:
        add("AttemptCreated", NORMAL, "CreateWorkload", f"created attempt {attempt} (JobSet {workload})", str(attempt))
    restarting = into.get(Phase.RESTARTING)
    if restarting is not None:
        failure = status.get("lastFailure") or {}
        klass = str(failure.get("class") or "")
        counted = "does not count against maxRestarts or any budget" if spends_no_restart(failure.get("action")) \
            else f"counts against {BUDGET_WORDS.get(klass, f'the {klass} budget')}"
        why = failure.get("message", "it failed")
        number = restarting.attempts[1]
        add(MOVED[Phase.RESTARTING], WARNING, "Restart", f"restarting attempt {number} because {why} "
            f"(cause {failure.get('cause', 'default')}; {_classed(failure)}{counted})", str(number))
    drained = turned(ConditionType.DRAINED, ConditionStatus.FALSE)
    if drained is not None:
        add("DrainWaiting", NORMAL, "Drain", str(drained.get("message", "")), str(drained.get("lastTransitionTime")))
    passed = turned(ConditionType.DRAINED, ConditionStatus.TRUE)
    if passed is not None and old.get(ConditionType.DRAINED) in (ConditionStatus.FALSE, ConditionStatus.UNKNOWN):
        add("DrainPassed", NORMAL, "Drain", "drain passed: no active pod (confirmed with the API server)",
            str(passed.get("lastTransitionTime")))
    stuck = turned(ConditionType.DRAIN_STUCK, ConditionStatus.TRUE)
    if stuck is not None:
        add("DrainStuck", WARNING, "Drain", str(stuck.get("message", "")), str(stuck.get("lastTransitionTime")))
    deadline = turned(ConditionType.DEADLINE_EXCEEDED, ConditionStatus.TRUE)
    if deadline is not None:
        add("DeadlineExceeded", WARNING, "Teardown", str(deadline.get("message", "")),
            str(deadline.get("lastTransitionTime")))
    gang = conditions.get(GANG_CONDITION)
    if gang is not None and (gang.get("status"), gang.get("reason"), gang.get("message")) != old_gang:
        if gang.get("status") == ConditionStatus.TRUE:
            add("GangScheduled", NORMAL, "Schedule", str(gang.get("message", "")), f"{attempt}")
        elif gang.get("reason") in GANG_WARNINGS:
            add(GANG_WARNINGS[str(gang.get("reason"))], WARNING, "Schedule", str(gang.get("message", "")),
                f"{attempt}/{gang.get('lastTransitionTime')}")
    _checkpoint(prior.checkpoint or {}, status.get("checkpoint") or {}, add)
    suspended = into.get(Phase.SUSPENDED)
    if suspended is not None:
        add(MOVED[Phase.SUSPENDED], NORMAL, "Suspend", "suspended: the workload is torn down and no pod is active",
            str(suspended.attempts[1]))
    failing = into.get(Phase.FAILED)
    if failing is not None:
        failed = conditions.get(ConditionType.FAILED) or {}
        failure = status.get("lastFailure") or {}
        note = str(failed.get("message") or failure.get("message") or "the Job failed")
        if failed.get("reason") == Reason.FAILURE_POLICY and failure.get("class"):
            note = f"{note}; {_classed(failure).rstrip('; ')}"  # the budgets' words name it already
        add(MOVED[Phase.FAILED], WARNING, "Finish", f"failed: {note}", str(failing.attempts[1]))
    succeeded = into.get(Phase.SUCCEEDED)
    if succeeded is not None:
        add(MOVED[Phase.SUCCEEDED], NORMAL, "Finish", f"succeeded at attempt {succeeded.attempts[1]}",
            str(succeeded.attempts[1]))
    for action in actions:
        if isinstance(action, DeleteJob):
            add("Deleting", NORMAL, "Delete", action.reason, str(status.get("completionTime", "")))
        elif isinstance(action, ForceDeletePod):
            add("ForceDeletingPod", WARNING, "ForceDelete", f"force-deleting pod {action.name}: {action.reason}",
                action.uid or action.name)
    return events


WATCHED = frozenset({ConditionType.DRAINED, ConditionType.DRAIN_STUCK, ConditionType.DEADLINE_EXCEEDED})
"""The conditions whose turn to a status makes an Event: the one list of them, read by ``quiet`` and
enforced in ``_events``' ``turned`` (which refuses any other type, so a new Event of a turn cannot
be added without ``quiet`` seeing it); the gang's (``GANG_CONDITION``) turns by its status, reason or
message."""


def quiet(prior: PriorStatus, status: Mapping[str, Any], actions: tuple[Action, ...],
          transitions: tuple[Transition, ...]) -> bool:
    """Whether the answer ``status`` to ``prior`` surely makes no Event (``transition_events`` is then
    ``[]``), by the few reads a typical answer needs: no action; no transition that resumes or
    enters a phase of ``MOVED``; the same ``workload`` (or none); each watched condition (``WATCHED``)
    with the status its type has in ``prior``, and the gang's with the prior's status, reason and
    message; and no checkpoint request, or the prior's own with nothing new said of it. False is no
    answer: the Events are then made in full (``_events``), which may still find none."""
    if actions or any(transition.target in MOVED or resumed(transition) for transition in transitions):
        return False
    workload = str(status.get("workload", ""))
    if workload and workload != prior.workload:
        return False
    conditions = status.get("conditions") or ()
    if conditions:
        old: dict[str, str] | None = None
        old_gang = next(((c.status, c.reason, c.message) for c in prior.conditions if c.type == GANG_CONDITION), None)
        for condition in conditions:
            type_ = str(condition.get("type"))
            if type_ == GANG_CONDITION:
                if (condition.get("status"), condition.get("reason"), condition.get("message")) != old_gang:
                    return False
            elif type_ in WATCHED:
                old = {c.type: c.status for c in prior.conditions} if old is None else old
                if condition.get("status") != old.get(type_):
                    return False
    record = status.get("checkpoint") or {}
    if str(record.get("id", "")):  # as ``_checkpoint`` reads it
        said: list[str] = []
        _checkpoint(prior.checkpoint or {}, record, lambda reason, *_: said.append(reason))
        return not said
    return True
