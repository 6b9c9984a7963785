"""Row 3: the status is a claim, not a fact; when it disagrees with the children, hold.

``hooks.core.evidence.status_mismatch`` finds the disagreement: two or more healthy JobSets
(``SeveralWorkloads``: a stray next to the current one is not adopted); one healthy JobSet that is
not the status' attempt (``WorkloadNotCurrent``; a newer one is adopted instead: Metacontroller
creates children before it writes the status); ``Suspended``/``Suspending``/``Restarting`` while
the current JobSet is there and not failed (``PhaseDisagrees``); ``restarts`` that no sequence of
steps gives (``RestartsDisagree``). ``hold`` keeps every JobSet as observed and moves nothing until
the disagreement goes; then ``StatusMismatch`` turns False (``hooks.core.decide``).
"""

from __future__ import annotations

from hooks.core import conditions as cond
from hooks.core.children import as_observed
from hooks.core.reads import count_pods
from hooks.core.wording import bounded
from hooks.core.work import PENDING, PHASES, STATUS_MISMATCH, Context, Work


def hold(ctx: Context, work: Work, reason: str, message: str) -> None:
    """Row 3: the status disagrees with the children. Keeps every observed JobSet not being deleted
    exactly as observed, creates nothing, keeps the status' claims (phase, attempt, restarts,
    workload) so that nothing moves, and says why in ``StatusMismatch`` and the message.
    ``activePods`` comes from the cached read."""
    prior = ctx.observed.status
    work.kind = "held"
    work.phase = prior.phase if prior.phase in PHASES else PENDING
    work.attempt = prior.attempt
    work.restarts = prior.restarts
    work.workload = prior.workload
    work.children = [as_observed(js) for js in ctx.observed.jobsets if not js["metadata"].get("deletionTimestamp")]
    work.resync = True
    work.conditions = cond.set_condition(work.conditions, STATUS_MISMATCH, cond.TRUE, reason, bounded(message),
                                         ctx.now)
    count_pods(ctx, work)
    work.message = bounded(f"holding, the status disagrees with what is observed: {message}")
