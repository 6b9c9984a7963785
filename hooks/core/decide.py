"""The decision table (design §5): observed state and pod reads in, desired children and status out.

Pure: the only I/O is the Reader passed in. Rows, first match decides:

1. finalizing                     -> no children; Terminating; finalized only after the drain barrier
2. spec.suspend (not terminal)    -> no children; Suspending, then Suspended after the barrier
2a. evicted by Kueue (queue-managed, -> no JobSet; Suspending until the barrier passes, then Queued
    not terminal; hooks.core.queueing)    with attempt+1 (not a restart); the Workload kept until then
3. status disagrees with children -> hold: keep every observed JobSet not being deleted, create
                                     nothing, advance nothing; StatusMismatch=True says why
3a. activeDeadlineSeconds passed  -> no children; Terminating (DeadlineExceeded=True), then after the
    (not terminal; hooks.core.deadlines)  barrier Failed, condition Failed reason DeadlineExceeded
4. phase Succeeded/Failed         -> terminal forever: keep the current JobSet if observed, never create
5. phase Suspended/Suspending     -> barrier, then attempt+1 (a resume, not a restart), Pending
6. phase Restarting               -> barrier, then attempt+1, Pending
7. spec cannot be built           -> InvalidSpec; keep the current JobSet if observed, create nothing
8. current JobSet Failed, restarts left    -> Restarting, restarts+1 (the JobSet is kept in this
                                     answer), then as row 6
8a. current JobSet Failed, a failure-policy rule (hooks.core.failurepolicy) says FailJob -> keep it; Failed
    (condition Failed reason FailurePolicy); RestartJobIgnoreMaxRestarts -> as row 8 without
    restarts+1, even with none left. Every restart counts in restartsByCause[cause]
9. current JobSet Failed, none left        -> keep it; Failed
10. current JobSet Completed               -> keep it; Succeeded
11. otherwise                     -> the current attempt's JobSet; Running if a cached pod is active.
                                     One not observed yet is created only once the barrier passes.

Queue-managed Jobs (label ``kueue.x-k8s.io/queue-name``; ``hooks.core.queueing``, docs/adr/0103) also own
one Workload child, and Kueue decides when their JobSet may run:

- no JobSet is created unless the Workload is admitted: until then the phase is ``Queued`` and
  condition ``Admitted`` is False with Kueue's reason and message;
- evicted by Kueue (``Evicted=True``, or not admitted while a JobSet runs), after rows 1-2: the JobSet
  is left out, ``Suspending`` until the drain barrier passes, then the attempt moves on by one (not
  a restart) and the Job is ``Queued``; a fresh Workload is emitted on the next call;
- the Workload is in every answer except after a passing barrier of a finalize, suspend or eviction,
  and once a terminal Job's pods are all gone (live reads): only then is the quota released.

A step that would need an attempt past ``MAX_ATTEMPT`` (rows 5, 6, 8) ends the Job Failed instead,
with condition ``Failed`` reason ``AttemptLimitReached``: names are validated for that attempt, so no
Job is ever parked on a name it cannot have.

Status is a claim, not a fact (row 3). An observed JobSet that is not being deleted and not
finished is a healthy workload; it is left out only when the spec says so (deletion, suspend) or
when it failed (rows 6, 8): never because ``status.attempt``, ``phase`` or ``restarts`` says
otherwise. Row 3 catches: two or more healthy JobSets (``SeveralWorkloads``: a stray next to the
current one is not adopted); one healthy JobSet that is not the status' attempt (``WorkloadNotCurrent``;
a newer one is adopted instead: Metacontroller creates children before it writes the status);
``Suspended``/``Suspending``/``Restarting`` while the current JobSet is there and not failed
(``PhaseDisagrees``); ``restarts`` that no sequence of steps gives (``RestartsDisagree``). It holds
until the disagreement goes (a person corrects the status or removes a JobSet, or the workload
finishes), then ``StatusMismatch`` turns False.

The drain barrier reads, live, every pod that may belong to the Job by any identity it carries:
JOB_LABEL (``active_job_pods``, cache then live), LAUNCHER_LABEL of every attempt
(``active_launcher_pods``), and JobSet's own ``jobset-name`` label for ``<job>-0`` up to one past
the highest attempt in the status, the children and those pods (``active_attempt_pods``). All reads
of one call share one deadline (``hooks.server.handler``); a failed or late read holds, with a status whose
words depend only on the error's class.

Issue 15 adds, around the rows: ``status.startTime`` (recorded once, when an answer first holds a
JobSet) and ``status.completionTime`` (once, when the phase first becomes terminal), from which
``hooks.core.deadlines`` counts; a terminal Job past ``ttlSecondsAfterFinished`` asks for its own
deletion (``hooks.core.actions.DeleteJob``; the finalize row then drains it); a barrier that waits on
pods of dead nodes says so (``DrainStuck``, ``hooks.core.stuck``) and may ask for a force delete
(``ForceDeletePod``). ``resyncAfterSeconds`` also wakes the Job when a limit passes.

Terminal comes after suspend only for Jobs that are not terminal, so suspending a finished Job never
moves it out of its final phase. Only rows 1, 2, 5 (while draining), 6 (while holding) and the
failed JobSet of row 8 on the next call leave the current JobSet out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hooks.core import conditions as cond
from hooks.core import deadlines, failurepolicy, queueing, stuck
from hooks.core.actions import Action, DeleteJob, ForceDeletePod
from hooks.core.evidence import (
    ATTEMPT_VALUE,
    attempt_in_name,
    current_attempt,
    healthy,
    jobset_state,
    list_names,
    status_mismatch,
)
from hooks.core.jobset import API_VERSION as JOBSET_API_VERSION
from hooks.core.jobset import KIND as JOBSET_KIND
from hooks.core.jobset import MAX_ATTEMPT, InvalidSpec, build_jobset, json_copy, workload_name
from hooks.core.observed import Observed
from hooks.core.spec import check_spec
from podread import (
    ATTEMPT_LABEL,
    JOB_LABEL,
    JOBSET_NAME_LABEL,
    LAUNCHER_LABEL,
    REPLICATED_JOB_LABEL,
    is_active,
    pod_key,
)
from podread.errors import PodReadError

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
_LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"
MAX_MESSAGE = 1024
"""The longest ``status.message`` (and condition message) written, whatever the input."""


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
class _Work:
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
    wake: float | None = None
    actions: list[Action] = field(default_factory=list)
    stuck_pods: int = 0
    quota: str = "create"
    """Queue-managed Jobs: what becomes of the Workload child. ``create`` keeps the observed one or
    emits a new one; ``keep`` keeps the observed one only; ``release`` leaves it out (after a passing
    barrier only)."""


@dataclass(frozen=True)
class _Context:
    """The inputs every row reads."""

    observed: Observed
    reader: Any
    now: datetime

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


def decide(observed: Observed, reader: Any, now: datetime, *, resync_seconds: float = 5.0) -> Decision:
    """Decides the desired children and the whole status for ``observed``.

    Reads pods only through ``reader`` (the podread Reader methods ``job_pods``,
    ``active_job_pods``, ``active_launcher_pods``, ``active_attempt_pods``, ``workload_pods``);
    ``now`` stamps condition transitions. Returns the ``Decision`` whose ``response`` is the 200
    body: ``status``, ``children`` (always a list), ``resyncAfterSeconds`` (``resync_seconds``) only
    while waiting, ``finalized`` only when finalizing. A failed read never lets a teardown proceed;
    a status that disagrees with the children never drops a healthy JobSet.
    """
    prior = observed.status
    ctx = _Context(observed, reader, now)
    attempt = current_attempt(observed)
    phase = prior.phase
    if attempt > prior.attempt and phase in (RESTARTING, SUSPENDING, SUSPENDED):
        phase = PENDING  # the step that creates a newer attempt already happened; its status write was lost
    work = _Work(phase=phase, attempt=attempt, restarts=prior.restarts, workload=prior.workload,
                 active_pods=prior.active_pods, conditions=cond.sort_conditions(prior.conditions),
                 restarts_by_cause=dict(prior.restarts_by_cause), last_failure=dict(prior.last_failure),
                 start_time=prior.start_time, completion_time=prior.completion_time)
    mismatch = None if observed.finalizing else status_mismatch(observed, attempt, phase)
    if observed.finalizing:
        _finalize(ctx, work)
    elif observed.spec.get("suspend") is True and phase not in TERMINAL:
        _suspend(ctx, work)
    elif ctx.queue and phase not in TERMINAL and _evicted_by_kueue(ctx, work):
        _evicted(ctx, work)  # Kueue's word, not a status claim: before the mismatch hold
    elif mismatch is not None:
        _hold_mismatch(ctx, work, *mismatch)
    elif phase not in TERMINAL and _deadline_due(ctx, work):  # row 3a (issue 15)
        _deadline(ctx, work)
    elif phase in TERMINAL:
        _terminal(ctx, work)
    elif phase in (SUSPENDED, SUSPENDING):
        _resume(ctx, work)
    elif phase == RESTARTING:
        _restart(ctx, work)
    else:
        _steady(ctx, work)
    if mismatch is None and cond.get_condition(work.conditions, STATUS_MISMATCH) is not None:
        work.conditions = cond.set_condition(work.conditions, STATUS_MISMATCH, cond.FALSE, "Agrees", "", now)
    _times(ctx, work)  # before the Workload joins the children: it stamps the JobSet's start
    if ctx.queue:
        _workload_child(ctx, work, hold=mismatch is not None)
    return _decision(observed, work, resync_seconds)


# ---- queue-managed Jobs (issue 14, docs/adr/0103) --------------------------------------------------

def _evicted_by_kueue(ctx: _Context, work: _Work) -> bool:
    """Whether Kueue took the admission back: the Workload is ``Evicted``, or a healthy JobSet of
    the Job runs while the Workload is not admitted (gone, or un-admitted without an eviction)."""
    state = ctx.admission.state
    if state == queueing.EVICTED:
        return True
    running = any(healthy(js) for js in ctx.observed.jobsets)
    return running and state != queueing.ADMITTED and ctx.observed.workloads_enabled


def _evicted(ctx: _Context, work: _Work) -> None:
    """Evicted by Kueue (preempted, deactivated, its queue stopped, ...). No JobSet; the Workload is
    kept (the quota stays held) until the drain barrier passes, then left out, the attempt moves on
    by one (unless the Job was already ``Queued``: nothing ran since) and the Job is ``Queued``.
    Not a failure: ``restarts`` is unchanged."""
    admission = ctx.admission
    work.workload = ""
    work.quota = "keep"
    words = f"evicted by Kueue ({admission.reason})" + (f": {admission.message}" if admission.message else "")
    work.conditions = cond.set_condition(work.conditions, ADMITTED, cond.FALSE, admission.reason,
                                         _bounded(f"LocalQueue {ctx.queue}: {words}"), ctx.now)
    if not _barrier(ctx, work, next_attempt=work.phase != QUEUED):
        work.phase = SUSPENDING
        work.kind = "held"
        work.message = _bounded(f"{words}; {work.message} before releasing the quota")
        return
    if work.phase != QUEUED:
        if work.attempt >= MAX_ATTEMPT:
            _attempt_limit(ctx, work)
            work.quota = "release"
            return
        work.attempt += 1
    work.phase = QUEUED
    work.kind = "proceeded"
    work.quota = "release"
    work.message = _bounded(f"{words}; no pod is left, the quota is released and the Job queues again in "
                            f"LocalQueue {ctx.queue}")


def _queued(ctx: _Context, work: _Work, admission: queueing.Admission) -> None:
    """The current attempt's JobSet would be created, but Kueue has not admitted the Workload:
    nothing is created, the Job is ``Queued`` and ``Admitted`` says why (Kueue's reason)."""
    work.kind = "held"
    work.children = []
    work.phase = QUEUED
    reason, message = admission.reason, admission.message or "waiting for Kueue to admit the Workload"
    if admission.state == queueing.NONE:
        reason = "Submitted"
        message = f"Workload {queueing.workload_name(ctx.job)} submitted, waiting for Kueue to admit it"
    work.conditions = cond.set_condition(work.conditions, ADMITTED, cond.FALSE, reason,
                                         _bounded(f"LocalQueue {ctx.queue}: {message}"), ctx.now)
    work.message = _bounded(f"queued in LocalQueue {ctx.queue}: {message}")


def _admitted(ctx: _Context, work: _Work, admission: queueing.Admission) -> None:
    """Sets ``Admitted`` True, naming the ClusterQueue."""
    by = f" by ClusterQueue {admission.cluster_queue}" if admission.cluster_queue else ""
    work.conditions = cond.set_condition(work.conditions, ADMITTED, cond.TRUE, "Admitted",
                                         f"LocalQueue {ctx.queue}: admitted{by}", ctx.now)


def _workload_child(ctx: _Context, work: _Work, *, hold: bool) -> None:
    """Adds the Workload child as ``work.quota`` says. A terminal Job's Workload is released only
    once no pod of the Job is active (live reads); a failed read keeps it. A new Workload is
    emitted only when nothing holds (``hold``: the status disagrees) and the spec can be built; a
    WorkloadPriorityClass that is not known yet leaves the Job ``Queued`` without one."""
    observed = queueing.current_workload(ctx.observed)
    if work.phase in TERMINAL and observed is not None and work.quota == "create":
        work.quota = "release" if _no_active_pods(ctx, work) else "keep"
    if work.quota == "release":
        if work.phase in TERMINAL or work.phase == SUSPENDED:
            work.conditions = cond.set_condition(work.conditions, ADMITTED, cond.FALSE, "QuotaReleased",
                                                 "no pod is left: the Workload and its quota are released", ctx.now)
        return
    if observed is not None:
        work.children.append(queueing.as_observed(observed))
        return
    if work.quota != "create" or hold or work.phase in TERMINAL or work.kind == "invalid-spec":
        return
    try:
        jobset = build_jobset(ctx.job_object(), work.attempt)
        work.children.append(queueing.build_workload(ctx.observed, jobset))
    except InvalidSpec:
        return  # reported by the row that built the JobSet
    except queueing.PriorityUnknown as unknown:
        if work.phase == QUEUED:
            work.conditions = cond.set_condition(work.conditions, ADMITTED, cond.FALSE, "PriorityClassNotFound",
                                                 _bounded(unknown.message), ctx.now)
            work.message = _bounded(f"queued in LocalQueue {ctx.queue}: {unknown.message}")
            work.resync = True


def _no_active_pods(ctx: _Context, work: _Work) -> bool:
    """Whether no pod of the Job is active by any identity (the barrier's three reads, live), for a
    terminal Job that keeps its JobSet. A failed read, or an active pod, keeps the quota: the
    message says so and resync is set."""
    try:
        found = list(ctx.reader.active_job_pods(ctx.namespace, ctx.job))
        found += ctx.reader.active_launcher_pods(ctx.namespace, ctx.job)
        found += ctx.reader.active_attempt_pods(ctx.namespace, ctx.job, _last_attempt(ctx, work.attempt, found) + 1)
    except PodReadError as error:
        work.message = f"keeping the quota until a pod read succeeds: {error.cause}"
        work.resync = True
        return False
    if found:
        unique = sorted({pod_key(pod): pod for pod in found}.values(), key=_pod_name)
        work.message = _bounded(f"keeping the quota while {len(unique)} pods are active: {_list_pods(unique)}")
        work.resync = True
        return False
    return True


def _hold_mismatch(ctx: _Context, work: _Work, reason: str, message: str) -> None:
    """Row 3: the status disagrees with the children. Keeps every observed JobSet not being deleted
    exactly as observed, creates nothing, keeps the status' claims (phase, attempt, restarts,
    workload) so that nothing moves, and says why in ``StatusMismatch`` and the message.
    ``activePods`` comes from the cached read."""
    prior = ctx.observed.status
    work.kind = "held"
    work.phase = prior.phase if prior.phase in PHASES else PENDING
    work.attempt = prior.attempt
    work.restarts = prior.restarts
    work.workload = prior.workload
    work.children = [_as_observed(js) for js in ctx.observed.jobsets if not js["metadata"].get("deletionTimestamp")]
    work.resync = True
    work.conditions = cond.set_condition(work.conditions, STATUS_MISMATCH, cond.TRUE, reason, _bounded(message),
                                         ctx.now)
    _count_pods(ctx, work)
    work.message = _bounded(f"holding, the status disagrees with what is observed: {message}")


def _decision(observed: Observed, work: _Work, resync_seconds: float) -> Decision:
    """Assembles the response body from ``work``."""
    status = {
        "phase": work.phase,
        "attempt": work.attempt,
        "restarts": work.restarts,
        "workload": work.workload,
        "activePods": work.active_pods,
        "conditions": work.conditions,
        "message": _bounded(work.message),
    }
    for key, value in (("restartsByCause", work.restarts_by_cause), ("lastFailure", work.last_failure),
                       ("startTime", work.start_time), ("completionTime", work.completion_time)):
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


# ---- teardown rows -------------------------------------------------------------------------------

def _finalize(ctx: _Context, work: _Work) -> None:
    """Row 1: no children; Terminating; finalized once the barrier passes."""
    work.phase = TERMINATING
    work.workload = ""
    work.finalized = _barrier(ctx, work)
    work.kind = "proceeded" if work.finalized else "held"
    work.quota = "release" if work.finalized else "keep"


def _suspend(ctx: _Context, work: _Work) -> None:
    """Row 3: no children; Suspending until the barrier passes, then Suspended."""
    work.workload = ""
    passed = _barrier(ctx, work)
    work.phase = SUSPENDED if passed else SUSPENDING
    work.kind = "proceeded" if passed else "held"
    work.quota = "release" if passed else "keep"


def _resume(ctx: _Context, work: _Work) -> None:
    """Row 4: unsuspended. Once the barrier passes (checked again even when already Suspended), the
    next attempt starts: attempt+1, restarts unchanged. While holding, the phase stays as it was.
    """
    _next_attempt(ctx, work, kind="created")


def _restart(ctx: _Context, work: _Work) -> None:
    """Row 5: Restarting. Holds until the barrier passes, then starts attempt+1 as Pending."""
    work.phase = RESTARTING
    _next_attempt(ctx, work, kind="proceeded")


def _next_attempt(ctx: _Context, work: _Work, *, kind: str) -> None:
    """The drain barrier, then attempt+1 as Pending with its JobSet; ``kind`` names that step.

    While the barrier holds nothing is emitted and the phase stays as the caller set it.
    """
    work.workload = ""
    if work.attempt >= MAX_ATTEMPT:
        _attempt_limit(ctx, work)
        return
    if not _barrier(ctx, work, next_attempt=True):
        work.kind = "held"
        work.quota = "keep"  # queue-managed: no new Workload while the last attempt drains
        return
    work.attempt += 1
    work.phase = PENDING
    _steady(ctx, work, drained=True)
    if work.kind != "invalid-spec":
        work.kind = kind


def _attempt_limit(ctx: _Context, work: _Work) -> None:
    """The next step would need attempt ``MAX_ATTEMPT + 1``: the Job ends Failed, with condition
    ``Failed`` reason ``AttemptLimitReached`` (terminal: nothing is created again)."""
    work.phase = FAILED
    work.kind = "terminal"
    work.message = ""
    work.conditions = cond.set_condition(
        work.conditions, FAILED_CONDITION, cond.TRUE, "AttemptLimitReached",
        f"attempt {work.attempt} is the last a Job can have ({MAX_ATTEMPT}): no restart or resume is left", ctx.now)


def _barrier(ctx: _Context, work: _Work, *, gate: bool = False, next_attempt: bool = False) -> bool:
    """The drain barrier. Returns True only when no JobSet of the Job is observed and no pod that
    may belong to the Job is active, by any identity it carries, all confirmed live:
    ``active_job_pods`` (JOB_LABEL), ``active_launcher_pods`` (LAUNCHER_LABEL, every attempt, with
    or without ``spec.launcher``) and ``active_attempt_pods`` (JobSet's ``jobset-name`` label, for
    ``<job>-0`` up to one past the highest attempt known: the status, ``next_attempt``'s attempt,
    the children, and those pods' attempt and ``jobset-name`` labels).
    Sets the ``Drained`` condition, ``message``, ``activePods`` (the active pods that are not
    launchers) and, while waiting, resync. A failed read holds: ``Drained`` Unknown, ``ReadFailed``,
    previous ``activePods`` kept, wording fixed by the error's class.
    With ``gate`` (the check before creating the current attempt's JobSet when it is not observed)
    a pass adds no ``Drained`` condition where there was none, so a new Job's status stays minimal.
    """
    try:
        found = list(ctx.reader.active_job_pods(ctx.namespace, ctx.job))
        found += ctx.reader.active_launcher_pods(ctx.namespace, ctx.job)
        last = _last_attempt(ctx, work.attempt + (1 if next_attempt else 0), found) + 1
        found += ctx.reader.active_attempt_pods(ctx.namespace, ctx.job, last)
    except PodReadError as error:
        _read_failed(ctx, work, error, in_barrier=True)
        return False
    active, launchers = _split_launchers(ctx, found)
    work.active_pods = len(active)
    jobsets = sorted(str(jobset["metadata"]["name"]) for jobset in ctx.observed.jobsets)
    waiting: list[str] = []
    reason = ""
    if jobsets:
        noun = "JobSet" if len(jobsets) == 1 else "JobSets"
        waiting.append(f"{noun} {list_names(jobsets)} to be deleted")
        reason = "WorkloadPresent"
    if active:
        noun = "active pod" if len(active) == 1 else "active pods"
        waiting.append(f"{len(active)} {noun}: {_list_pods(active)}")
        reason = reason or "PodsActive"
    if launchers:
        waiting.append(f"launcher pod {_list_pods(launchers)} to finish")
        reason = reason or "LauncherActive"
    if waiting:
        work.message = _bounded("waiting for " + " and ".join(waiting))
        work.conditions = cond.set_condition(work.conditions, DRAINED, cond.FALSE, reason, work.message, ctx.now)
        work.resync = True
        _check_stuck(ctx, work, [*active, *launchers])
        return False
    work.message = ""
    _clear_stuck(ctx, work)
    if not gate or cond.get_condition(work.conditions, DRAINED) is not None:
        work.conditions = cond.set_condition(work.conditions, DRAINED, cond.TRUE, "NoActivePods",
                                             "no active pod (confirmed with the API server)", ctx.now)
    return True


def _last_attempt(ctx: _Context, attempt: int, pods: list[Mapping[str, Any]]) -> int:
    """The highest attempt the evidence names: ``attempt``, ``status.attempt``, the observed
    JobSets named ``<job>-<n>``, and the attempt and ``jobset-name`` labels of ``pods``."""
    best = max(attempt, ctx.observed.status.attempt)
    names = [str(js["metadata"]["name"]) for js in ctx.observed.jobsets]
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        names.append(str(labels.get(JOBSET_NAME_LABEL, "")))
        number = str(labels.get(ATTEMPT_LABEL, ""))
        if ATTEMPT_VALUE.fullmatch(number):
            best = max(best, int(number))
    named = (attempt_in_name(ctx.job, name) for name in names)
    return max([best, *(n for n in named if n is not None)])


def _split_launchers(ctx: _Context, pods: list[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]],
                                                                             list[Mapping[str, Any]]]:
    """``pods`` without duplicates, sorted by name and split into (workers, launchers). A launcher
    carries LAUNCHER_LABEL=<job> and not JOB_LABEL=<job>, or lost both and is in the replicated job
    ``spec.launcher`` names."""
    launcher = ctx.observed.spec.get("launcher")
    unique = {pod_key(pod): pod for pod in reversed(pods)}
    workers, launchers = [], []
    for pod in sorted(unique.values(), key=lambda p: (_pod_name(p), pod_key(p))):
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if labels.get(JOB_LABEL) == ctx.job:
            workers.append(pod)
        elif labels.get(LAUNCHER_LABEL) == ctx.job or (launcher and labels.get(REPLICATED_JOB_LABEL) == launcher):
            launchers.append(pod)
        else:
            workers.append(pod)
    return workers, launchers


def _read_failed(ctx: _Context, work: _Work, error: PodReadError, *, in_barrier: bool) -> None:
    """Holds on a failed read: resync soon, say so in the message and, in a barrier, set
    ``Drained`` Unknown with reason ``ReadFailed``. ``activePods`` keeps its previous value.

    The words are the error's class only (``error.cause``: "the API server did not answer in
    time"), never its full text, which names timeouts and server messages that change from call to
    call: the same failure, read again, writes the same status, so a slow API server is not also
    handed a hot loop of status writes. The full text is in the log and the read metrics.
    """
    work.message = f"waiting for a pod read to succeed: {error.cause}"
    work.resync = True
    if in_barrier:
        work.conditions = cond.set_condition(work.conditions, DRAINED, cond.UNKNOWN, "ReadFailed", error.cause,
                                             ctx.now)


def _pod_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name", ""))


def _bounded(text: str) -> str:
    """``text`` cut to ``MAX_MESSAGE`` characters."""
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def _list_pods(pods: list[Mapping[str, Any]]) -> str:
    """Names up to five pods (already sorted), marking terminating ones, then "and N more"."""
    names = []
    for pod in pods:
        since = (pod.get("metadata") or {}).get("deletionTimestamp")
        names.append(f"{_pod_name(pod)} (terminating since {since})" if since else _pod_name(pod))
    return list_names(names, cut=None)


# ---- rows that keep or create the current JobSet ---------------------------------------------------

def _terminal(ctx: _Context, work: _Work) -> None:
    """Row 2: Succeeded and Failed are final. Keep the current JobSet if observed; never create one."""
    current = ctx.jobset(work.attempt)
    work.kind = "terminal"
    work.message = ""
    if current is None:
        work.workload = ""
        work.children = []
    else:
        work.workload = current["metadata"]["name"]
        work.children = [_keep(ctx, current, work.attempt)]
    _count_pods(ctx, work)


def _steady(ctx: _Context, work: _Work, *, drained: bool = False) -> None:
    """Rows 6-10 for the current attempt (also the step after a resume or a restart, which passes
    ``drained`` because the barrier has just passed)."""
    current = ctx.jobset(work.attempt)
    try:
        desired, rules = check_spec(ctx.job_object(), work.attempt)
        queueing.check_jobsets(ctx.observed)
        if ctx.queue:
            queueing.check_queueing(ctx.observed, ctx.admission)
            queueing.build_workload(ctx.observed, desired)  # TooManyPodSets
    except queueing.PriorityUnknown:
        pass  # not a spec error: the Job stays Queued without a Workload (_workload_child)
    except InvalidSpec as invalid:
        _invalid_spec(ctx, work, current, invalid)
        return
    if cond.get_condition(work.conditions, INVALID_SPEC) is not None:
        work.conditions = cond.set_condition(work.conditions, INVALID_SPEC, cond.FALSE, "Valid", "", ctx.now)
    state = jobset_state(current) if current is not None else ""
    if state == FAILED and current is not None:
        _failed(ctx, work, current, desired, rules)  # rows 8, 8a, 9
        return
    if state == "Completed":
        work.phase = SUCCEEDED  # row 10
        work.kind = "terminal"
        work.workload = desired["metadata"]["name"]
        work.children = [desired]
        work.message = ""
        _count_pods(ctx, work)
        return
    _run(ctx, work, current, desired, drained=drained)


def _failed(ctx: _Context, work: _Work, current: Mapping[str, Any], desired: dict[str, Any],
            rules: list[Mapping[str, Any]]) -> None:
    """Rows 8, 8a and 9: the current JobSet failed. ``spec.failurePolicy.rules`` judge why
    (``hooks.core.failurepolicy``, reading the pods that tell it only when a rule needs them; a failed
    read holds, keeping the JobSet: ``FailJob`` is final, so it is never decided on a guess).
    FailJob, or a counted restart with none left: Failed, the JobSet kept. Otherwise row 8, in two
    calls, so that the decision survives a lost status write: this answer records Restarting (and
    restarts+1 when the verdict counts) and still keeps the failed JobSet; the next call (row 6, fed
    that status) leaves it out. Leaving it out at once would let a lost status write recreate the
    failed attempt under the same name, uncounted. The count happens exactly once: the fed-back
    status is Restarting.
    """
    work.workload = desired["metadata"]["name"]
    work.children = [desired]
    pods: list[Mapping[str, Any]] = []
    if failurepolicy.needs_pods(rules):
        try:
            pods = ctx.reader.attempt_failure_pods(ctx.namespace, str(current["metadata"]["name"]))
        except PodReadError as error:
            work.kind = "held"
            work.phase = work.phase if work.phase in (RUNNING, PENDING) else PENDING
            _read_failed(ctx, work, error, in_barrier=False)
            return
    verdict = failurepolicy.judge(rules, current, pods)
    max_restarts = ctx.observed.spec.get("maxRestarts") or 0
    restart = verdict.action == failurepolicy.RESTART_IGNORE or (
        verdict.action == failurepolicy.RESTART_JOB and work.restarts < max_restarts)
    work.last_failure = {"attempt": work.attempt, "cause": verdict.cause, "message": _bounded(verdict.message),
                         "action": verdict.action}
    if not restart:
        work.phase = FAILED
        work.kind = "terminal"
        work.message = ""
        reason, said = ("FailurePolicy", verdict.message) if verdict.action == failurepolicy.FAIL_JOB else (
            "MaxRestartsReached", f"{verdict.message}; maxRestarts ({max_restarts}) used up")
        work.conditions = cond.set_condition(work.conditions, FAILED_CONDITION, cond.TRUE, reason, _bounded(said),
                                             ctx.now)
        _count_pods(ctx, work)
        return
    if work.attempt >= MAX_ATTEMPT:
        _attempt_limit(ctx, work)
        _count_pods(ctx, work)
        return
    if verdict.counted:
        work.restarts += 1
    work.restarts_by_cause[verdict.cause] = work.restarts_by_cause.get(verdict.cause, 0) + 1
    _restart(ctx, work)  # holds: the failed JobSet is still observed
    work.children = [desired]


def _run(ctx: _Context, work: _Work, current: Mapping[str, Any] | None, desired: dict[str, Any],
         *, drained: bool) -> None:
    """Row 10: the current attempt's JobSet; Running when a cached pod is active, else Pending.

    A JobSet that is not observed is created only after the drain barrier (already passed when
    ``drained``), so a new JobSet never overlaps pods left by one deleted outside this controller.
    While that barrier holds, nothing is emitted and the phase stays Pending (or Running).
    """
    name = desired["metadata"]["name"]
    work.workload = name
    if ctx.queue:
        admission = ctx.admission
        if current is None and admission.state != queueing.ADMITTED:
            work.workload = ""
            _queued(ctx, work, admission)
            return
        if admission.state == queueing.ADMITTED:
            _admitted(ctx, work, admission)
            if current is not None:
                desired = _as_observed(current)  # made with the admission's node labels: kept as it is
            else:
                workload = queueing.current_workload(ctx.observed) or {}
                try:
                    desired = queueing.admitted_jobset(desired, workload, ctx.observed.flavors)
                except queueing.FlavorUnknown as unknown:
                    work.kind, work.children, work.workload, work.resync = "held", [], "", True
                    work.phase = PENDING
                    work.message = _bounded(f"admitted, waiting before creating JobSet {name}: {unknown.message}")
                    return
                except InvalidSpec as invalid:
                    _invalid_spec(ctx, work, None, invalid)
                    return
    if current is None and not drained:
        if not _barrier(ctx, work, gate=True):
            work.kind = "held"
            work.children = []
            work.phase = work.phase if work.phase in (RUNNING, PENDING) else PENDING
            work.message = f"{work.message} (before creating JobSet {name})"
            return
        drained = True
    work.kind = "kept" if current is not None else "created"
    work.children = [desired]
    if drained:  # the barrier has just found no active pod and no active launcher, live: nothing runs
        work.active_pods = 0
        running: bool | None = False
    else:
        running = _workload_running(ctx, work, name) if _count_pods(ctx, work) else None
    if running is None:
        work.phase = work.phase if work.phase in (RUNNING, PENDING) else PENDING
        return
    work.phase = RUNNING if running else PENDING
    work.message = "" if running else f"waiting for the pods of JobSet {name} to start"


def _workload_running(ctx: _Context, work: _Work, workload: str) -> bool | None:
    """Whether ``workload`` runs: a worker pod is active (``activePods``, from the cache) or, for an
    MPI Job whose workers are all done, its launcher pod is (``workload_pods``, live: launchers are
    not cached). Returns None when that read failed (the message and resync are set).
    """
    if work.active_pods:
        return True
    launcher = ctx.observed.spec.get("launcher")
    if not (isinstance(launcher, str) and launcher):
        return False
    try:
        return any(is_active(pod) for pod in ctx.reader.workload_pods(ctx.namespace, workload, launcher))
    except PodReadError as error:
        _read_failed(ctx, work, error, in_barrier=False)
        return None


def _invalid_spec(ctx: _Context, work: _Work, current: Mapping[str, Any] | None, invalid: InvalidSpec) -> None:
    """Row 6: the spec cannot be built. Report it; keep the current JobSet when observed, create none."""
    work.kind = "invalid-spec"
    work.conditions = cond.set_condition(work.conditions, INVALID_SPEC, cond.TRUE, invalid.code,
                                         _bounded(invalid.reason), ctx.now)
    if current is None:
        work.phase = PENDING
        work.workload = ""
        work.children = []
    else:
        work.phase = work.phase if work.phase in (RUNNING, PENDING) else PENDING
        work.workload = current["metadata"]["name"]
        work.children = [_as_observed(current)]  # the spec cannot be built: keep what exists
    _count_pods(ctx, work)
    work.message = f"waiting for a valid spec: {invalid.reason}"


def _count_pods(ctx: _Context, work: _Work) -> bool:
    """Sets ``activePods`` from the cached ``job_pods`` read. On a failed read keeps the previous
    value, sets the message and resync, and returns False.
    """
    try:
        pods = ctx.reader.job_pods(ctx.namespace, ctx.job)
    except PodReadError as error:
        _read_failed(ctx, work, error, in_barrier=False)
        return False
    work.active_pods = sum(1 for pod in pods if is_active(pod))
    return True


def _keep(ctx: _Context, observed: Mapping[str, Any], attempt: int) -> dict[str, Any]:
    """The child that keeps an observed JobSet: rebuilt from the spec, or, when the spec cannot be
    built, the observed object's identity, labels, annotations and spec.
    """
    try:
        return build_jobset(ctx.job_object(), attempt)
    except InvalidSpec:
        return _as_observed(observed)


def _as_observed(observed: Mapping[str, Any]) -> dict[str, Any]:
    """The child that keeps an observed JobSet as it is: identity, labels, annotations and spec."""
    metadata = observed["metadata"]
    kept: dict[str, Any] = {"name": metadata["name"], "namespace": metadata["namespace"]}
    if metadata.get("labels"):
        kept["labels"] = dict(metadata["labels"])
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items() if k != _LAST_APPLIED}
    if annotations:
        kept["annotations"] = annotations
    return {
        "apiVersion": observed.get("apiVersion") or JOBSET_API_VERSION,
        "kind": observed.get("kind") or JOBSET_KIND,
        "metadata": kept,
        "spec": json_copy(observed.get("spec") or {}),
    }


# ---- issue 15: time limits and stuck pods (hooks.core.deadlines, hooks.core.stuck) ----------------------------

def _deadline_due(ctx: _Context, work: _Work) -> bool:
    """Whether row 3a applies: ``activeDeadlineSeconds`` passed (counted from ``status.startTime``),
    or an earlier answer already said so (``DeadlineExceeded=True``: raising the limit afterwards
    does not bring the workload back)."""
    marked = cond.get_condition(work.conditions, DEADLINE_EXCEEDED)
    if marked is not None and marked.get("status") == cond.TRUE:
        return True
    return deadlines.passed(deadlines.deadline_at(ctx.observed.spec, work.start_time), ctx.now)


def _deadline(ctx: _Context, work: _Work) -> None:
    """Row 3a: past the active deadline. No children; Terminating until the drain barrier passes,
    then Failed with condition ``Failed`` reason ``DeadlineExceeded`` (terminal)."""
    work.workload = ""
    if cond.get_condition(work.conditions, DEADLINE_EXCEEDED) is None or \
            cond.get_condition(work.conditions, DEADLINE_EXCEEDED).get("status") != cond.TRUE:
        at = deadlines.deadline_at(ctx.observed.spec, work.start_time)
        said = (f"spec.activeDeadlineSeconds passed at {deadlines.stamp(at)} (counted from status.startTime "
                f"{work.start_time})" if at is not None else "spec.activeDeadlineSeconds passed")
        work.conditions = cond.set_condition(work.conditions, DEADLINE_EXCEEDED, cond.TRUE, "ActiveDeadlineSeconds",
                                             said, ctx.now)
    if not _barrier(ctx, work):
        work.phase = TERMINATING
        work.kind = "held"
        work.message = _bounded(f"deadline exceeded, tearing down: {work.message}")
        return
    work.phase = FAILED
    work.kind = "terminal"
    work.conditions = cond.set_condition(work.conditions, FAILED_CONDITION, cond.TRUE, "DeadlineExceeded",
                                         str(cond.get_condition(work.conditions, DEADLINE_EXCEEDED)["message"]),
                                         ctx.now)


def _times(ctx: _Context, work: _Work) -> None:
    """Records ``startTime`` (once: the first answer holding a JobSet; that JobSet's own
    ``creationTimestamp`` when it is observed with one, else ``now``) and ``completionTime``
    (once: the first terminal answer); wakes the Job when its active deadline will pass; asks,
    once a terminal Job's ``ttlSecondsAfterFinished`` passed, for its deletion (``DeleteJob``,
    repeated every call until the deletion is observed: a failed write is simply asked again)."""
    if ctx.observed.finalizing:
        return
    jobsets = [child for child in work.children if child.get("kind") == JOBSET_KIND]
    if not work.start_time and jobsets:
        name = str(jobsets[0]["metadata"]["name"])
        observed = next((js for js in ctx.observed.jobsets if js["metadata"]["name"] == name), None)
        created = str(((observed or {}).get("metadata") or {}).get("creationTimestamp") or "")
        try:
            work.start_time = deadlines.stamp(deadlines.parse_time(created) or ctx.now)
        except ValueError:
            work.start_time = deadlines.stamp(ctx.now)
    if work.phase not in TERMINAL:
        work.wake = deadlines.wake_in(deadlines.deadline_at(ctx.observed.spec, work.start_time), ctx.now)
        return
    if not work.completion_time:
        work.completion_time = deadlines.stamp(ctx.now)
    at = deadlines.ttl_at(ctx.observed.spec, work.completion_time)
    if not deadlines.passed(at, ctx.now):
        work.wake = deadlines.wake_in(at, ctx.now)
        return
    assert at is not None
    work.message = f"deleting the Job: spec.ttlSecondsAfterFinished passed at {deadlines.stamp(at)}"
    work.resync = True
    work.actions.append(DeleteJob(ctx.namespace, ctx.job, ctx.observed.uid, work.message))


def _check_stuck(ctx: _Context, work: _Work, pods: list[Mapping[str, Any]]) -> None:
    """While the barrier waits on ``pods``: are some stuck terminating on dead nodes
    (``hooks.core.stuck``)? Reads nodes (``Reader.node_states``) only once the wait has lasted
    ``spec.drain.stuckAfterSeconds``. Sets ``DrainStuck`` True naming the pods and nodes, or False
    once none is; asks for a force delete only as ``hooks.core.stuck`` allows. A failed node read
    changes nothing (unknown is never "gone"). The barrier's answer is unchanged: it still waits."""
    drained = cond.get_condition(work.conditions, DRAINED) or {}
    try:
        since = deadlines.parse_time(str(drained.get("lastTransitionTime") or ""))
    except ValueError:
        since = None
    maybe = stuck.candidates(pods, since, ctx.now, ctx.observed.spec)
    if not maybe or since is None:
        _clear_stuck(ctx, work)
        return
    try:
        nodes = ctx.reader.node_states(sorted({str(p["spec"]["nodeName"]) for p in maybe}))
    except PodReadError:
        return
    found = stuck.judge(maybe, nodes, since, ctx.now, ctx.observed.spec)
    if not found.pods:
        _clear_stuck(ctx, work)
        return
    work.stuck_pods = len(found.pods)
    work.conditions = cond.set_condition(work.conditions, DRAIN_STUCK, cond.TRUE, "PodsOnLostNodes",
                                         _bounded(found.message()), ctx.now)
    work.message = _bounded(f"{work.message}; {found.message()}")
    for pod in found.force_delete:
        work.actions.append(ForceDeletePod(pod.namespace, pod.name, pod.uid, pod.node.name,
                                           f"node {pod.node.name} is {pod.node.describe()}"))


def _clear_stuck(ctx: _Context, work: _Work) -> None:
    """``DrainStuck`` False once no waited-on pod is stuck (only when the condition exists)."""
    if cond.get_condition(work.conditions, DRAIN_STUCK) is not None:
        work.conditions = cond.set_condition(work.conditions, DRAIN_STUCK, cond.FALSE, "NotStuck", "", ctx.now)
