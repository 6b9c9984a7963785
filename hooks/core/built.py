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

from hooks.core import checkpoint, exclusion, queueing
from hooks.core.jobset import build_jobset
from hooks.core.work import Context


def jobset(ctx: Context, attempt: int) -> dict[str, Any]:
    """The JobSet of ``attempt`` as the spec builds it; raises ``InvalidSpec`` as ``build_jobset`` does.
    It mounts the checkpoint control file (``hooks.core.checkpoint.mount``) when its observed JobSet
    does, or, not observed yet, when ``spec.checkpoint`` is set and the CompositeController lists
    ConfigMap children (``Observed.configmaps_enabled``): an attempt keeps the shape it was created with.
    The same holds for the nodes it keeps out (``hooks.core.exclusion``): an observed JobSet's own
    (``exclusion.excluded_by``), else those the prior status' attempts exclude at ``now``
    (``exclusion.current``)."""
    return ctx.once.get(("jobset", attempt), lambda: _built(ctx, attempt))


def _built(ctx: Context, attempt: int) -> dict[str, Any]:
    built = build_jobset(ctx.job_object(), attempt)
    observed = ctx.jobset(attempt)
    wanted = checkpoint.mounted(observed) if observed is not None else (
        ctx.observed.spec.checkpoint is not None and ctx.observed.configmaps_enabled)
    built = checkpoint.mount(built) if wanted else built
    excluded = exclusion.excluded_by(observed) if observed is not None else exclusion.nodes(
        exclusion.current(ctx.observed.spec, ctx.observed.status, ctx.now))
    return exclusion.exclude(built, excluded)


def workload(ctx: Context, attempt: int) -> dict[str, Any]:
    """The Workload of a queue-managed Job, from ``jobset(ctx, attempt)``; raises ``InvalidSpec``
    (the JobSet's, or ``TooManyPodSets``) or ``queueing.PriorityUnknown``."""
    return ctx.once.get(("workload", attempt), lambda: queueing.build_workload(ctx.observed, jobset(ctx, attempt)))
