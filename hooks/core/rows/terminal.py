"""Row 4 and the attempt limit: the phases nothing leaves.

``final``: Succeeded and Failed are final; the current JobSet is kept if observed, never created.
A terminal phase is a claim: over a running JobSet, or (with ``ttlSecondsAfterFinished``) without
the evidence ``hooks.core.claims.terminal_evidence`` asks for, row 3 holds before this row is reached.
``limit_reached``, the one check of the limit (``past_the_limit`` folds it into a teardown's
step), and ``attempt_limit``: a step that would need an attempt past ``MAX_ATTEMPT`` ends the Job
Failed
(``AttemptLimitReached``): names are validated for that attempt, so no Job is ever parked on a name
it cannot have.
"""

from __future__ import annotations

from msgspec.structs import replace

from hooks.core import conditions as cond
from hooks.core.children import keep
from hooks.core.jobset import MAX_ATTEMPT, is_last_attempt
from hooks.core.lifecycle import ConditionChange, JobSetFate, Move, Step
from hooks.core.reads import counting
from hooks.core.vocab import Outcome, Reason
from hooks.core.work import FAILED, FAILED_CONDITION, Context, Work


def limit_reached(work: Work) -> Step | None:
    """The step past the last attempt (``attempt_limit``) when ``work.attempt`` is ``MAX_ATTEMPT``,
    else ``None``."""
    return attempt_limit(work.attempt) if is_last_attempt(work.attempt) else None


def past_the_limit(work: Work, step: Step) -> Step | None:
    """``step`` ending the Job instead (``attempt_limit``'s phase, outcome, message, condition and
    transition over it) when ``work.attempt`` is ``MAX_ATTEMPT``, else ``None``."""
    limit = limit_reached(work)
    if limit is None:
        return None
    return replace(step, outcome=limit.outcome, phase=limit.phase, message=limit.message,
                   conditions=step.conditions + limit.conditions, transition=limit.transition)


def attempt_limit(attempt: int) -> Step:
    """The next step would need attempt ``MAX_ATTEMPT + 1``: the Job ends Failed, with condition
    ``Failed`` reason ``AttemptLimitReached`` (terminal: nothing is created again)."""
    return Step(Outcome.TERMINAL, phase=FAILED, message="", transition=Move.ATTEMPT_LIMIT, conditions=(
        ConditionChange(FAILED_CONDITION, cond.TRUE, Reason.ATTEMPT_LIMIT_REACHED,
                        f"attempt {attempt} is the last a Job can have ({MAX_ATTEMPT}): no restart or resume is "
                        "left"),))


def final(ctx: Context, work: Work) -> Step:
    """Row 4: Succeeded and Failed are final. Keep the current JobSet if observed; never create one.
    The phase stays; ``activePods`` from the cached read (``hooks.core.reads.counting``: a failed read
    says so and resyncs, the count kept)."""
    current = ctx.jobset(work.attempt)
    return counting(ctx, Step(Outcome.TERMINAL, message="", jobset=None if current is None else JobSetFate.KEEP,
                              children=() if current is None else (keep(ctx, current, work.attempt),),
                              workload="" if current is None else current["metadata"]["name"]))
