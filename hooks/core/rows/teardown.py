"""Rows 1 and 2: the Job is being deleted, or suspended. No children; the barrier, then on.

Finalizing: ``Terminating`` until the drain barrier passes, then ``finalized``. ``spec.suspend``
(not terminal): ``Suspending`` until it passes, then ``Suspended``. A queue-managed Job's Workload
(its quota) is kept while the barrier holds and released once it passes.
"""

from __future__ import annotations

from hooks.core.barrier import barrier
from hooks.core.work import SUSPENDED, SUSPENDING, TERMINATING, Context, Work


def finalize(ctx: Context, work: Work) -> None:
    """Row 1: no children; Terminating; finalized once the barrier passes."""
    work.phase = TERMINATING
    work.workload = ""
    work.finalized = barrier(ctx, work)
    work.kind = "proceeded" if work.finalized else "held"
    work.quota = "release" if work.finalized else "keep"


def suspend(ctx: Context, work: Work) -> None:
    """Row 2: no children; Suspending until the barrier passes, then Suspended."""
    work.workload = ""
    passed = barrier(ctx, work)
    work.phase = SUSPENDED if passed else SUSPENDING
    work.kind = "proceeded" if passed else "held"
    work.quota = "release" if passed else "keep"
