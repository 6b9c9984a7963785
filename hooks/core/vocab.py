"""The words the hooks write, named once: phases, why an attempt ended and the keys its history
entry has, what a decision did, condition types, statuses and reasons.

Each is a ``StrEnum``: a member is the string it stands for (``Phase.PENDING == "Pending"``), so it
goes into the answer, a log line or a metric label as that string, and a status written by anyone
else (any string) still compares with it. Pure: no imports beyond ``enum``.
"""

from __future__ import annotations

from enum import StrEnum
from types import SimpleNamespace
from typing import Any


class Phase(StrEnum):
    """``status.phase``: where the Job is (design §4)."""

    PENDING = "Pending"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TERMINATING = "Terminating"
    QUEUED = "Queued"


TERMINAL = frozenset({Phase.SUCCEEDED, Phase.FAILED})
"""The final phases: once there, the Job stays."""


class EndCause(StrEnum):
    """How an attempt ended, one word each: ``status.attempts[].outcome`` (``hooks.core.history``),
    the kind of end a charge is for (``hooks.core.budget.Charge``: a failure that restarts, or an
    eviction), and how a teardown ends the attempt (``hooks.core.lifecycle.Teardown.ends``). A
    failure's outcome is ``FAILED``, or ``PREEMPTED`` when its class is ``FailureClass.PREEMPTED``
    (``hooks.core.failureclass.outcome``): the class, not the outcome, says which budget it spends."""

    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    PREEMPTED = "Preempted"
    EVICTED = "Evicted"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    SUSPENDED = "Suspended"
    DELETED = "Deleted"


FAILURES = frozenset({EndCause.FAILED, EndCause.PREEMPTED})
"""The ends that are failures: judged by the failure policy, and a restart after one is one of
``status.restartsByCause`` (``hooks.core.budget``)."""
TORN_DOWN = frozenset({EndCause.SUSPENDED, EndCause.DELETED, EndCause.EVICTED, EndCause.DEADLINE_EXCEEDED})
"""The ends of a teardown (``hooks.core.lifecycle.ENDS``): the history records how long the drain
barrier waited after one (a failure that restarts the Job too: its ``cause``)."""


class FailureClass(StrEnum):
    """Why an attempt's end happened, as the evidence tells it (issue 34): the one vocabulary of
    ``status.attempts[].class``, ``status.restartsByClass``' keys, ``spec.failurePolicy.budgets``'
    keys, a failure-policy rule's ``class`` and the metric label. Named by one classifier
    (``hooks.core.failureclass.classify``); each class but ``DEADLINE`` spends its own budget
    (``hooks.core.budget``)."""

    USER = "user"
    PREEMPTED = "preempted"
    NODE = "node"
    INFRASTRUCTURE = "infrastructure"
    DEADLINE = "deadline"
    UNKNOWN = "unknown"


BUDGETED = (FailureClass.USER, FailureClass.PREEMPTED, FailureClass.NODE, FailureClass.INFRASTRUCTURE,
            FailureClass.UNKNOWN)
"""The classes with a restart budget (``spec.failurePolicy.budgets``' keys, ``status.restartsByClass``'
keys): every class but ``DEADLINE`` (a deadline ends the Job)."""


class AttemptField(StrEnum):
    """The keys of a ``status.attempts`` entry, in the order written (``hooks.core.history`` writes
    them; ``hooks.core.historyentry`` reads a prior history by them and bounds them)."""

    ATTEMPT = "attempt"
    JOB_SET = "jobSet"
    CREATED = "created"
    STARTED = "started"
    ENDED = "ended"
    OUTCOME = "outcome"
    FAILED_REPLICATED_JOB = "failedReplicatedJob"
    FAILED_POD = "failedPod"
    NODE = "node"
    EXIT_CODE = "exitCode"
    REASON = "reason"
    CAUSE = "cause"
    CLASS = "class"
    """The failure class of the attempt's end (issue 34; written by the classifier, read by
    ``hooks.core.exclusion`` and the plugin)."""
    CLASS_EVIDENCE = "classEvidence"
    FAILED_NODES = "failedNodes"
    """The nodes the class blames (sorted, at most 8): set for the ``node`` and ``infrastructure`` classes."""
    DRAIN_SECONDS = "drainSeconds"
    DRAIN_STUCK = "drainStuck"
    FAILED_POD_DELETION_STARTED = "failedPodDeletionStarted"
    FAILED_POD_GRACE_PERIOD_ENDS = "failedPodGracePeriodEnds"
    CHECKPOINT_REQUESTED = "checkpointRequested"
    CHECKPOINT_STEP = "checkpointStep"
    CHECKPOINT_ACKNOWLEDGED = "checkpointAcknowledged"
    CHECKPOINT_EXPIRED = "checkpointExpired"


class Outcome(StrEnum):
    """What one decision did (``Decision.kind``): the ``outcome`` of the per-call log line and metric."""

    CREATED = "created"
    KEPT = "kept"
    HELD = "held"
    PROCEEDED = "proceeded"
    TERMINAL = "terminal"
    INVALID_SPEC = "invalid-spec"


class Quota(StrEnum):
    """What becomes of a queue-managed Job's Workload child (``Work.quota``), as the rows decide it:
    ``CREATE`` keeps the observed one or emits a new one; ``KEEP`` keeps the observed one only;
    ``RELEASE`` leaves it out, and with it the quota (after a passing barrier, or row 13). Never
    written into the answer: the Workload child is."""

    CREATE = "create"
    KEEP = "keep"
    RELEASE = "release"


class ConditionType(StrEnum):
    """The ``type`` of each status condition the hooks write."""

    ADMITTED = "Admitted"
    CHECKPOINTED = "Checkpointed"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    DRAINED = "Drained"
    DRAIN_STUCK = "DrainStuck"
    FAILED = "Failed"
    FORCE_DELETE_ALLOWED = "ForceDeleteAllowed"
    GANG_SCHEDULED = "GangScheduled"
    INVALID_SPEC = "InvalidSpec"
    STATUS_MISMATCH = "StatusMismatch"


class ConditionStatus(StrEnum):
    """A condition's ``status``, as Kubernetes spells it."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Reason(StrEnum):
    """The ``reason`` of a condition the hooks write, one word each (``InvalidSpec``'s reasons are the
    codes of ``hooks.core.spec``; ``Admitted``'s False reasons while waiting are Kueue's words,
    ``hooks.core.queueing``)."""

    # Drained (hooks.core.barrier): the first thing the barrier waits for, or that it passed
    WORKLOAD_PRESENT = "WorkloadPresent"
    PODS_ACTIVE = "PodsActive"
    LAUNCHER_ACTIVE = "LauncherActive"
    BATCH_JOBS_PRESENT = "BatchJobsPresent"
    READ_FAILED = "ReadFailed"
    NO_ACTIVE_PODS = "NoActivePods"
    # DrainStuck and ForceDeleteAllowed (hooks.core.stuckwait)
    NOT_STUCK = "NotStuck"
    PODS_ON_LOST_NODES = "PodsOnLostNodes"
    FORBIDDEN = "Forbidden"
    ALLOWED = "Allowed"
    # Failed and DeadlineExceeded
    ACTIVE_DEADLINE_SECONDS = "ActiveDeadlineSeconds"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    ATTEMPT_LIMIT_REACHED = "AttemptLimitReached"
    FAILURE_POLICY = "FailurePolicy"
    MAX_RESTARTS_REACHED = "MaxRestartsReached"    # the user (or unknown) class's budget: spec.maxRestarts
    BUDGET_EXHAUSTED = "BudgetExhausted"             # the preempted, node or infrastructure class's budget
    # InvalidSpec turned False
    VALID = "Valid"
    # Admitted (hooks.core.rows.kueue)
    ADMITTED = "Admitted"
    QUOTA_RELEASED = "QuotaReleased"
    SUBMITTED = "Submitted"
    PRIORITY_CLASS_NOT_FOUND = "PriorityClassNotFound"
    # StatusMismatch (hooks.core.evidence, hooks.core.claims, hooks.core.rows.mismatch)
    AGREES = "Agrees"
    SEVERAL_WORKLOADS = "SeveralWorkloads"
    WORKLOAD_NOT_CURRENT = "WorkloadNotCurrent"
    PHASE_DISAGREES = "PhaseDisagrees"
    RESTARTS_DISAGREE = "RestartsDisagree"
    START_TIME_DISAGREES = "StartTimeDisagrees"
    DEADLINE_EXCEEDED_DISAGREES = "DeadlineExceededDisagrees"
    COMPLETION_TIME_DISAGREES = "CompletionTimeDisagrees"
    RESTARTS_BY_CAUSE_DISAGREE = "RestartsByCauseDisagree"
    RESTARTS_BY_CLASS_DISAGREE = "RestartsByClassDisagree"
    ATTEMPTS_DISAGREE = "AttemptsDisagree"
    EXCLUDED_NODES_DISAGREE = "ExcludedNodesDisagree"
    UNKNOWN_ATTEMPT = "UnknownAttempt"
    REPLICATED_JOBS_CHANGED = "ReplicatedJobsChanged"
    # GangScheduled (hooks.core.gang): where the current attempt's gang stands. True: SCHEDULED (or
    # the scheduler's own reason); False while it is not placed: the scheduler's reason, or one of these
    SCHEDULED = "Scheduled"
    WAITING_FOR_SCHEDULER = "WaitingForScheduler"         # the PodGroup reports nothing yet
    GANG_UNAVAILABLE = "GangUnavailable"                   # no PodGroup API listed: whenUnavailable Wait
    STARTED_WITHOUT_GANG = "StartedWithoutGang"            # no PodGroup API listed: StartWithoutGang
    PLACEMENT_NOT_REPORTED = "PlacementNotReported"        # pods bound, the PodGroup says nothing
    NOT_REQUESTED = "NotRequested"                         # an attempt without a gang after one with one
    WAITING_FOR_POD_GROUP = "WaitingForPodGroup"           # a new JobSet waits for its PodGroup
    GANG_MISMATCH = "GangMismatch"                         # the PodGroup is not the gang the hooks build
    # Checkpointed (hooks.core.checkpoint, issue 33): where the request of a teardown stands (and
    # NOT_REQUESTED: spec.checkpoint is set, but this teardown asks nothing, or nothing runs to save)
    CHECKPOINT_REQUESTED = "Requested"
    CHECKPOINT_ACKNOWLEDGED = "Acknowledged"
    CHECKPOINT_GRACE_EXPIRED = "GraceExpired"
    CHECKPOINT_CANCELLED = "Cancelled"
    CHECKPOINT_WORKLOAD_ENDED = "WorkloadEnded"


class GangPolicy(StrEnum):
    """``spec.gang.policy`` (and the cluster's default, ``NVCRE_GANG_POLICY``): whether an attempt
    runs as one gang (``hooks.core.gang``)."""

    GANG = "Gang"
    NONE = "None"


class WhenUnavailable(StrEnum):
    """``spec.gang.whenUnavailable``: what a Job that asks for a gang does where no PodGroup API is
    listed (``hooks.core.gang``): ``WAIT`` creates nothing, ``START_WITHOUT_GANG`` runs without one."""

    WAIT = "Wait"
    START_WITHOUT_GANG = "StartWithoutGang"


def members(enum: type[StrEnum]) -> Any:
    """The members of ``enum`` as the attributes of a plain object: ``members(AttemptField).ATTEMPT``
    is ``AttemptField.ATTEMPT``, the member itself. Python 3.11's ``EnumType`` defines ``__getattr__``,
    which sends every read of a member off its class through a Python-level attribute hook (0.1-0.25 µs
    each); the modules that read them on every ``/sync`` (the history's entries: ``AttemptField`` about
    twenty times a call) read them from this object instead (issue 32 item 4)."""
    return SimpleNamespace(**enum.__members__)
