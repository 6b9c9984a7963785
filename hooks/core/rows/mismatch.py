"""Row 3: the status is a claim, not a fact; when it disagrees with the evidence, hold.

The disagreements: from ``hooks.core.evidence.status_mismatch``, two or more healthy JobSets
(``SeveralWorkloads``: a stray next to the current one is not adopted); one healthy JobSet that is
not the status' attempt (``WorkloadNotCurrent``); ``Suspended``/``Suspending``/``Restarting`` while
the current JobSet is there and not failed (``PhaseDisagrees``); ``restarts`` that no sequence of
steps gives (``RestartsDisagree``). From ``adopt``: a JobSet of an attempt past the status' that is
not the step after a drained attempt (``UnknownAttempt``). From ``hooks.core.claims``: a
``startTime``, ``DeadlineExceeded``, terminal phase, ``completionTime`` or ``restartsByCause`` that
the API server's evidence does not bear out (the reason names the field). ``hold`` keeps every
JobSet as observed and moves nothing until the disagreement goes; then ``StatusMismatch`` turns
False (``hooks.core.decide``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hooks.core import claims
from hooks.core import conditions as cond
from hooks.core.barrier import drain_reads, job_names
from hooks.core.children import as_observed
from hooks.core.evidence import list_names, newer_jobsets, status_mismatch, unadoptable
from hooks.core.lifecycle import ConditionChange, JobSetFate, Step
from hooks.core.reads import counted
from hooks.core.vocab import Outcome, Quota, Reason
from hooks.core.wording import bounded, list_pods, pod_name
from hooks.core.work import PENDING, PHASES, STATUS_MISMATCH, Context, Work
from podread.attempts import attempt_number, workload_name
from podread.constants import ATTEMPT_LABEL, JOBSET_NAME_LABEL
from podread.errors import PodReadError
from podread.selector import pod_key

UNKNOWN_ATTEMPT = Reason.UNKNOWN_ATTEMPT


def adopt(ctx: Context) -> tuple[int, tuple[str, str] | None]:
    """The current attempt, and why not when a newer JobSet cannot be adopted.

    A JobSet ``<job>-<N+1>`` (N = ``status.attempt``; ``hooks.core.evidence.newer_jobsets``) is
    adopted only as the step after a passed barrier whose status write was lost: the children allow
    it (``hooks.core.evidence.unadoptable``) and the barrier's live reads (``drain_reads``) find
    no active pod other than those of ``<job>-<N+1>`` itself (every identity a pod carries,
    ``jobset-name`` and attempt label, names it) and no batch Job of an earlier attempt (JobSet's
    ``jobset-name`` label; the barrier that let ``<job>-<N+1>`` be created found none). Returns
    ``(N+1, None)`` then; ``(N, None)`` when no
    newer JobSet is observed; otherwise ``(N, ("UnknownAttempt", message))``, a failed read included
    (it never adopts). Metacontroller creates children before it writes the status: a lost write
    leaves exactly that JobSet."""
    prior = ctx.observed.status.attempt
    newer = newer_jobsets(ctx.observed)
    if not newer:
        return prior, None
    refused = unadoptable(ctx.observed, newer)
    if refused is not None:
        return prior, (UNKNOWN_ATTEMPT, refused)
    attempt = prior + 1
    name = workload_name(ctx.job, attempt)
    said = f"JobSet {name} names attempt {attempt}, but status.attempt is {prior}"
    try:
        found, jobs = drain_reads(ctx, attempt)
    except PodReadError as error:
        return prior, (UNKNOWN_ATTEMPT, f"{said}: it is adopted only once no pod of an earlier attempt is "
                                        f"active, and a pod read failed: {error.cause}")
    earlier = sorted({pod_key(pod): pod for pod in found if not of_workload(pod, name, attempt)}.values(),
                     key=pod_name)
    if earlier:
        return prior, (UNKNOWN_ATTEMPT, f"{said}, and pods not of {name} are active (the barrier before attempt "
                                        f"{attempt} did not pass): {list_pods(earlier)}")
    left = job_names([job for job in jobs
                      if ((job.get("metadata") or {}).get("labels") or {}).get(JOBSET_NAME_LABEL) != name])
    if left:
        return prior, (UNKNOWN_ATTEMPT, f"{said}, and batch Jobs of an earlier attempt are left (the barrier before "
                                        f"attempt {attempt} did not pass): {list_names(left)}")
    return attempt, None


def disagreement(ctx: Context, attempt: int, phase: str, refused: tuple[str, str] | None) -> tuple[str, str] | None:
    """The first disagreement between the status and the evidence, or ``None``: several healthy
    JobSets at once (``SeveralWorkloads``, which says the most), then a newer JobSet ``adopt``
    ``refused``, then the rest of ``hooks.core.evidence.status_mismatch`` (``attempt`` and
    ``phase`` after adoption), then the claims of ``hooks.core.claims``."""
    found = status_mismatch(ctx.observed, attempt, phase)
    if found is not None and found[0] == "SeveralWorkloads":
        return found
    return refused or found or claims.disagreement(ctx.observed, attempt, phase, ctx.stamp)


def of_workload(pod: Mapping[str, Any], name: str, attempt: int) -> bool:
    """Whether ``pod`` carries JobSet ``name``'s identity and no other: its ``jobset-name`` label
    and attempt label, each where present, name it, and at least one is present."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    workload, number = labels.get(JOBSET_NAME_LABEL), labels.get(ATTEMPT_LABEL)
    if workload is None and number is None:
        return False
    same_number = number is None or attempt_number(str(number)) == attempt
    return (workload is None or workload == name) and same_number


def hold(ctx: Context, work: Work, reason: str, message: str) -> Step:
    """Row 3: the status disagrees with the evidence. Keeps every observed JobSet not being deleted
    exactly as observed, creates nothing, keeps the status' claims (phase, attempt, workload; the
    restarts, never counted here; the times, untouched by ``rows.deadline.times``) so that nothing
    moves, keeps a queue-managed Job's Workload as it is, and says why in ``StatusMismatch`` and the
    message. ``activePods`` comes from the cached read (``hooks.core.reads.counted``; a failed read
    keeps it)."""
    prior = ctx.observed.status
    count = counted(ctx)
    return Step(Outcome.HELD, phase=prior.phase if prior.phase in PHASES else PENDING, attempt=prior.attempt,
                workload=prior.workload, quota=Quota.KEEP, jobset=JobSetFate.KEEP,
                children=tuple(as_observed(js) for js in ctx.observed.jobsets
                               if not js["metadata"].get("deletionTimestamp")),
                resync=True, conditions=(ConditionChange(STATUS_MISMATCH, cond.TRUE, reason, bounded(message)),),
                active_pods=None if isinstance(count, PodReadError) else count,
                message=bounded(f"holding, the status disagrees with what is observed: {message}"))
