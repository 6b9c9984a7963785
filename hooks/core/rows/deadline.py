"""Row 3a and the time limits around the rows (issue 15, ``hooks.core.deadlines``).

``due``/``tear_down``: past ``spec.activeDeadlineSeconds`` (counted from ``status.startTime``) the
workload is torn down behind the drain barrier and the Job ends Failed (``DeadlineExceeded``).
``times``, after every row: records ``status.startTime`` (once, when an answer first holds a JobSet)
and ``status.completionTime`` (once, when the phase first becomes terminal), wakes the Job when a
limit will pass, and asks, once a terminal Job's ``ttlSecondsAfterFinished`` passed, for its
deletion (``hooks.core.actions.DeleteJob``; the finalize row then drains it).
"""

from __future__ import annotations

from hooks.core import conditions as cond
from hooks.core import deadlines
from hooks.core.actions import DeleteJob
from hooks.core.barrier import barrier
from hooks.core.jobset import KIND as JOBSET_KIND
from hooks.core.wording import bounded
from hooks.core.work import DEADLINE_EXCEEDED, FAILED, FAILED_CONDITION, TERMINAL, TERMINATING, Context, Work


def due(ctx: Context, work: Work) -> bool:
    """Whether row 3a applies: ``activeDeadlineSeconds`` passed (counted from ``status.startTime``),
    or an earlier answer already said so (``DeadlineExceeded=True``: raising the limit afterwards
    does not bring the workload back)."""
    marked = cond.get_condition(work.conditions, DEADLINE_EXCEEDED)
    if marked is not None and marked.get("status") == cond.TRUE:
        return True
    return deadlines.passed(deadlines.deadline_at(ctx.observed.spec, work.start_time), ctx.now)


def tear_down(ctx: Context, work: Work) -> None:
    """Row 3a: past the active deadline. No children; Terminating until the drain barrier passes,
    then Failed with condition ``Failed`` reason ``DeadlineExceeded`` (terminal)."""
    work.workload = ""
    if cond.get_condition(work.conditions, DEADLINE_EXCEEDED) is None or \
            cond.get_condition(work.conditions, DEADLINE_EXCEEDED).get("status") != cond.TRUE:
        at = deadlines.deadline_at(ctx.observed.spec, work.start_time)
        said = (f"spec.activeDeadlineSeconds passed at {deadlines.stamp(at)} (counted from status.startTime "
                f"{work.start_time})" if at is not None else "spec.activeDeadlineSeconds passed")
        work.conditions = cond.set_condition(work.conditions, DEADLINE_EXCEEDED, cond.TRUE, "ActiveDeadlineSeconds",
                                             said, ctx.now)
    if not barrier(ctx, work):
        work.phase = TERMINATING
        work.kind = "held"
        work.message = bounded(f"deadline exceeded, tearing down: {work.message}")
        return
    work.phase = FAILED
    work.kind = "terminal"
    work.conditions = cond.set_condition(work.conditions, FAILED_CONDITION, cond.TRUE, "DeadlineExceeded",
                                         str(cond.get_condition(work.conditions, DEADLINE_EXCEEDED)["message"]),
                                         ctx.now)


def times(ctx: Context, work: Work) -> None:
    """Records ``startTime`` (once: the first answer holding a JobSet; that JobSet's own
    ``creationTimestamp`` when it is observed with one, else ``now``) and ``completionTime``
    (once: the first terminal answer); wakes the Job when its active deadline will pass; asks,
    once a terminal Job's ``ttlSecondsAfterFinished`` passed, for its deletion (``DeleteJob``,
    repeated every call until the deletion is observed: a failed write is simply asked again)."""
    if ctx.observed.finalizing:
        return
    jobsets = [child for child in work.children if child.get("kind") == JOBSET_KIND]
    if not work.start_time and jobsets:
        name = str(jobsets[0]["metadata"]["name"])
        observed = next((js for js in ctx.observed.jobsets if js["metadata"]["name"] == name), None)
        created = str(((observed or {}).get("metadata") or {}).get("creationTimestamp") or "")
        try:
            work.start_time = deadlines.stamp(deadlines.parse_time(created) or ctx.now)
        except ValueError:
            work.start_time = deadlines.stamp(ctx.now)
    if work.phase not in TERMINAL:
        work.wake = deadlines.wake_in(deadlines.deadline_at(ctx.observed.spec, work.start_time), ctx.now)
        return
    if not work.completion_time:
        work.completion_time = deadlines.stamp(ctx.now)
    at = deadlines.ttl_at(ctx.observed.spec, work.completion_time)
    if not deadlines.passed(at, ctx.now):
        work.wake = deadlines.wake_in(at, ctx.now)
        return
    assert at is not None
    work.message = f"deleting the Job: spec.ttlSecondsAfterFinished passed at {deadlines.stamp(at)}"
    work.resync = True
    work.actions.append(DeleteJob(ctx.namespace, ctx.job, ctx.observed.uid, work.message))
