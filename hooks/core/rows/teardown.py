"""Rows 1 and 2: the Job is being deleted, or suspended. No children; the barrier, then on.

Finalizing: ``Terminating`` until the drain barrier passes, then ``finalized``. ``spec.suspend``
(not terminal): ``Suspending`` until it passes, then ``Suspended``. A queue-managed Job's Workload
(its quota) is kept while the barrier holds and released once it passes.

Each row reads the barrier's value first (``hooks.core.barrier.Drain``) and then sets every field
it decides from it, once: nothing depends on the order in which they are set.
"""

from __future__ import annotations

from hooks.core.barrier import barrier, record, refuse_if_behind
from hooks.core.vocab import Outcome, Quota
from hooks.core.work import SUSPENDED, SUSPENDING, TERMINATING, Context, Work


def finalize(ctx: Context, work: Work) -> None:
    """Row 1: no children; Terminating; finalized once the barrier passes."""
    drain = barrier(ctx, work.conditions, through=work.attempt)
    record(ctx, work, drain)
    work.phase = TERMINATING
    work.workload = ""
    work.message = drain.message()
    work.finalized = drain.passed
    work.kind = Outcome.PROCEEDED if drain.passed else Outcome.HELD
    work.quota = Quota.RELEASE if drain.passed else Quota.KEEP


def suspend(ctx: Context, work: Work) -> None:
    """Row 2: no children; Suspending until the barrier passes, then Suspended. A request whose
    parent predates an attempt past its status (``refuse_if_behind``: a parent from Metacontroller's
    cache, its suspend already undone and attempt+1 started) is refused with a 409, never answered:
    it would write the attempt back and leave the newer attempt's JobSet out."""
    drain = barrier(ctx, work.conditions, through=work.attempt)
    refuse_if_behind(ctx, work.attempt)
    record(ctx, work, drain)
    work.phase = SUSPENDED if drain.passed else SUSPENDING
    work.workload = ""
    work.message = drain.message()
    work.kind = Outcome.PROCEEDED if drain.passed else Outcome.HELD
    work.quota = Quota.RELEASE if drain.passed else Quota.KEEP
