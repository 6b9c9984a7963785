"""The answer's body, assembled from the rows' ``Work``: the status, the children, the resync.

Pure. The status is written from the work's declared status fields (``hooks.core.status.as_json``:
the fields always present, the optional ones only when set); ``resyncAfterSeconds``
the sooner of "waiting" and a limit's wake-up; ``finalized`` only for the finalize hook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hooks.core.observed import Observed
from hooks.core.status import as_json
from hooks.core.wording import bounded
from hooks.core.work import Decision, Work

if TYPE_CHECKING:
    from hooks.core.lifecycle import Transition


def assemble(observed: Observed, work: Work, resync_seconds: float,
             transitions: tuple[Transition, ...] = ()) -> Decision:
    """Assembles the response body from ``work`` (read, not written): the status with its message
    cut once (``hooks.core.wording.bounded``), the children, the resync and, while finalizing,
    ``finalized``. Returns the ``Decision``, carrying ``transitions`` (the arrows the decision
    took, ``hooks.core.lifecycle.path``, which ``decide`` names from the same work)."""
    status = as_json(work)
    status["message"] = bounded(work.message)  # always written (not ``OPTIONAL``): no copy of the work to cut it
    response: dict[str, Any] = {"status": status, "children": work.children}
    wakes = [seconds for seconds in (resync_seconds if work.resync else None, work.wake) if seconds is not None]
    if wakes:
        response["resyncAfterSeconds"] = min(wakes)
    if observed.finalizing:
        response["finalized"] = work.finalized
    return Decision(response=response, kind=str(work.kind), phase_before=observed.status.phase,
                    phase_after=status["phase"], message=status["message"], actions=tuple(work.actions),
                    stuck_pods=work.stuck_pods, transition=work.transition,
                    transitions=transitions)
