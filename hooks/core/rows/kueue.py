"""Row 2a and the queue gates of row 11: queue-managed Jobs (issue 14, docs/adr/0103).

A Job labelled ``kueue.x-k8s.io/queue-name`` also owns one Workload child, and Kueue decides when
its JobSet may run (``hooks.core.queueing`` reads what Kueue says):

- no JobSet is created unless the Workload is admitted: until then the phase is ``Queued`` and
  condition ``Admitted`` is False with Kueue's reason and message (``queued``);
- evicted by Kueue (``Evicted=True``, or not admitted while a JobSet runs), after rows 1-2: the JobSet
  is left out, ``Suspending`` until the drain barrier passes, then the attempt moves on by one (not
  a restart) and the Job is ``Queued``; a fresh Workload is emitted on the next call (``EVICTION``,
  a ``hooks.core.lifecycle.Teardown`` run by ``rows.teardown.teardown``);
- the Workload is in every answer except after a passing barrier of a finalize, suspend or eviction,
  and once a terminal Job's pods are all gone (live reads, row 13: ``release_quota``): only then is
  the quota released (``workload_child`` adds the child, or leaves it out, as the rows decided).
"""

from __future__ import annotations

from msgspec.structs import replace

from hooks.core import built, queueing
from hooks.core import conditions as cond
from hooks.core.barrier import leftovers
from hooks.core.budget import Charge
from hooks.core.checkpoint import ON_PREEMPTION
from hooks.core.evidence import (
    healthy,
)
from hooks.core.jobset import InvalidSpec
from hooks.core.lifecycle import ConditionChange, Move, Step, Teardown
from hooks.core.rows.terminal import past_the_limit
from hooks.core.vocab import EndCause, Outcome, Quota, Reason
from hooks.core.wording import bounded
from hooks.core.work import ADMITTED, QUEUED, SUSPENDED, SUSPENDING, TERMINAL, Context, Work


def is_evicted(ctx: Context) -> bool:
    """Whether Kueue took the admission back: the Workload is ``Evicted``, or a healthy JobSet of
    the Job runs while the Workload is not admitted (gone, or un-admitted without an eviction)."""
    state = ctx.admission.state
    if state == queueing.EVICTED:
        return True
    running = any(healthy(js) for js in ctx.observed.jobsets)
    return running and state != queueing.ADMITTED and ctx.observed.workloads_enabled


def _requeue(work: Work) -> bool:
    """Whether something ran since the Job was last queued (it is not ``Queued``): the next attempt
    follows the eviction."""
    return work.phase != QUEUED


def _evicted_words(ctx: Context) -> str:
    """Kueue's word for the eviction: ``evicted by Kueue (<reason>)[: <message>]``."""
    admission = ctx.admission
    return f"evicted by Kueue ({admission.reason})" + (f": {admission.message}" if admission.message else "")


def _through(ctx: Context, work: Work) -> int:
    """The barrier reads through the next attempt when one follows (``_requeue``)."""
    return work.attempt + 1 if _requeue(work) else work.attempt


def _framing(ctx: Context, work: Work) -> tuple[str, str]:
    """While it drains: Kueue's word, then the barrier's, then what the quota waits for."""
    return f"{_evicted_words(ctx)}; ", " before releasing the quota"


def _admitted(ctx: Context, work: Work, passed: bool) -> tuple[ConditionChange, ...]:
    """``Admitted`` False with Kueue's reason, naming the LocalQueue, whether or not it passed."""
    return (ConditionChange(ADMITTED, cond.FALSE, ctx.admission.reason,
                            bounded(f"LocalQueue {ctx.queue}: {_evicted_words(ctx)}")),)


def evicted_charge(ctx: Context) -> Charge:
    """What an eviction costs (``hooks.core.budget``): Kueue's reason as its cause, class
    ``EndCause.EVICTED``, not counted. No restart: ``budget.spend`` allows it and moves neither
    ``restarts`` nor ``restartsByCause``."""
    return Charge(ctx.admission.reason, EndCause.EVICTED, counted=False)


def _queued_again(ctx: Context, work: Work, step: Step) -> Step:
    """Once drained: the attempt moves on by one (unless the Job was already ``Queued``: nothing ran
    since, and nothing is charged), charged as an eviction (``evicted_charge``), and the Job is
    ``Queued`` again, the quota released; at the last attempt, the attempt limit instead
    (``rows.terminal.past_the_limit``)."""
    requeue = _requeue(work)
    if requeue:
        limited = past_the_limit(work, step)
        if limited is not None:
            return limited
    return replace(step, attempt=work.attempt + 1 if requeue else work.attempt,
                   charge=evicted_charge(ctx) if requeue else None, message=bounded(
        f"{_evicted_words(ctx)}; no pod is left, the quota is released and the Job queues again in "
        f"LocalQueue {ctx.queue}"))


EVICTION = Teardown(Move.EVICT, holding=SUSPENDING, done=QUEUED, quota_holding=Quota.KEEP,
                    quota_done=Quota.RELEASE, through=_through, words=_framing, conditions=_admitted,
                    passed=_queued_again, gates=(ON_PREEMPTION,))
"""Row 2a, evicted by Kueue (preempted, deactivated, its queue stopped, ...). No JobSet; the Workload
is kept (the quota stays held) until the drain barrier passes, then left out, the attempt moves on
by one (unless the Job was already ``Queued``: nothing ran since) and the Job is ``Queued``
(``_queued_again``). ``Admitted`` is False with Kueue's reason throughout. Not a failure: the
ended attempt's charge (``evicted_charge``) leaves ``restarts`` and ``restartsByCause`` unchanged,
as ``hooks.core.budget.spend`` says. With ``spec.checkpoint`` (``onPreemption``), the workload is asked
to save first (``hooks.core.checkpoint``): the JobSet runs and the quota stays held meanwhile."""


def queued(ctx: Context, work: Work, admission: queueing.Admission) -> Step:
    """The current attempt's JobSet would be created, but Kueue has not admitted the Workload:
    nothing is created, the Job is ``Queued`` and ``Admitted`` says why (Kueue's reason). With no
    Workload observed, one is submitted (``workload_child``), unless its WorkloadPriorityClass is
    not known yet (``queueing.PriorityUnknown``, ``PriorityClassNotFound``): then nothing is
    submitted, ``Admitted`` and the message say which class, and the Job is asked again."""
    held = Step(Outcome.HELD, phase=QUEUED, children=(), workload="", transition=Move.QUEUE)
    unknown = _priority_unknown(ctx, work)
    if unknown is not None:
        return replace(held, message=bounded(f"queued in LocalQueue {ctx.queue}: {unknown.message}"), resync=True,
                       conditions=(ConditionChange(ADMITTED, cond.FALSE, Reason.PRIORITY_CLASS_NOT_FOUND,
                                                   bounded(unknown.message)),))
    reason, message = admission.reason, admission.message or "waiting for Kueue to admit the Workload"
    if admission.state == queueing.NONE:
        reason = Reason.SUBMITTED
        message = f"Workload {queueing.workload_name(ctx.job)} submitted, waiting for Kueue to admit it"
    return replace(held, message=bounded(f"queued in LocalQueue {ctx.queue}: {message}"), conditions=(
        ConditionChange(ADMITTED, cond.FALSE, reason, bounded(f"LocalQueue {ctx.queue}: {message}")),))


def _priority_unknown(ctx: Context, work: Work) -> queueing.PriorityUnknown | None:
    """Why the Workload ``queued`` would submit cannot be built: its WorkloadPriorityClass is not
    known (``built.workload``, the call's one build, raised ``PriorityUnknown``); ``None`` when a
    Workload is observed already (nothing is submitted) or it builds (an ``InvalidSpec`` is the
    spec row's, reported before this row is reached)."""
    if queueing.current_workload(ctx.observed) is not None:
        return None
    try:
        built.workload(ctx, work.attempt)
    except queueing.PriorityUnknown as unknown:
        return unknown
    except InvalidSpec:
        return None
    return None


RELEASED_WORDS = "no pod is left: the Workload and its quota are released"
"""``Admitted``'s message once the quota is released (``QuotaReleased``)."""


def admitted(ctx: Context, admission: queueing.Admission) -> ConditionChange:
    """``Admitted`` True, naming the ClusterQueue."""
    by = f" by ClusterQueue {admission.cluster_queue}" if admission.cluster_queue else ""
    return ConditionChange(ADMITTED, cond.TRUE, Reason.ADMITTED, f"LocalQueue {ctx.queue}: admitted{by}")


def quota_releasable(ctx: Context, work: Work, trusted: bool) -> bool:
    """Whether row 13 applies: a queue-managed Job the rows left terminal, whose Workload is
    observed and was released by no row (``work.quota`` is still ``Quota.CREATE``). Whether the status
    agrees (``trusted``) does not matter: releasing the quota of a finished Job claims nothing."""
    return (bool(ctx.queue) and work.phase in TERMINAL and work.quota == Quota.CREATE
            and queueing.current_workload(ctx.observed) is not None)


def release_quota(ctx: Context, work: Work) -> Step:
    """Row 13: a terminal queue-managed Job whose Workload is observed releases its quota once no
    pod of the Job is active and no batch Job of it may still create one (``leftovers``, the
    barrier's live reads through ``work.attempt``); otherwise the Workload is kept, the message says
    what keeps it and resync is set (a failed read keeps it too). Returns the ``Step``: the quota,
    and the outcome as the rows before it decided (``work.kind``)."""
    left = leftovers(ctx, work.attempt)
    if left.none:
        return Step(work.kind, quota=Quota.RELEASE)
    return Step(work.kind, quota=Quota.KEEP, message=left.message(), resync=True)


def workload_child(ctx: Context, work: Work, *, hold: bool) -> None:
    """Adds the Workload child as ``work.quota`` says (set by the rows: ``Quota.RELEASE`` only after a
    passing barrier or row 13). A released Workload of a Job that ends (terminal or ``Suspended``)
    sets ``Admitted`` False (``QuotaReleased``). A new Workload (``hooks.core.built``) is emitted
    only when nothing holds (``hold``: the status disagrees) and the spec can be built; a
    WorkloadPriorityClass that is not known yet leaves the Job ``Queued`` without one (``queued``
    says so). Writes nothing into the status but ``QuotaReleased``: the rows said the rest."""
    observed = queueing.current_workload(ctx.observed)
    if work.quota == Quota.RELEASE:
        if work.phase in TERMINAL or work.phase == SUSPENDED:
            work.conditions = cond.set_condition(work.conditions, ADMITTED, cond.FALSE, Reason.QUOTA_RELEASED,
                                                 RELEASED_WORDS, ctx.stamp)
        return
    if observed is not None:
        work.children.append(queueing.as_observed(observed))
        return
    admitted = cond.get_condition(work.conditions, ADMITTED)
    if work.phase in TERMINAL and admitted is not None and admitted.status == cond.TRUE:
        # Released on an earlier call (the Workload is gone): a parent from before that call's
        # status write says the same as the one after it, not Admitted again (last writer wins).
        work.conditions = cond.set_condition(work.conditions, ADMITTED, cond.FALSE, Reason.QUOTA_RELEASED,
                                             RELEASED_WORDS, ctx.stamp)
    if work.quota != Quota.CREATE or hold or work.phase in TERMINAL or work.kind == Outcome.INVALID_SPEC:
        return
    try:
        work.children.append(built.workload(ctx, work.attempt))
    except (InvalidSpec, queueing.PriorityUnknown):
        return  # reported by the row that built the JobSet (row 7), or by the row that queued (``queued``)
