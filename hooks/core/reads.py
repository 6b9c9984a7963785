"""The pod reads a row makes outside the drain barrier, and how any failed read holds.

``count_pods`` sets ``activePods`` from the cached ``Reader.job_pods``; ``read_failed`` is what every
failed read leads to: a hold whose words depend only on the error's class. Pods are read only
through the Reader in ``Context`` (podread, ADR-102).
"""

from __future__ import annotations

from hooks.core import conditions as cond
from hooks.core.work import DRAINED, Context, Work
from podread.errors import PodReadError
from podread.selector import is_active


def read_failed(ctx: Context, work: Work, error: PodReadError, *, in_barrier: bool) -> None:
    """Holds on a failed read: resync soon, say so in the message and, in a barrier, set
    ``Drained`` Unknown with reason ``ReadFailed``. ``activePods`` keeps its previous value.

    The words are the error's class only (``error.cause``: "the API server did not answer in
    time"), never its full text, which names timeouts and server messages that change from call to
    call: the same failure, read again, writes the same status, so a slow API server is not also
    handed a hot loop of status writes. The full text is in the log and the read metrics.
    """
    what = "a batch Job read" if error.method == "attempt_jobs" else "a pod read"
    work.message = f"waiting for {what} to succeed: {error.cause}"
    work.resync = True
    if in_barrier:
        work.conditions = cond.set_condition(work.conditions, DRAINED, cond.UNKNOWN, "ReadFailed", error.cause,
                                             ctx.now)


def count_pods(ctx: Context, work: Work) -> bool:
    """Sets ``activePods`` from the cached ``job_pods`` read. On a failed read keeps the previous
    value, sets the message and resync, and returns False.
    """
    try:
        pods = ctx.reader.job_pods(ctx.namespace, ctx.job)
    except PodReadError as error:
        read_failed(ctx, work, error, in_barrier=False)
        return False
    work.active_pods = sum(1 for pod in pods if is_active(pod))
    return True
