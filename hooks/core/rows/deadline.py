"""Row 3a and the time limits around the rows (issue 15, ``hooks.core.deadlines``).

``due``/``DEADLINE`` (a ``hooks.core.lifecycle.Teardown``): past ``spec.activeDeadlineSeconds``
(counted from ``status.startTime``) the workload is torn down behind the drain barrier and the Job
ends Failed (``DeadlineExceeded``).
``times``, after every row: records ``status.startTime`` (once, when an answer first holds a JobSet)
and ``status.completionTime`` (once, when the phase first becomes terminal) and wakes the Job when a
limit will pass. ``ttl_passed``/``delete_job``, row 12: once a terminal Job's
``ttlSecondsAfterFinished`` passed, its deletion is asked for (``hooks.core.actions.DeleteJob``; the
finalize row then drains it). Both count only from times ``hooks.core.claims`` found in agreement
with the evidence: while the status disagrees, nothing is recorded, woken or deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hooks.core import claims, deadlines
from hooks.core import conditions as cond
from hooks.core.actions import DeleteJob
from hooks.core.barrier import evidence_time
from hooks.core.jobset import KIND as JOBSET_KIND
from hooks.core.lifecycle import ConditionChange, Move, Step, Teardown
from hooks.core.vocab import Reason
from hooks.core.wording import bounded
from hooks.core.work import DEADLINE_EXCEEDED, FAILED, FAILED_CONDITION, TERMINAL, TERMINATING, Context, Work


def due(ctx: Context, work: Work) -> bool:
    """Whether row 3a applies: ``activeDeadlineSeconds`` passed (counted from ``status.startTime``),
    or an earlier answer already said so (``DeadlineExceeded=True``: raising the limit afterwards
    does not bring the workload back). Both are claims ``hooks.core.claims`` checked before this
    row is reached (row 3 holds on one that disagrees)."""
    marked = cond.get_condition(work.conditions, DEADLINE_EXCEEDED)
    if marked is not None and marked.status == cond.TRUE:
        return True
    return deadlines.passed(deadlines.deadline_at(ctx.observed.spec, work.start_time), ctx.now)


def exceeded(ctx: Context, work: Work, passed: bool) -> tuple[ConditionChange, ...]:
    """``DeadlineExceeded`` True (kept as it is once set: its words say when the deadline passed,
    counted from ``work.start_time``) and, once the teardown ``passed`` its barrier, ``Failed``
    (reason ``DeadlineExceeded``) in the same words. Reads ``work.conditions``; returns the changes."""
    marked = cond.get_condition(work.conditions, DEADLINE_EXCEEDED)
    changes: tuple[ConditionChange, ...] = ()
    if marked is None or marked.status != cond.TRUE:
        at = deadlines.deadline_at(ctx.observed.spec, work.start_time)
        said = (f"spec.activeDeadlineSeconds passed at {deadlines.stamp(at)} (counted from status.startTime "
                f"{work.start_time})" if at is not None else "spec.activeDeadlineSeconds passed")
        changes = (ConditionChange(DEADLINE_EXCEEDED, cond.TRUE, Reason.ACTIVE_DEADLINE_SECONDS, said),)
    else:
        said = marked.message
    if not passed:
        return changes
    return (*changes, ConditionChange(FAILED_CONDITION, cond.TRUE, Reason.DEADLINE_EXCEEDED,
                                      bounded(str(said or "spec.activeDeadlineSeconds passed"))))


def _framing(ctx: Context, work: Work) -> tuple[str, str]:
    return "deadline exceeded, tearing down: ", ""


DEADLINE = Teardown(Move.DEADLINE, holding=TERMINATING, done=FAILED,
                    quota_holding=None, quota_done=None, words=_framing, conditions=exceeded)
"""Row 3a: past the active deadline. No children; Terminating until the drain barrier passes, then
Failed (terminal) with condition ``Failed`` reason ``DeadlineExceeded`` (``exceeded``). The quota
is the rows' after it: row 13 releases a terminal Job's."""


def times(ctx: Context, work: Work, *, trusted: bool = True) -> None:
    """Records ``startTime`` (once: the first answer holding a JobSet; that JobSet's own
    ``creationTimestamp`` when it is observed with a usable one, else ``now``) and
    ``completionTime`` (once: the first terminal answer); wakes the Job when its active deadline
    will pass, or, once terminal, when ``ttlSecondsAfterFinished`` will (``ttl_passed`` and
    ``delete_job``, row 12, act on it). Does nothing while finalizing, nor unless ``trusted``: the
    status' claims agree with the evidence (``hooks.core.claims``), so no time is stamped, counted
    or acted on over a claim that disagrees."""
    if ctx.observed.finalizing or not trusted:
        return
    jobsets = [child for child in work.children if child.get("kind") == JOBSET_KIND]
    if not work.start_time and jobsets:
        name = str(jobsets[0]["metadata"]["name"])
        observed = next((js for js in ctx.observed.jobsets if js["metadata"]["name"] == name), None)
        work.start_time = deadlines.stamp(_created(ctx, observed) or ctx.stamp)
    try:
        _limits(ctx, work)
    except (ValueError, OverflowError):
        work.wake = None  # claims.disagreement has refused such a time already: nothing to count from


def ttl_due(ctx: Context, work: Work) -> datetime | None:
    """When a terminal Job's ``ttlSecondsAfterFinished`` passed (counted from ``completionTime``),
    once it has; else ``None`` (not terminal, no limit, not passed yet, or no usable time)."""
    if work.phase not in TERMINAL:
        return None
    try:
        at = deadlines.ttl_at(ctx.observed.spec, work.completion_time)
        return at if deadlines.passed(at, ctx.now) else None
    except (ValueError, OverflowError):
        return None


def ttl_passed(ctx: Context, work: Work, trusted: bool) -> bool:
    """Whether row 12 applies: the status agrees with the evidence (``trusted``), the Job is not
    being deleted already (finalizing) and a terminal Job's ``ttlSecondsAfterFinished`` passed
    (``ttl_due``)."""
    return trusted and not ctx.observed.finalizing and ttl_due(ctx, work) is not None


def delete_job(ctx: Context, work: Work) -> Step:
    """Row 12: ``ttlSecondsAfterFinished`` passed (``ttl_due``, read from ``work`` as the rows and
    the times left it): asks for the Job's deletion (``DeleteJob``, repeated every call until the
    deletion is observed: a failed write is simply asked again; the finalize row then drains it),
    says so and resyncs. Returns the ``Step``: the outcome as the rows before it decided
    (``work.kind``), the message, resync and the action; nothing but the outcome when ``ttl_due``
    says it is not due."""
    at = ttl_due(ctx, work)
    if at is None:  # ttl_passed says it is not: nothing to delete
        return Step(work.kind)
    words = f"deleting the Job: spec.ttlSecondsAfterFinished passed at {deadlines.stamp(at)}"
    return Step(work.kind, message=words, resync=True,
                actions=(DeleteJob(ctx.namespace, ctx.job, ctx.observed.uid, words),))


def _created(ctx: Context, jobset: Mapping[str, Any] | None) -> datetime | None:
    """``jobset``'s ``creationTimestamp`` when it is a time between the Job's creation and ``now``
    (``claims.CLOCK_SKEW`` allowed), else ``None``."""
    text = str(((jobset or {}).get("metadata") or {}).get("creationTimestamp") or "")
    try:
        at = claims.moment(text)
    except ValueError:
        return None
    created = claims.job_created(ctx.observed)
    if at is None or (created is not None and claims.before(at, created)):
        return None
    return None if claims.before(claims.utc(ctx.now), at) else at


def _limits(ctx: Context, work: Work) -> None:
    """The wake-up for the active deadline, ``completionTime`` and the TTL's wake-up (``times``)."""
    if work.phase not in TERMINAL:
        work.wake = deadlines.wake_in(deadlines.deadline_at(ctx.observed.spec, work.start_time), ctx.now)
        return
    if not work.completion_time:  # from the evidence, as Drained's times: the same for every answer of one parent
        work.completion_time = deadlines.stamp(evidence_time(ctx))
    work.wake = deadlines.wake_in(deadlines.ttl_at(ctx.observed.spec, work.completion_time), ctx.now)
