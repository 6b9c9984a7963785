"""What one decision works on: its inputs (``Context``), the status and children being decided
(``Work``, filled in by the rows), the answer (``Decision``), and short names for the vocabulary.

Pure: plain data. ``Context`` reads only the parsed request (``Observed``); its ``reader`` (a
``hooks.core.podreads.PodReads``: podread's Reader in production) is what the rows read pods through,
never called here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgspec

from hooks.core import queueing
from hooks.core.actions import Action
from hooks.core.observed import Observed
from hooks.core.once import Once, per_call
from hooks.core.podreads import PodReads
from hooks.core.stamps import evidence_time
from hooks.core.status import Status, StatusFields
from hooks.core.vocab import TERMINAL as TERMINAL  # re-exported: the rows import it from here
from hooks.core.vocab import ConditionType, Outcome, Phase, Quota
from podread.attempts import workload_name

if TYPE_CHECKING:
    from hooks.core.lifecycle import Transition

# Short names the rows use for the members of hooks.core.vocab.
PENDING, RUNNING, RESTARTING = Phase.PENDING, Phase.RUNNING, Phase.RESTARTING
SUSPENDING, SUSPENDED = Phase.SUSPENDING, Phase.SUSPENDED
SUCCEEDED, FAILED, TERMINATING, QUEUED = Phase.SUCCEEDED, Phase.FAILED, Phase.TERMINATING, Phase.QUEUED
KINDS = frozenset(Outcome)
PHASES = frozenset(Phase)
ADMITTED = ConditionType.ADMITTED
DRAINED = ConditionType.DRAINED
INVALID_SPEC = ConditionType.INVALID_SPEC
STATUS_MISMATCH = ConditionType.STATUS_MISMATCH
FAILED_CONDITION = ConditionType.FAILED
DEADLINE_EXCEEDED = ConditionType.DEADLINE_EXCEEDED
DRAIN_STUCK = ConditionType.DRAIN_STUCK


class Decision(msgspec.Struct, frozen=True):
    """The answer to one hook request (a frozen msgspec Struct: one is built on every call).

    ``response`` is the whole 200 body; ``kind`` summarizes what was decided (one of ``KINDS``);
    ``phase_before``/``phase_after`` are the prior and new phase; ``message`` the status message;
    ``actions`` the writes it asks for besides the answer (``hooks.core.actions``); ``stuck_pods`` how
    many pods the barrier found stuck on dead nodes; ``transition`` the move the row made
    (``hooks.core.lifecycle.Move``, an arrow's ``by`` in ``hooks.core.lifecycle.ARROWS``; ``""`` when
    the row does not say yet); ``transitions`` the arrows of the table the decision took, named
    (``hooks.core.lifecycle.path``: empty for a fixed point), which ``hooks.core.events`` renders.
    """

    response: dict[str, Any]
    kind: str
    phase_before: str
    phase_after: str
    message: str
    actions: tuple[Action, ...] = ()
    stuck_pods: int = 0
    transition: str = ""
    transitions: tuple[Transition, ...] = ()


class Work(StatusFields, kw_only=True):
    """The status and children being decided, filled in by the rows: the status fields as declared
    (``hooks.core.status.StatusFields``, the prior status' values to begin with: ``Work.of``) and what
    the answer carries besides the status."""

    children: list[dict[str, Any]] = []
    resync: bool = False
    finalized: bool = False
    kind: Outcome = Outcome.KEPT
    wake: float | None = None
    actions: list[Action] = []
    stuck_pods: int = 0
    quota: Quota = Quota.CREATE
    """Queue-managed Jobs: what becomes of the Workload child (``hooks.core.vocab.Quota``)."""
    transition: str = ""
    """The move the row's ``Step`` made (``hooks.core.lifecycle.Move``; ``""``: none)."""

    def __post_init__(self) -> None:
        """Nothing to check: a ``Work`` begins from a ``Status`` already read (``of``) and the rows set
        its fields; the status it answers is checked as a ``Status`` (``status``)."""

    @classmethod
    def of(cls, prior: Status, **changed: Any) -> Work:
        """The work of a decision that begins from ``prior``, with the fields ``changed``."""
        fields = msgspec.structs.asdict(prior)
        fields.update(changed)
        return cls(**fields)

    def status(self) -> Status:
        """The status decided: these status fields, frozen."""
        return msgspec.convert(self, Status, from_attributes=True)


@dataclass(frozen=True)
class Context:
    """The inputs every row reads, and ``once``: what this call has read or built already
    (``hooks.core.once``; the barrier's live reads, the JobSet and the Workload)."""

    observed: Observed
    reader: PodReads
    now: datetime
    once: Once = field(default_factory=Once, compare=False, repr=False)

    @property
    def job(self) -> str:
        return self.observed.name

    @per_call
    def stamp(self) -> datetime:
        """The time every transition this answer makes is stamped with (``hooks.core.stamps``):
        the world's newest evidence in the request, not ``now``, so that every answer to one
        observed state, and to versions that differ only by the hooks' own status writes, writes
        the same times."""
        return evidence_time(self.observed, self.now)

    @property
    def namespace(self) -> str:
        return self.observed.namespace

    def job_object(self) -> dict[str, Any]:
        """The Job as ``build_jobset`` reads it."""
        return {"metadata": {"name": self.job, "namespace": self.namespace}, "spec": self.observed.spec}

    @per_call
    def queue(self) -> str:
        """The LocalQueue of a queue-managed Job, ``""`` for any other Job (read once a call: the rows
        and the passes ask it about five times, and it reads only ``observed``)."""
        return queueing.queue_name(self.observed)

    @property
    def admission(self) -> queueing.Admission:
        """What Kueue says of the Job's Workload (``none`` when there is none)."""
        return queueing.admission(queueing.current_workload(self.observed))

    def jobset(self, attempt: int) -> Mapping[str, Any] | None:
        """The observed JobSet of ``attempt`` (named ``workload_name(job, attempt)``), or ``None``."""
        return self._jobsets_by_name.get(workload_name(self.job, attempt))

    @per_call
    def _jobsets_by_name(self) -> dict[str, Mapping[str, Any]]:
        """The observed JobSets by name, the first of a name kept (as a scan in order finds it): built
        once a call, which asks ``jobset`` about four times (issue 32 item 4)."""
        named: dict[str, Mapping[str, Any]] = {}
        for jobset in self.observed.jobsets:
            named.setdefault(jobset["metadata"]["name"], jobset)
        return named
