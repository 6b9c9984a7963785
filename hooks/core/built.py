"""The JobSet and the Workload one call answers, each built once per call.

Pure. ``jobset(ctx, attempt)`` is ``hooks.core.jobset.build_jobset`` of the Job for ``attempt``;
``workload(ctx, attempt)`` is ``hooks.core.queueing.build_workload`` from that JobSet. The rows that
check the spec or keep a JobSet (``rows.current``, ``hooks.core.children``) and the Workload child
(``rows.kueue``) all take them from here, through the call's ``Context.once``: each is built at most
once per call, and a spec that cannot be built raises the same ``InvalidSpec`` (or
``PriorityUnknown``) to every row that asks. The objects are shared: read them, never modify them
(``hooks.core.jobset.json_copy`` first).
"""

from __future__ import annotations

from typing import Any

from hooks.core import queueing
from hooks.core.jobset import build_jobset
from hooks.core.work import Context


def jobset(ctx: Context, attempt: int) -> dict[str, Any]:
    """The JobSet of ``attempt`` as the spec builds it; raises ``InvalidSpec`` as ``build_jobset`` does."""
    return ctx.once.get(("jobset", attempt), lambda: build_jobset(ctx.job_object(), attempt))


def workload(ctx: Context, attempt: int) -> dict[str, Any]:
    """The Workload of a queue-managed Job, from ``jobset(ctx, attempt)``; raises ``InvalidSpec``
    (the JobSet's, or ``TooManyPodSets``) or ``queueing.PriorityUnknown``."""
    return ctx.once.get(("workload", attempt), lambda: queueing.build_workload(ctx.observed, jobset(ctx, attempt)))
