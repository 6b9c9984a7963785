"""The pod reads a row makes outside the drain barrier, and how any failed read holds.

``counted`` is ``activePods`` from ``Reader.counted_job_pods`` (``counting``: into a row's step): the
cache, confirmed by the API server whenever its count differs from the status's, so the status
settles whichever hooks process answers;
every failed read outside the barrier leads to a hold (resync) whose words (``failed_words``, the
barrier's too) depend only on the error's class; ``activePods`` keeps its previous value. The
barrier's own failed reads are ``hooks.core.barrier.Drain`` (``Drained`` Unknown, ``ReadFailed``). Pods are read only
through the Reader in ``Context`` (podread, ADR-102).
"""

from __future__ import annotations

from msgspec.structs import replace

from hooks.core.lifecycle import Step
from hooks.core.work import Context
from podread.errors import PodReadError
from podread.selector import Pod


def failed_words(error: PodReadError) -> str:
    """What a status says of a failed read: ``waiting for a pod read to succeed: <cause>``.

    The words are the error's class only (``error.cause``: "the API server did not answer in
    time"), never its full text, which names timeouts and server messages that change from call to
    call: the same failure, read again, writes the same status, so a slow API server is not also
    handed a hot loop of status writes. The full text is in the log and the read metrics.
    """
    what = "a batch Job read" if error.method == "attempt_jobs" else "a pod read"
    return f"waiting for {what} to succeed: {error.cause}"


JOB_PODS = ("job_pods",)
"""The ``ctx.once`` key of this call's ``counted_job_pods`` read, a ``podread.selector.Counted``
(``hooks.core.history`` dates an attempt's start from the same answer: ``job_pods``)."""


def counted(ctx: Context) -> int | PodReadError:
    """How many of the Job's pods are active, or the read's error. Read once per call (``JOB_PODS``)
    by ``Reader.counted_job_pods`` with the count the parent's status reports: the cached pods when
    they agree with it, else the API server's. A count that changes the status is thus never one
    cache's view against another's (each hooks process has its own, listed at its own time; the
    rule and why are the Reader method's), and the status it gives, fed back, is a fixed point."""
    reported = ctx.observed.status.active_pods
    try:
        return ctx.once.get(JOB_PODS, lambda: ctx.reader.counted_job_pods(ctx.namespace, ctx.job, reported)).active
    except PodReadError as error:
        return error


def job_pods(ctx: Context) -> list[Pod]:
    """The pods ``counted`` read in this call (``JOB_PODS``), or none when it read none or its read
    failed: for a reader of what the count already read (``hooks.core.history`` dates a start)."""
    read = ctx.once.peek(JOB_PODS)
    return read.pods if read is not None else []


def counting(ctx: Context, step: Step) -> Step:
    """``step`` with ``activePods`` from ``counted``; on a failed read, the count kept, the read's
    words as the message (``failed_words``) and resync instead."""
    count = counted(ctx)
    if isinstance(count, PodReadError):
        return replace(step, message=failed_words(count), resync=True)
    return replace(step, active_pods=count)
