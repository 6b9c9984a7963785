"""The JobSet and the Workload one call answers, each built once per call.

Pure. ``jobset(ctx, attempt)`` is ``hooks.core.jobset.build_jobset`` of the Job for ``attempt``;
``workload(ctx, attempt)`` is ``hooks.core.queueing.build_workload`` from that JobSet. The rows that
check the spec or keep a JobSet (``rows.current``, ``hooks.core.children``) and the Workload child
(``rows.kueue``) all take them from here, through the call's ``Context.once``: each is built at most
once per call, and a spec that cannot be built raises the same ``InvalidSpec`` (or
``PriorityUnknown``) to every row that asks. The objects are shared: read them, never modify them
(``hooks.core.jobset.json_copy`` first).

Across calls, the JobSet ``build_jobset`` makes is remembered (``_desired``): a Job's spec rarely
changes, and every sync of a running Job builds the same one (issue 32 item 4). The memo is pure and
bounded (``MEMO_SIZE`` entries, least recently used first out, thread-safe). Its key is all that
``build_jobset`` reads: the JSON of the Job's name and namespace, the attempt, and the four spec fields
it reads (``replicatedJobs``, ``launcher``, ``maxRestarts``, ``managedBy``), remembered by its digest
(``hooks.core.digestmemo``: the key's JSON is not kept); on a miss the JobSet is built from that JSON
itself, so a hit can only answer what those inputs build. It keeps the JobSet as JSON bytes and
every call gets a fresh copy (``orjson.loads``), which the call may change (``checkpoint.mount``,
``exclusion.exclude`` do) without touching the next one. A spec that
cannot be built raises ``InvalidSpec`` on every call (an error is not kept); a spec orjson cannot
encode (never one from a request) is built without the memo.
"""

from __future__ import annotations

from typing import Any

import orjson

from hooks.core import checkpoint, digestmemo, exclusion, queueing
from hooks.core.jobset import build_jobset
from hooks.core.request import Spec
from hooks.core.work import Context

MEMO_SIZE = 1024
"""How many built JobSets a process keeps (``_desired``): the last 1,024 (Job, attempt, spec) it built,
each as JSON with its key's digest (about ``replicatedJobs``' JSON: 0.5-5 KB, so up to about 5 MB;
keyed by the JSON itself twice that, 6.6 MiB at 1,000 Jobs). Every
worker answers every Job, so this is the number of Jobs whose syncs hit it; beyond it, resyncs in
turn miss and cost about 3 µs more than no memo."""


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
    built = _desired(ctx, attempt)
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


def _desired(ctx: Context, attempt: int) -> dict[str, Any]:
    """``build_jobset`` of the call's Job for ``attempt``: a fresh dict, from the memo (the module
    doc) when the same inputs were built before. Raises ``InvalidSpec`` as ``build_jobset`` does."""
    spec = ctx.observed.spec
    try:
        inputs = orjson.dumps((ctx.job, ctx.namespace, attempt, spec.replicated_jobs, spec.launcher,
                               spec.max_restarts, spec.managed_by))
    except orjson.JSONEncodeError:  # not JSON (a Job built by hand): built as is, not remembered
        return build_jobset(ctx.job_object(), attempt)
    return orjson.loads(_built_json(inputs))


@digestmemo.by_digest(MEMO_SIZE)
def _built_json(inputs: bytes) -> bytes:
    """The JobSet ``build_jobset`` builds from exactly ``inputs`` (the JSON of the Job's name and
    namespace, the attempt and the spec fields it reads, in ``_desired``'s order), as JSON bytes;
    remembered by their digest."""
    name, namespace, attempt, replicated_jobs, launcher, max_restarts, managed_by = orjson.loads(inputs)
    spec = Spec(replicated_jobs=replicated_jobs, launcher=launcher, max_restarts=max_restarts, managed_by=managed_by)
    return orjson.dumps(build_jobset({"metadata": {"name": name, "namespace": namespace}, "spec": spec}, attempt))
