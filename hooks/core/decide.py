"""The decision table (design §5): observed state and pod reads in, desired children and status out.

Pure: the only I/O is the Reader passed in. Rows 1-11, first match decides (``row``; rows 1, 2 and
2a, the teardowns, are matched once, before the adoption: ``teardown_row``); then rows 12 and 13, on
the phase those rows decided. Each of rows 1-11 returns a ``hooks.core.lifecycle.Step`` (the
teardowns, rows 1, 2, 2a, 3a and the hold of rows 5 and 6, are ``lifecycle.Teardown`` declarations
run by ``rows.teardown.teardown``), and ``lifecycle.apply`` writes it into the work, once; the phases
and the transitions are ``lifecycle``'s table (docs/dev/lifecycle.md). Each row's work is in the
module of ``hooks.core.rows`` named in the last column:

    row  when                                  answer                                               rows.
    1    finalizing                            no children; Terminating; finalized after the barrier teardown
    2    spec.suspend, not terminal            no children; Suspending, Suspended after the barrier  teardown
    2a   evicted by Kueue (queue-managed),     no JobSet; Suspending, after the barrier Queued with  kueue
         not terminal                          attempt+1 (not a restart), the quota released
    3    status disagrees with the evidence:   hold: keep every observed JobSet not being deleted,   mismatch
         the children (hooks.core.evidence),   create nothing, keep the status' claims, record and
         a newer JobSet not adoptable          delete nothing (no startTime, completionTime, TTL
         (rows.mismatch.adopt), or a claim     delete); StatusMismatch=True says why, naming the
         the policies read (hooks.core.claims: field
         startTime, DeadlineExceeded, terminal
         phase, completionTime, restartsByCause)
    3a   activeDeadlineSeconds passed,         no children; Terminating (DeadlineExceeded=True),     deadline
         not terminal                          after the barrier Failed (reason DeadlineExceeded)
    4    phase Succeeded/Failed (not over a    final: keep the current JobSet, never create one      terminal
         running JobSet: row 3)
    5    phase Suspended/Suspending            barrier, then attempt+1 (a resume), Pending           current
    6    phase Restarting                      barrier, then attempt+1, Pending                      current
    7    spec cannot be built, or              InvalidSpec; keep the current JobSet, create nothing  current
         spec.replicatedJobs changed since the Job was first seen (hooks.core.specpin)
    8    current JobSet Failed, restarts left  Restarting, restarts+1, the JobSet kept this answer;  current
                                               then as row 6
    8a   a failure-policy rule matches         FailJob: keep it, Failed (FailurePolicy);             current
         (hooks.core.failurepolicy)            RestartJobIgnoreMaxRestarts: as row 8 without
                                               restarts+1; restartsByCause[cause] counts each restart
    9    current JobSet Failed, none left      keep it; Failed                                       current
    10   current JobSet Completed              keep it; Succeeded                                    current
    11   otherwise                             the current attempt's JobSet, Running if a cached pod current
                                               is active; one not observed yet is created only once
                                               the barrier passed (queue-managed: once admitted)
    then, on the phase decided above (``ON_THE_PHASE``: each row that matches, in order):
    12   terminal, ttlSecondsAfterFinished     ask for the Job's deletion (DeleteJob); the finalize  deadline
         passed (from completionTime), the     row then drains it
         status agrees, not finalizing
    13   terminal, queue-managed, Workload     release the quota once no pod is active and no batch  kueue
         observed, the row released nothing    Job may create one (live reads); else keep it, say why

Before the rows, the current attempt: ``status.attempt``, or ``<job>-<N+1>`` adopted only as the step
after a drained attempt whose status write was lost (``rows.mismatch.adopt``: Restarting, Suspending
or Suspended, exactly N+1, no other JobSet, and the barrier's live reads find no active pod but its
own and no batch Job of an earlier attempt; the phase is then Pending). Every other newer JobSet is
row 3 (``UnknownAttempt``).

After the row, the passes, in ``PASSES``' order. Before anything else: every JobSet the row answers
gets its attempt's PodGroup when its gang is on, and a gang that cannot be had holds the JobSet's
creation or starts it without one (``hooks.core.gang``, issue 22, ADR-106; nothing when no gang is
asked for); the gang says so as a value (``gang.Placement``) that ``gang_step`` turns into a Step.
Rows 12 and 13 return Steps too: every Step is written by ``lifecycle.apply``, and nothing else
writes the phase, outcome or message.

Around rows 12 and 13, for every answer: ``StatusMismatch`` turns False once the disagreement is
gone; unless the status disagrees (whichever row ran: rows 2 and 2a come before row 3; finalizing
checks no claim), ``startTime``/``completionTime`` are recorded and the TTL and deadline wake-ups set
(``rows.deadline.times``); ``replicatedJobsDigest`` is pinned with the first JobSet answered
(``hooks.core.specpin``; row 7 refuses a spec that no longer has it); ``status.attempts`` records
how the attempt ended, when and how long its drain took (``hooks.core.history``; kept as it came
when row 3 holds); ``status.excludedNodes`` lists the nodes kept out of the next attempts, with a
wake-up when the first exclusion ends (``hooks.core.exclusion``); a queue-managed Job's
Workload child is added, or left out as the rows released it (``rows.kueue.workload_child``); the
answer is assembled (``hooks.core.answer``).

A step that would need an attempt past ``MAX_ATTEMPT`` (rows 2a, 5, 6, 8) ends the Job Failed
instead (``rows.terminal.limit_reached``). Terminal comes after suspend only for Jobs that are not
terminal, so suspending a finished Job never moves it out of its final phase. Only rows 1, 2, 2a,
3a, 5 (while draining), 6 (while holding) and the failed JobSet of row 8 on the next call leave the
current JobSet out. The drain barrier is ``hooks.core.barrier``: it passes only when no JobSet of the
Job is observed, no pod of it is active and no batch Job of any of its attempts may still create a
pod (the garbage collector deletes them after the JobSet, and until then one that has not finished
may; they are found by the Job's own label, whatever the status says), all read live, once per call;
it returns a value (``Drain``), and ``barrier.record`` says what it puts into the status (a
``lifecycle.Record``), which the row's Step carries and ``lifecycle.apply`` writes. The status words
are ``hooks.core.wording``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, NamedTuple

from hooks.core import checkpoint, exclusion, gang, history, specpin
from hooks.core import conditions as cond
from hooks.core.answer import assemble
from hooks.core.barrier import refuse_if_behind
from hooks.core.lifecycle import Move, Step, Teardown, apply, path
from hooks.core.observed import Observed
from hooks.core.podreads import PodReads
from hooks.core.rows import current, deadline, kueue, mismatch, teardown, terminal
from hooks.core.rows.teardown import teardown as run_teardown
from hooks.core.vocab import Outcome, Reason
from hooks.core.work import (
    PENDING,
    RESTARTING,
    STATUS_MISMATCH,
    SUSPENDED,
    SUSPENDING,
    TERMINAL,
    Context,
    Decision,
    Work,
)

__all__ = ["Decision", "decide"]

def decide(observed: Observed, reader: PodReads, now: datetime, *, resync_seconds: float = 5.0) -> Decision:
    """Decides the desired children and the whole status for ``observed``.

    Reads pods only through ``reader`` (``hooks.core.podreads.PodReads``: the podread Reader's
    ``job_pods``, ``active_job_pods``, ``active_launcher_pods``, ``active_attempt_pods``,
    ``workload_pods``, ``attempt_failure_pods``, ``node_states``, the batch Jobs the barrier waits
    for, ``attempt_jobs``, and, before asking for a force delete, ``pod_delete_allowed``); the barrier's
    reads are made once per call (``hooks.core.barrier.drain_reads``). ``now`` stamps
    condition transitions. Returns the
    ``Decision`` whose ``response`` is the 200 body: ``status``, ``children`` (always a list),
    ``resyncAfterSeconds`` (``resync_seconds``) only while waiting, ``finalized`` only when
    finalizing. A failed read never lets a teardown proceed; a status that disagrees with the
    evidence (the children, the pods, the API server's times) never drops a healthy JobSet, never
    ends a run and never deletes the Job.
    """
    prior = observed.status
    ctx = Context(observed, reader, now)
    tearing_down = teardown_row(ctx)
    # Rows 1, 2 and 2a tear down whatever attempt runs: they adopt nothing, so that the phase they
    # write (Suspending) never makes the next call adopt and answer another attempt (a fixed point).
    if not observed.finalizing:  # a cached parent older than a newer attempt's JobSet: 409, not an answer
        refuse_if_behind(ctx, prior.attempt, reads=False)
    attempt, refused = (prior.attempt, None) if tearing_down is not None else mismatch.adopt(ctx)
    phase = prior.phase
    if attempt > prior.attempt:
        phase = PENDING  # the step that creates a newer attempt already happened; its status write was lost
    elif tearing_down is None and phase in (SUSPENDED, SUSPENDING) and current.never_started(prior) \
            and _standing(ctx.jobset(attempt)):
        phase = PENDING  # the resume that created a never-started Job's first JobSet happened; its write was lost
    work = Work.of(prior, phase=phase, attempt=attempt, conditions=cond.sort_conditions(prior.conditions),
                   restarts_by_cause=dict(prior.restarts_by_cause),
                   restarts_by_class=dict(prior.restarts_by_class), last_failure=dict(prior.last_failure),
                   attempts=[dict(entry) for entry in prior.attempts])
    disagreement = None if observed.finalizing else mismatch.disagreement(ctx, attempt, phase, refused)
    trusted = disagreement is None
    if tearing_down is None and trusted and phase not in TERMINAL and deadline.due(ctx, work):
        tearing_down = deadline.DEADLINE                                  # row 3a
    apply(ctx, row(ctx, work, tearing_down, disagreement), work)  # the one place a row's Step enters the work
    after = After(trusted=trusted, tearing_down=tearing_down is not None, attempt=attempt,
                  ended_by=tearing_down.move if tearing_down is not None
                  and not checkpoint.waiting(work) else None)  # a checkpoint gate waits: nothing ended yet
    for later in PASSES:                                                  # then rows 12, 13 among them
        later.run(ctx, work, after)
    return assemble(observed, work, resync_seconds, transitions=path(
        (prior.phase, prior.attempt), (phase, attempt), work.transition, (str(work.phase), work.attempt),
        bool(work.finalized)))


def row(ctx: Context, work: Work, tearing_down: Teardown | None, disagreement: tuple[str, str] | None) -> Step:
    """Rows 1-11 (the module doc), first match decides: a teardown declared (rows 1, 2, 2a, 3a:
    ``tearing_down``, run by ``rows.teardown.teardown``; Kueue's word is not a status claim: rows 1,
    2 and 2a come before the mismatch hold), the mismatch hold (row 3, on ``disagreement``), the
    final phases (row 4), the next attempt (rows 5, 6) or the current one (rows 7-11). Returns the
    row's ``Step`` (carrying the barrier's record when the row read the barrier); the row writes
    nothing into ``work``."""
    if tearing_down is not None:
        return run_teardown(ctx, work, tearing_down)                      # rows 1, 2, 2a, 3a
    if disagreement is not None:
        return mismatch.hold(ctx, work, *disagreement)                    # row 3
    if work.phase in TERMINAL:
        return terminal.final(ctx, work)                                  # row 4
    if work.phase in (SUSPENDED, SUSPENDING):
        return current.resume(ctx, work)                                  # row 5
    if work.phase == RESTARTING:
        return current.restart(ctx, work)                                 # row 6
    return current.steady(ctx, work)                                      # rows 7-11


class After(NamedTuple):
    """What the passes after the row read of the call: whether the status agrees with the evidence
    (``trusted``), whether a teardown row ran (``tearing_down``), the current attempt and the move of
    the teardown that ends it (``ended_by``: its ``Teardown.move``, which the history records; at the
    last attempt the row's own move is then the attempt limit's)."""

    trusted: bool
    tearing_down: bool
    attempt: int
    ended_by: Move | None


class Pass(NamedTuple):
    """One step after the row, in ``PASSES``: ``function`` is the module's own function (what the
    guard test reads: a pass adds children, conditions or times, never the phase, outcome or
    message), ``run`` calls it on the call's ``After``."""

    name: str
    function: Callable[..., Any]
    run: Callable[[Context, Work, After], None]


def _gang(ctx: Context, work: Work, after: After) -> None:
    placed = gang.placement(ctx, work)
    if placed is not None:
        apply(ctx, gang_step(placed, work.kind), work)


def gang_step(placed: gang.Placement, outcome: Outcome) -> Step:
    """The ``Step`` of the gang's ``placed`` (``hooks.core.gang.placement``), over the row's
    ``outcome``: its children and ``GangScheduled``; when it holds, the Job ``Pending`` with the
    hold's words, and, when nothing is created (``Hold.stops``), ``held``, no workload and a resync
    (else the row's outcome stays). Returns the step; ``decide`` applies it."""
    hold = placed.hold
    conditions = (placed.condition,) if placed.condition is not None else ()
    if hold is None:
        return Step(outcome, children=placed.children, conditions=conditions)
    if not hold.stops:
        return Step(outcome, phase=PENDING, message=hold.message, children=placed.children, conditions=conditions)
    return Step(Outcome.HELD, phase=PENDING, message=hold.message, workload="", resync=True,
                children=placed.children, conditions=conditions)


def agreement(ctx: Context, work: Work, after: After) -> None:
    """``StatusMismatch`` turns False once the status agrees with the evidence again."""
    if after.trusted and cond.get_condition(work.conditions, STATUS_MISMATCH) is not None:
        work.conditions = cond.set_condition(work.conditions, STATUS_MISMATCH, cond.FALSE, Reason.AGREES, "", ctx.stamp)


def _times(ctx: Context, work: Work, after: After) -> None:
    deadline.times(ctx, work, trusted=after.trusted)


def _history(ctx: Context, work: Work, after: After) -> None:
    if after.trusted or after.tearing_down:  # whatever row 3 holds on, it moves nothing: nor the history
        history.update(ctx, work, attempt=after.attempt, ended_by=after.ended_by)


def _exclusions(ctx: Context, work: Work, after: After) -> None:
    if after.trusted and not ctx.observed.finalizing:  # row 3 keeps the status' claims: these too
        exclusion.record(ctx, work)


def _checkpoint(ctx: Context, work: Work, after: After) -> None:
    checkpoint.after_row(ctx, work)


def pin(ctx: Context, work: Work, after: After) -> None:
    """``replicatedJobsDigest``, pinned with the first JobSet answered (``hooks.core.specpin``)."""
    work.replicated_jobs_digest = specpin.pinned(ctx.observed.spec, work.replicated_jobs_digest,
                                                 answers_jobset=any(c.get("kind") == "JobSet" for c in work.children))


def on_the_phase(ctx: Context, work: Work, after: After) -> None:
    """Rows 12 and 13 (``ON_THE_PHASE``), each run when it matches, in order: each returns its
    ``Step``, applied (``lifecycle.apply``) before the next reads the work."""
    for numbered in ON_THE_PHASE:
        if numbered.when(ctx, work, after.trusted):
            apply(ctx, numbered.then(ctx, work), work)


def _workload(ctx: Context, work: Work, after: After) -> None:
    if ctx.queue:
        kueue.workload_child(ctx, work, hold=not after.trusted)


def _standing(jobset: Mapping[str, Any] | None) -> bool:
    """Whether ``jobset`` is observed and not being deleted."""
    return jobset is not None and not (jobset.get("metadata") or {}).get("deletionTimestamp")


class OnThePhase(NamedTuple):
    """A row matched on the phase rows 1-11 decided (rows 12, 13): ``when`` reads the call, the work
    as those rows left it and whether the status agrees with the evidence (``trusted``); ``then``
    is the row: it returns its ``Step`` (``on_the_phase`` applies it)."""

    number: str
    when: Callable[[Context, Work, bool], bool]
    then: Callable[[Context, Work], Step]


ON_THE_PHASE: tuple[OnThePhase, ...] = (
    OnThePhase("12", deadline.ttl_passed, deadline.delete_job),
    OnThePhase("13", kueue.quota_releasable, kueue.release_quota),
)
"""Rows 12 and 13, each run when it matches, in this order (both may: row 13's message, what
keeps the quota, is then the status message)."""


PASSES: tuple[Pass, ...] = (
    # each JobSet answered gets its attempt's PodGroup, or is held for it (issue 22): the gang says
    # so as a value (gang.Placement) that gang_step turns into a Step
    Pass("gang", gang.placement, _gang),
    Pass("agreement", agreement, agreement),
    # before the Workload joins the children: it stamps the JobSet's start; never over a claim that disagrees
    Pass("times", deadline.times, _times),
    Pass("history", history.update, _history),                            # status.attempts
    Pass("exclusions", exclusion.record, _exclusions),                    # status.excludedNodes, their wake-up
    Pass("checkpoint", checkpoint.after_row, _checkpoint),                # control ConfigMaps, attempts' requests
    Pass("pin", pin, pin),
    Pass("on the phase", on_the_phase, on_the_phase),                     # rows 12, 13
    Pass("workload", kueue.workload_child, _workload),
)
"""What runs after the row, in this order, for every answer (the module doc). Rows 12 and 13 are
rows (they say the message); the others add children, conditions, times or the history and never
the phase, outcome or message (tests/core/test_barrier_value.py reads this tuple)."""


def teardown_row(ctx: Context) -> Teardown | None:
    """The teardown that tears down whatever attempt runs, matched once, on the request as it came
    (before any adoption): row 1 (``rows.teardown.DELETE``) while finalizing; for a Job that is not
    terminal, row 2 (``rows.teardown.SUSPEND``) when ``spec.suspend`` is true, row 2a
    (``rows.kueue.EVICTION``) when Kueue evicted it (``rows.kueue.is_evicted``). ``None`` when none
    applies (row 3a, the deadline, is matched after the mismatch check: it reads a claim)."""
    observed = ctx.observed
    if observed.finalizing:
        return teardown.DELETE                                            # row 1
    if observed.status.phase in TERMINAL:
        return None  # suspending or evicting a finished Job never moves it out of its final phase
    if observed.spec.suspend:
        return teardown.SUSPEND                                           # row 2
    if ctx.queue and kueue.is_evicted(ctx):
        return kueue.EVICTION                                             # row 2a
    return None
