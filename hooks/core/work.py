"""What one decision works on: its inputs (``Context``), the status and children being decided
(``Work``, filled in by the rows), the answer (``Decision``), and the names of phases and conditions.

Pure: plain data. ``Context`` reads only the parsed request (``Observed``); its ``reader`` is the
podread Reader the rows read pods through, never called here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hooks.core import queueing
from hooks.core.actions import Action
from hooks.core.observed import Observed
from hooks.core.once import Once
from podread.attempts import workload_name

PENDING, RUNNING, RESTARTING = "Pending", "Running", "Restarting"
SUSPENDING, SUSPENDED = "Suspending", "Suspended"
SUCCEEDED, FAILED, TERMINATING = "Succeeded", "Failed", "Terminating"
TERMINAL = frozenset({SUCCEEDED, FAILED})
KINDS = frozenset({"created", "kept", "held", "proceeded", "terminal", "invalid-spec"})
QUEUED = "Queued"
PHASES = frozenset({PENDING, RUNNING, RESTARTING, SUSPENDING, SUSPENDED, SUCCEEDED, FAILED, TERMINATING, QUEUED})
ADMITTED = "Admitted"
DRAINED = "Drained"
INVALID_SPEC = "InvalidSpec"
STATUS_MISMATCH = "StatusMismatch"
FAILED_CONDITION = "Failed"
DEADLINE_EXCEEDED = "DeadlineExceeded"
DRAIN_STUCK = "DrainStuck"


@dataclass(frozen=True)
class Decision:
    """The answer to one hook request.

    ``response`` is the whole 200 body; ``kind`` summarizes what was decided (one of ``KINDS``);
    ``phase_before``/``phase_after`` are the prior and new phase; ``message`` the status message;
    ``actions`` the writes it asks for besides the answer (``hooks.core.actions``); ``stuck_pods`` how
    many pods the barrier found stuck on dead nodes.
    """

    response: dict[str, Any]
    kind: str
    phase_before: str
    phase_after: str
    message: str
    actions: tuple[Action, ...] = ()
    stuck_pods: int = 0


@dataclass
class Work:
    """The status and children being decided, filled in by the rows."""

    phase: str
    attempt: int
    restarts: int
    workload: str
    active_pods: int
    conditions: list[dict[str, Any]]
    message: str = ""
    children: list[dict[str, Any]] = field(default_factory=list)
    resync: bool = False
    finalized: bool = False
    kind: str = "kept"
    restarts_by_cause: dict[str, int] = field(default_factory=dict)
    last_failure: dict[str, Any] = field(default_factory=dict)
    start_time: str = ""
    completion_time: str = ""
    replicated_jobs_digest: str = ""
    """``status.replicatedJobsDigest``: the workload the Job was created with (``hooks.core.specpin``)."""
    wake: float | None = None
    actions: list[Action] = field(default_factory=list)
    stuck_pods: int = 0
    quota: str = "create"
    """Queue-managed Jobs: what becomes of the Workload child. ``create`` keeps the observed one or
    emits a new one; ``keep`` keeps the observed one only; ``release`` leaves it out (after a passing
    barrier only)."""
    attempts: list[dict[str, Any]] = field(default_factory=list)
    """``status.attempts``: the history of the last attempts (``hooks.core.history``)."""
    attempts_dropped: int = 0
    """``status.attemptsDropped``: how many older entries the history no longer keeps."""


@dataclass(frozen=True)
class Context:
    """The inputs every row reads, and ``once``: what this call has read or built already
    (``hooks.core.once``; the barrier's live reads, the JobSet and the Workload)."""

    observed: Observed
    reader: Any
    now: datetime
    once: Once = field(default_factory=Once, compare=False, repr=False)

    @property
    def job(self) -> str:
        return self.observed.name

    @property
    def namespace(self) -> str:
        return self.observed.namespace

    def job_object(self) -> dict[str, Any]:
        """The Job as ``build_jobset`` reads it."""
        return {"metadata": {"name": self.job, "namespace": self.namespace}, "spec": self.observed.spec}

    @property
    def queue(self) -> str:
        """The LocalQueue of a queue-managed Job, ``""`` for any other Job."""
        return queueing.queue_name(self.observed)

    @property
    def admission(self) -> queueing.Admission:
        """What Kueue says of the Job's Workload (``none`` when there is none)."""
        return queueing.admission(queueing.current_workload(self.observed))

    def jobset(self, attempt: int) -> Mapping[str, Any] | None:
        """The observed JobSet of ``attempt``, or ``None``."""
        wanted = workload_name(self.job, attempt)
        for jobset in self.observed.jobsets:
            if jobset["metadata"]["name"] == wanted:
                return jobset
        return None
