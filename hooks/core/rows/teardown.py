"""The one teardown protocol (``teardown``), and rows 1 and 2, declared: the Job is being deleted
(``DELETE``), or suspended (``SUSPEND``).

Every teardown is a ``hooks.core.lifecycle.Teardown`` declaration run by ``teardown``: its gates,
then the drain barrier (``hooks.core.barrier.barrier``) and its record (``barrier.record``), then the
``Step`` the declaration says, carrying that record, which ``hooks.core.lifecycle.apply`` writes
into the work. The five
declarations: ``DELETE`` and ``SUSPEND`` here, ``rows.kueue.EVICTION`` (row 2a),
``rows.deadline.DEADLINE`` (row 3a) and ``rows.current.NEXT_ATTEMPT`` (the hold before attempt+1,
rows 5 and 6).

Finalizing: ``Terminating`` until the drain barrier passes, then ``finalized``. ``spec.suspend``
(not terminal): ``Suspending`` until it passes, then ``Suspended``. A queue-managed Job's Workload
(its quota) is kept while the barrier holds and released once it passes.
"""

from __future__ import annotations

from msgspec.structs import replace

from hooks.core.barrier import Drain, barrier, record, refuse_if_behind
from hooks.core.checkpoint import ON_DELETE, ON_SUSPEND
from hooks.core.children import as_observed
from hooks.core.lifecycle import ConditionChange, JobSetFate, Move, Step, Teardown
from hooks.core.vocab import Quota
from hooks.core.work import SUSPENDED, SUSPENDING, TERMINATING, Context, Work


def teardown(ctx: Context, work: Work, declared: Teardown) -> Step:
    """Runs the teardown ``declared``: its ``first`` step when it has one (the attempt limit); else
    its gates in order (the first that holds is the step: the holding phase, the gate's words and
    conditions, the current JobSet kept as observed when the gate lets it run, else left out); then
    the drain barrier through ``declared.through`` (a gate that passed adds its conditions and its
    ``status.checkpoint`` to the step), ``declared.refuse`` (a request behind the
    cluster: ``StaleRequest``) and the barrier's record (``hooks.core.barrier.record``: ``Drained``,
    ``DrainStuck``, ``activePods``, resync, force deletes, as a value). Reads the call (``ctx``) and
    the work as the rows left it; writes nothing. Returns the ``Step``, carrying the barrier's
    record: while the barrier holds, the holding phase, ``held``, the barrier's words framed by the
    declaration's; once passed, the done phase, the finalize flag, ``proceeded`` (``terminal`` into
    a terminal phase), then whatever ``declared.passed`` makes of it."""
    first = declared.first(ctx, work)
    if first is not None:
        return replace(first, workload="")
    said: tuple[ConditionChange, ...] = ()
    request = None
    for gate in declared.gates:
        verdict = gate.check(ctx, work)
        if not verdict.passed:
            current = ctx.jobset(work.attempt) if gate.running_legal else None
            kept = (as_observed(current),) if current is not None else ()
            return Step(declared.outcome(False), phase=declared.holding, message=verdict.words,
                        jobset=JobSetFate.KEEP if kept else declared.jobset, children=kept,
                        quota=declared.quota_holding, conditions=said + verdict.conditions, resync=True,
                        transition=declared.move, checkpoint=verdict.checkpoint or request)
        said, request = said + verdict.conditions, verdict.checkpoint or request
    drain = barrier(ctx, work.conditions, through=declared.through(ctx, work))
    declared.refuse(ctx, work, drain)
    step = _step(ctx, work, declared, drain)
    return replace(step, record=record(ctx, work.conditions, drain), conditions=said + step.conditions,
                   checkpoint=request)


def _step(ctx: Context, work: Work, declared: Teardown, drain: Drain) -> Step:
    """The step of ``declared`` once its barrier said ``drain`` (``teardown``)."""
    passed = drain.passed
    before, after = declared.words(ctx, work) if not passed else ("", "")
    step = Step(declared.outcome(passed), phase=declared.done if passed else declared.holding,
                message=drain.message(before=before, after=after), jobset=declared.jobset,
                children=() if declared.jobset == JobSetFate.DROP else None, workload="",
                quota=declared.quota_done if passed else declared.quota_holding,
                conditions=declared.conditions(ctx, work, passed), finalized=declared.finalizes and passed,
                transition=declared.move)
    return declared.passed(ctx, work, step) if passed else step


DELETE = Teardown(Move.DELETE, holding=TERMINATING, done=TERMINATING,
                  quota_holding=Quota.KEEP, quota_done=Quota.RELEASE, finalizes=True, gates=(ON_DELETE,))
"""Row 1: no children; Terminating; finalized once the barrier passes. With ``spec.checkpoint.onDelete``,
the workload is asked to save first (``hooks.core.checkpoint``), its JobSet running meanwhile."""


def _refuse_if_behind(ctx: Context, work: Work, drain: Drain) -> None:
    """A request whose parent predates an attempt past its status (``refuse_if_behind``: a parent
    from Metacontroller's cache, its suspend already undone and attempt+1 started) is refused with
    a 409, never answered: it would write the attempt back and leave the newer attempt's JobSet out."""
    refuse_if_behind(ctx, work.attempt)


SUSPEND = Teardown(Move.SUSPEND, holding=SUSPENDING, done=SUSPENDED,
                   quota_holding=Quota.KEEP, quota_done=Quota.RELEASE, refuse=_refuse_if_behind, gates=(ON_SUSPEND,))
"""Row 2: no children; Suspending until the barrier passes, then Suspended. With ``spec.checkpoint``
(``onSuspend``), the workload is asked to save first (``hooks.core.checkpoint``), its JobSet running."""
