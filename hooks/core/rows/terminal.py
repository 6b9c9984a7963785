"""Row 4 and the attempt limit: the phases nothing leaves.

``final``: Succeeded and Failed are final; the current JobSet is kept if observed, never created.
A terminal phase is a claim: over a running JobSet, or (with ``ttlSecondsAfterFinished``) without
the evidence ``hooks.core.claims.terminal_evidence`` asks for, row 3 holds before this row is reached.
``out_of_attempts``, the one check of the limit, and ``attempt_limit``: a step that would need an
attempt past ``MAX_ATTEMPT`` ends the Job Failed
(``AttemptLimitReached``): names are validated for that attempt, so no Job is ever parked on a name
it cannot have.
"""

from __future__ import annotations

from hooks.core import conditions as cond
from hooks.core.children import keep
from hooks.core.jobset import MAX_ATTEMPT, is_last_attempt
from hooks.core.reads import count_pods
from hooks.core.vocab import Outcome, Reason
from hooks.core.work import FAILED, FAILED_CONDITION, Context, Work


def out_of_attempts(ctx: Context, work: Work) -> bool:
    """The one check of the attempt limit, before a step that starts attempt+1 (a resume, a restart,
    a requeue after an eviction): when ``work.attempt`` is already ``MAX_ATTEMPT``, the Job ends
    Failed (``attempt_limit``) and True is returned, so the caller starts nothing."""
    if not is_last_attempt(work.attempt):
        return False
    attempt_limit(ctx, work)
    return True


def attempt_limit(ctx: Context, work: Work) -> None:
    """The next step would need attempt ``MAX_ATTEMPT + 1``: the Job ends Failed, with condition
    ``Failed`` reason ``AttemptLimitReached`` (terminal: nothing is created again)."""
    work.phase = FAILED
    work.kind = Outcome.TERMINAL
    work.message = ""
    work.conditions = cond.set_condition(
        work.conditions, FAILED_CONDITION, cond.TRUE, Reason.ATTEMPT_LIMIT_REACHED,
        f"attempt {work.attempt} is the last a Job can have ({MAX_ATTEMPT}): no restart or resume is left", ctx.stamp)


def final(ctx: Context, work: Work) -> None:
    """Row 4: Succeeded and Failed are final. Keep the current JobSet if observed; never create one."""
    current = ctx.jobset(work.attempt)
    work.kind = Outcome.TERMINAL
    work.message = ""
    if current is None:
        work.workload = ""
        work.children = []
    else:
        work.workload = current["metadata"]["name"]
        work.children = [keep(ctx, current, work.attempt)]
    count_pods(ctx, work)
