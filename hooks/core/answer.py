"""The answer's body, assembled from the rows' ``Work``: the status, the children, the resync.

Pure. The status fields always present, the optional ones (``restartsByCause``, ``lastFailure``,
``startTime``, ``completionTime``, ``replicatedJobsDigest``, ``attempts``, ``attemptsDropped``) only
when set; ``resyncAfterSeconds``
the sooner of "waiting" and a limit's wake-up; ``finalized`` only for the finalize hook.
"""

from __future__ import annotations

from typing import Any

from hooks.core.observed import Observed
from hooks.core.wording import bounded
from hooks.core.work import Decision, Work


def assemble(observed: Observed, work: Work, resync_seconds: float) -> Decision:
    """Assembles the response body from ``work``."""
    status = {
        "phase": work.phase,
        "attempt": work.attempt,
        "restarts": work.restarts,
        "workload": work.workload,
        "activePods": work.active_pods,
        "conditions": work.conditions,
        "message": bounded(work.message),
    }
    for key, value in (("restartsByCause", work.restarts_by_cause), ("lastFailure", work.last_failure),
                       ("startTime", work.start_time), ("completionTime", work.completion_time),
                       ("replicatedJobsDigest", work.replicated_jobs_digest), ("attempts", work.attempts),
                       ("attemptsDropped", work.attempts_dropped)):
        if value:
            status[key] = dict(sorted(value.items())) if isinstance(value, dict) else value
    response: dict[str, Any] = {"status": status, "children": work.children}
    wakes = [seconds for seconds in (resync_seconds if work.resync else None, work.wake) if seconds is not None]
    if wakes:
        response["resyncAfterSeconds"] = min(wakes)
    if observed.finalizing:
        response["finalized"] = work.finalized
    return Decision(response=response, kind=work.kind, phase_before=observed.status.phase,
                    phase_after=work.phase, message=status["message"], actions=tuple(work.actions),
                    stuck_pods=work.stuck_pods)
