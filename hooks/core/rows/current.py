"""Rows 5-11: the current attempt. Run it, judge how it ended, start the next one.

``resume`` (row 5) and ``restart`` (row 6) pass the drain barrier before ``next_attempt`` starts
attempt+1; ``steady`` (rows 7-11) checks the spec (``invalid_spec``, row 7), judges a failed JobSet
(``failed``, rows 8, 8a, 9, with ``hooks.core.failurepolicy``), keeps a completed one (row 10) and
otherwise ``run``s the current attempt's JobSet (row 11), created only once the barrier passes and,
for a queue-managed Job, once Kueue admitted it. An observed JobSet that is healthy is left out only
when it failed (rows 6, 8): never because the status says otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec.structs import replace

from hooks.core import budget, built, checkpoint, failurepolicy, history, queueing, specpin
from hooks.core import conditions as cond
from hooks.core.barrier import (
    Drain,
    StaleRequest,
    ahead_of,
    barrier,
    record_gate,
    refuse_if_behind,
    refuse_if_children_behind,
)
from hooks.core.children import as_observed
from hooks.core.evidence import COMPLETED, healthy, jobset_state
from hooks.core.jobset import InvalidSpec
from hooks.core.lifecycle import ConditionChange, JobSetFate, Move, Record, Step, Teardown, ahead, then
from hooks.core.reads import counted, counting, failed_words
from hooks.core.rows.kueue import admitted, queued
from hooks.core.rows.teardown import teardown
from hooks.core.rows.terminal import limit_reached
from hooks.core.spec import check_policies
from hooks.core.status import Status
from hooks.core.vocab import Outcome, Quota, Reason
from hooks.core.wording import bounded
from hooks.core.work import (
    FAILED,
    FAILED_CONDITION,
    INVALID_SPEC,
    PENDING,
    RESTARTING,
    RUNNING,
    SUCCEEDED,
    SUSPENDED,
    SUSPENDING,
    Context,
    Work,
)
from podread.errors import PodReadError
from podread.selector import is_active


def resume(ctx: Context, work: Work) -> Step | None:
    """Row 5: unsuspended. Once the barrier passes (checked again even when already Suspended), the
    next attempt starts: attempt+1, restarts unchanged; a Job that never started one (created
    suspended: ``never_started``) starts its first, attempt 0. While holding, the phase stays as it was.
    A resume while the checkpoint gate waits (``cancel_checkpoint``) keeps the same attempt running.
    """
    cancelled = cancel_checkpoint(ctx, work)
    if cancelled is not None:
        return cancelled
    return next_attempt(ctx, work, kind=Outcome.CREATED)


def cancel_checkpoint(ctx: Context, work: Work) -> Step | None:
    """A Job resumed (unsuspended, or its eviction withdrawn) while a checkpoint request of its
    current attempt waits (``hooks.core.checkpoint.waiting``) and that attempt's JobSet still runs:
    nothing was dropped, so the request is ``Cancelled`` and rows 7-11 (``steady``) decide the same
    attempt from ``Running`` (the arrow Suspending -> Running). ``None`` otherwise."""
    status = ctx.observed.status
    current = ctx.jobset(work.attempt)
    if not (work.phase == SUSPENDING and checkpoint.waiting(status) and status.attempt == work.attempt
            and current is not None and healthy(current)):
        return None
    record, change = checkpoint.cancelled(status)
    step = Step(Outcome.KEPT, phase=RUNNING, message="", conditions=(change,), checkpoint=record, transition=Move.RUN)
    return then(step, steady(ctx, ahead(ctx, step, work)))


def never_started(status: Status) -> bool:
    """Whether the status shows a Job that never had a JobSet (created suspended, resumed before its
    first): attempt 0, no restart, no workload, no start time, no history (every attempt whose
    JobSet the hooks answer gets an entry, and the latest is always kept)."""
    return (status.attempt == 0 and status.restarts == 0 and not status.workload and not status.start_time
            and not status.attempts and not status.attempts_dropped)


def restart(ctx: Context, work: Work) -> Step | None:
    """Row 6: Restarting. Holds until the barrier passes, then starts attempt+1 as Pending."""
    return next_attempt(ctx, work, kind=Outcome.PROCEEDED)


def _step(ctx: Context, work: Work) -> int:
    """How far the next attempt is: 0 for the first attempt of a Job that never started one, resumed
    (``never_started``); else 1."""
    return 0 if work.phase in (SUSPENDED, SUSPENDING) and never_started(ctx.observed.status) else 1


def _limit(ctx: Context, work: Work) -> Step | None:
    """A step to attempt+1 from the last attempt a Job can have ends it instead
    (``rows.terminal.limit_reached``)."""
    return limit_reached(work) if _step(ctx, work) else None


def _through(ctx: Context, work: Work) -> int:
    """The barrier reads through the next attempt (a JobSet of it may already exist)."""
    return work.attempt + _step(ctx, work)


def _refuse_if_ahead(ctx: Context, work: Work, drain: Drain) -> None:
    """While the barrier holds, live reads that show pods or batch Jobs of the next attempt or later
    say the request is older than the cluster (a stale parent from Metacontroller's cache):
    ``StaleRequest`` (409), never an answer that takes the attempt back."""
    ahead = None if drain.passed else ahead_of(ctx, work.attempt, work.attempt + _step(ctx, work))
    if ahead is not None:  # the step this row would take already happened: never take the attempt back
        raise StaleRequest(f"the request is behind the cluster: status.attempt is {work.attempt}, but pods or "
                           f"batch Jobs of attempt {ahead} exist (read live), which neither the status nor the "
                           "children show; not answering from this parent", cause="attempt-ahead")


def _started(ctx: Context, work: Work, step: Step) -> Step:
    """Once drained: attempt+1 (``_step``) as Pending."""
    return replace(step, attempt=work.attempt + _step(ctx, work))


NEXT_ATTEMPT = Teardown(Move.NEXT_ATTEMPT, holding=None, done=PENDING, quota_holding=Quota.KEEP,
                        quota_done=None, jobset=None, first=_limit, through=_through, refuse=_refuse_if_ahead,
                        passed=_started)
"""The hold before the next attempt (rows 5 and 6): the drain barrier through attempt+1; while it
holds nothing new is emitted (the JobSet as the row before said: row 8 keeps the failed one this
answer), the phase stays as it was and a queue-managed Job gets no new Workload (``Quota.KEEP``);
once it passed, attempt+1 (or the first attempt of a Job that never started one) as Pending."""


def next_attempt(ctx: Context, work: Work, *, kind: Outcome) -> Step:
    """The next attempt, behind ``NEXT_ATTEMPT`` (``rows.teardown.teardown``). Returns the step while
    it holds (or at the attempt limit). Once it passed, rows 7-11 (``steady``) decide the new attempt
    from the work as the teardown's step leaves it (``lifecycle.ahead``: attempt+1, Pending; a copy,
    ``work`` is not written), and the one step returned is the teardown's, then theirs
    (``lifecycle.then``), its move the next attempt's; ``kind`` names it: the call's outcome
    whatever the new attempt then waits for (Kueue's admission, a flavor: not a drain hold), unless
    its spec is invalid (``invalid-spec``)."""
    step = teardown(ctx, work, NEXT_ATTEMPT)
    if step.outcome != Outcome.PROCEEDED:
        return step
    started = steady(ctx, ahead(ctx, step, work), passed=Drain())  # the barrier has just passed, live
    return then(step, replace(started, outcome=started.outcome if started.outcome == Outcome.INVALID_SPEC else kind,
                              transition=Move.NEXT_ATTEMPT))


def steady(ctx: Context, work: Work, *, passed: Drain | None = None) -> Step:
    """Rows 7-11 for the current attempt (also the step after a resume or a restart, which passes
    the barrier's value, ``passed``, because it has just passed in this call). Returns the row's
    step; a valid spec turns ``InvalidSpec`` False where it was set."""
    current = ctx.jobset(work.attempt)
    try:
        specpin.check(ctx.observed.spec, work.replicated_jobs_digest)
        desired = built.jobset(ctx, work.attempt)
        rules = check_policies(ctx.observed.spec)
        queueing.check_jobsets(ctx.observed)
        if ctx.queue:
            queueing.check_queueing(ctx.observed, ctx.admission)
            built.workload(ctx, work.attempt)  # TooManyPodSets; the Workload child is this one (rows.kueue)
    except queueing.PriorityUnknown:
        pass  # not a spec error: the Job stays Queued without a Workload (rows.kueue.queued says why)
    except InvalidSpec as invalid:
        return invalid_spec(ctx, work, current, invalid)
    valid: tuple[ConditionChange, ...] = ()
    if cond.get_condition(work.conditions, INVALID_SPEC) is not None:
        valid = (ConditionChange(INVALID_SPEC, cond.FALSE, Reason.VALID, ""),)
    state = jobset_state(current) if current is not None else ""
    if state == FAILED and current is not None:
        step = failed(ctx, work, current, desired, rules)  # rows 8, 8a, 9
    elif state == COMPLETED:  # row 10
        step = counting(ctx, Step(Outcome.TERMINAL, phase=SUCCEEDED, workload=desired["metadata"]["name"],
                                  jobset=JobSetFate.KEEP, children=(desired,), message="", transition=Move.COMPLETE))
    else:
        step = run(ctx, work, current, desired, passed=passed)
    return replace(step, conditions=valid + step.conditions) if valid else step


def failed(ctx: Context, work: Work, current: Mapping[str, Any], desired: dict[str, Any],
            rules: list[Mapping[str, Any]]) -> Step:
    """Rows 8, 8a and 9: the current JobSet failed. ``spec.failurePolicy.rules`` judge why
    (``hooks.core.failurepolicy``) from the pods that tell it, read live once
    (``hooks.core.history.failure_pods``: ``status.attempts`` names the first failing pod from the
    same answer, whether or not a rule reads pods). A failed read holds, keeping the JobSet, when a
    rule reads pods (``FailJob`` is final, so it is never decided on a guess); when none does, the
    verdict goes on without them and the history names no failing pod (a teardown is never held
    for the history's sake).
    The failure's class (``hooks.core.failureclass``, through ``history.failure_class``: the nodes
    are read only when no pod says why) is the verdict's unless a rule names one; a failed pod read
    that goes on is class ``unknown``. ``lastFailure`` records the class and its evidence.
    FailJob (the verdict's ``charge`` is ``None``), or a restart the budget refuses
    (``hooks.core.budget.spend``: a counted one whose class has none left): Failed, the JobSet kept,
    the condition naming the class and its budget (``MaxRestartsReached`` for ``user`` and
    ``unknown``, ``BudgetExhausted`` for the others). Otherwise row 8, in two
    calls, so that the decision survives a lost status write: this answer records Restarting (and
    restarts+1 when the verdict counts: the step's ``Charge``) and still keeps the failed JobSet;
    the next call (row 6, fed that status) leaves it out. Leaving it out at once would let a lost
    status write recreate the failed attempt under the same name, uncounted. The count happens
    exactly once: the fed-back status is Restarting.
    """
    name = desired["metadata"]["name"]
    workload = str(current["metadata"]["name"])
    try:
        pods = history.failure_pods(ctx, workload)
    except PodReadError as error:
        if failurepolicy.needs_pods(rules):
            return Step(Outcome.HELD, phase=work.phase if work.phase in (RUNNING, PENDING) else PENDING,
                        workload=name, jobset=JobSetFate.KEEP, children=(desired,), message=failed_words(error),
                        resync=True)
        # no rule reads pods: the verdict goes on; its class is unknown, status.attempts names no failing pod
        pods, classified = [], history.failure_class(ctx, workload, None, error.cause)
    else:
        classified = history.failure_class(ctx, workload, pods)
    verdict = failurepolicy.judge(rules, current, pods, classified)
    history.judged(ctx, workload, verdict.classified)  # the history records the class the budget is charged by
    charge = verdict.charge  # None: FailJob restarts nothing
    spec = ctx.observed.spec
    restarting = charge is not None and budget.spend(spec, budget.counters(spec, work), charge).allowed
    said = {"attempt": work.attempt, "cause": verdict.cause, "message": bounded(verdict.message),
            "action": verdict.action, "class": verdict.klass.value,
            "classEvidence": verdict.classified.evidence}
    if not restarting:
        used_up = f"{verdict.message}; class {verdict.klass.value} ({verdict.classified.evidence}): " \
                  f"{budget.exhausted(spec, verdict.klass)}"
        reason, words = (Reason.FAILURE_POLICY, verdict.message) if charge is None else (
            budget.exhausted_reason(verdict.klass), used_up)
        return counting(ctx, Step(Outcome.TERMINAL, phase=FAILED, message="", workload=name, jobset=JobSetFate.KEEP,
                                  children=(desired,), last_failure=said, transition=Move.FAIL, conditions=(
                                      ConditionChange(FAILED_CONDITION, cond.TRUE, reason, bounded(words)),)))
    limit = limit_reached(work)
    if limit is not None:
        return counting(ctx, replace(limit, workload=name, jobset=JobSetFate.KEEP, children=(desired,),
                                     last_failure=said))
    # row 6's hold: the failed JobSet is observed, so the barrier holds (WorkloadPresent); the move
    # this answer makes is the failure's (Running -> Restarting), and it spends the verdict's charge
    held = teardown(ctx, work, NEXT_ATTEMPT)
    return replace(held, outcome=Outcome.HELD, phase=RESTARTING, attempt=None, jobset=JobSetFate.KEEP,
                   children=(desired,), last_failure=said, transition=Move.FAIL, charge=charge)


def run(ctx: Context, work: Work, current: Mapping[str, Any] | None, desired: dict[str, Any],
         *, passed: Drain | None) -> Step:
    """Row 11: the current attempt's JobSet; Running when a cached pod is active, else Pending, except
    that an attempt already Running (its JobSet observed) stays Running once its pods have finished,
    until the JobSet reports Completed or Failed: only a never-started attempt is Pending.

    A JobSet that is not observed is created only after the drain barrier (``passed``: its value
    when it already passed in this call; else it is read here and the step carries its record,
    ``barrier.record_gate``), so a new JobSet
    never overlaps pods left by one deleted outside this controller. While that barrier holds,
    nothing is emitted and the phase stays Pending (or Running).
    """
    name = desired["metadata"]["name"]
    waiting_phase = work.phase if work.phase in (RUNNING, PENDING) else PENDING
    said: tuple[ConditionChange, ...] = ()
    recorded: Record | None = None
    if ctx.queue:
        admission = ctx.admission
        if current is None and admission.state != queueing.ADMITTED:
            return queued(ctx, work, admission)
        if admission.state == queueing.ADMITTED:
            said = (admitted(ctx, admission),)
            if current is not None:
                desired = as_observed(current)  # made with the admission's node labels: kept as it is
            else:
                workload = queueing.current_workload(ctx.observed) or {}
                try:
                    desired = queueing.admitted_jobset(desired, workload, ctx.observed.flavors)
                except queueing.FlavorUnknown as unknown:
                    return Step(Outcome.HELD, phase=PENDING, children=(), workload="", resync=True, conditions=said,
                                message=bounded(f"admitted, waiting before creating JobSet {name}: {unknown.message}"),
                                transition=Move.RUN)
                except InvalidSpec as invalid:
                    step = invalid_spec(ctx, work, None, invalid)
                    return replace(step, conditions=said + step.conditions)
    if current is None and passed is None:
        drain = barrier(ctx, work.conditions, through=work.attempt)
        refuse_if_behind(ctx, work.attempt)  # a cached parent from before attempt+1 would create this one
        refuse_if_children_behind(ctx, work.attempt)  # cached children from before this JobSet was created
        recorded = record_gate(ctx, work.conditions, drain)
        if not drain.passed:
            return Step(Outcome.HELD, phase=waiting_phase, children=(), workload=name, conditions=said,
                        message=drain.message(after=f" (before creating JobSet {name})"), transition=Move.RUN,
                        record=recorded)
        passed = drain
    kept = Step(Outcome.KEPT if current is not None else Outcome.CREATED, workload=name, conditions=said,
                jobset=JobSetFate.KEEP if current is not None else JobSetFate.CREATE, children=(desired,),
                transition=Move.RUN, record=recorded)
    if passed is not None:  # the barrier has just found no active pod and no active launcher, live: nothing runs
        active, running = 0, False
    else:
        count = counted(ctx)
        if isinstance(count, PodReadError):
            return replace(kept, phase=waiting_phase, message=failed_words(count), resync=True)
        active, found = count, workload_running(ctx, count, name)
        if isinstance(found, PodReadError):
            return replace(kept, phase=waiting_phase, active_pods=active, message=failed_words(found), resync=True)
        running = found
    if not running and current is not None and work.phase == RUNNING:
        # the same attempt already ran and its pods have all finished before the JobSet said how it
        # ended (Completed or Failed, rows 8-10): still Running, never back to Pending. Only the
        # phase word: the JobSet is kept either way and no barrier or gate depends on it.
        return replace(kept, active_pods=active,
                       message=f"no pod of JobSet {name} is active: waiting for the JobSet to report how it ended")
    return replace(kept, active_pods=active, phase=RUNNING if running else PENDING,
                   message="" if running else f"waiting for the pods of JobSet {name} to start")


def workload_running(ctx: Context, active: int, workload: str) -> bool | PodReadError:
    """Whether ``workload`` runs: a worker pod is active (``active``, from the cache) or, for an MPI
    Job whose workers are all done, its launcher pod is (``workload_pods``, live: launchers are not
    cached). Returns the read's error when it failed."""
    if active:
        return True
    launcher = ctx.observed.spec.launcher
    if not launcher:
        return False
    try:
        return any(is_active(pod) for pod in ctx.reader.workload_pods(ctx.namespace, workload, launcher))
    except PodReadError as error:
        return error


def invalid_spec(ctx: Context, work: Work, current: Mapping[str, Any] | None, invalid: InvalidSpec) -> Step:
    """Row 7: the spec cannot be built. Report it; keep the current JobSet when observed, create none.
    ``activePods`` from the cached read (a failed one resyncs; the words stay the spec's)."""
    count = counted(ctx)
    failed_read = isinstance(count, PodReadError)
    step = Step(Outcome.INVALID_SPEC, active_pods=None if isinstance(count, PodReadError) else count,
                resync=failed_read, message=f"waiting for a valid spec: {invalid.reason}",
                conditions=(ConditionChange(INVALID_SPEC, cond.TRUE, invalid.code, bounded(invalid.reason)),))
    if current is None:
        return replace(step, phase=PENDING, workload="", children=())
    step = replace(step, phase=work.phase if work.phase in (RUNNING, PENDING) else PENDING,
                   workload=current["metadata"]["name"], jobset=JobSetFate.KEEP,
                   children=(as_observed(current),))  # the spec cannot be built: keep what exists
    if jobset_state(current):
        # the JobSet ended (Failed, or Completed) but nothing is judged while the spec cannot be built:
        # the phase is left as it was, so the message says what is going on
        return replace(step, message=bounded(f"JobSet {current['metadata']['name']} {jobset_state(current).lower()}; "
                                             f"not judged (no restart, no end) until the spec is valid: "
                                             f"{invalid.reason}"))
    return step
