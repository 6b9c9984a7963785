"""The drain barrier: nothing is torn down, restarted, resumed or created over a live pod, nor
while a batch Job that could still create one is left.

The barrier reads, live, every pod that may belong to the Job by any identity it carries:
JOB_LABEL (``Reader.active_job_pods``, cache then live), LAUNCHER_LABEL of every attempt
(``active_launcher_pods``), and JobSet's own ``jobset-name`` label for ``<job>-0`` up to one past the
highest attempt in the status, the children, those pods and the batch Jobs (``active_attempt_pods``);
and the ``batch/v1`` Jobs of every attempt (``attempt_jobs``, issue 20): those carrying JOB_LABEL,
which the hooks stamp on every Job template, with no attempt bound (issue 31: no status value,
wiped history or re-created parent can narrow it), and those JobSet labelled ``<job>-0`` up to that
bound. Metacontroller deletes a JobSet in the background, and until the garbage collector deletes
its Jobs such a Job can create a pod after every pod had finished. It passes only when no pod is
active, no such batch Job may still create a pod (``may_create_pods``: one that finished or is
being deleted creates none) and no JobSet of the Job is observed. All reads of one call share
one deadline (``hooks.server.handler``) and are made once per call (``drain_reads``, through
``Context.once``: the adoption's reads are the barrier's); a
failed or late read holds (``Drained=Unknown``, ``ReadFailed``), never "none". While it waits,
``hooks.core.stuckwait`` says whether the pods are stuck on dead nodes.

``barrier`` returns a value, ``Drain``: what was found, why it holds (``reason``) and what to say
(``message``, framed by the row's own words). ``record`` (and ``record_gate``, before creating a
JobSet) is the one place it is said how it enters the status: ``Drained``, ``DrainStuck``,
``ForceDeleteAllowed``, ``activePods``, resync and the force deletes, as a value
(``hooks.core.lifecycle.Record``) that the row's step carries and ``lifecycle.apply`` writes; the
rows set the rest from the same value.
``leftovers`` is the same reads for a terminal queue-managed Job's quota.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from hooks.core import conditions as cond
from hooks.core import stuckwait
from hooks.core.claims import utc
from hooks.core.deadlines import time_or_none
from hooks.core.evidence import list_names
from hooks.core.lifecycle import ConditionChange, Record
from hooks.core.observed import InvalidRequest
from hooks.core.reads import failed_words
from hooks.core.stuckwait import NOT_KNOWN, StuckWait
from hooks.core.vocab import ConditionType, Reason
from hooks.core.wording import bounded, list_pods, pod_name
from hooks.core.work import DRAINED, Context
from podread.attempts import attempt_in_name, attempt_number, workload_name
from podread.constants import ATTEMPT_LABEL, JOB_LABEL, JOBSET_NAME_LABEL, LAUNCHER_LABEL, REPLICATED_JOB_LABEL
from podread.errors import PodReadError
from podread.selector import pod_key

Pod = Mapping[str, Any]

WORKLOAD_PRESENT, PODS_ACTIVE, LAUNCHER_ACTIVE = Reason.WORKLOAD_PRESENT, Reason.PODS_ACTIVE, Reason.LAUNCHER_ACTIVE
BATCH_JOBS_PRESENT, READ_FAILED, NO_ACTIVE_PODS = Reason.BATCH_JOBS_PRESENT, Reason.READ_FAILED, Reason.NO_ACTIVE_PODS
PASSED_WORDS = "no active pod (confirmed with the API server)"


def drain_reads(ctx: Context, attempt: int) -> tuple[list[Pod], list[Pod]]:
    """Every active pod that may belong to the Job, by any identity it carries, and every batch Job
    of its attempts, all confirmed live: ``active_job_pods`` (JOB_LABEL, cache then live),
    ``active_launcher_pods`` (LAUNCHER_LABEL), ``attempt_jobs`` (JOB_LABEL, which the hooks stamp
    on every batch Job of every attempt, with no attempt bound; and JobSet's ``jobset-name`` label
    for ``<job>-0`` up to one past the highest attempt ``attempt`` and those pods name,
    ``last_attempt``), then ``active_attempt_pods`` (``jobset-name``) up to one past the highest
    attempt the pods and the batch Jobs name. No status value, wiped history or re-created parent
    narrows what is found: the batch Jobs are found by the Job's name, and the pods' bound grows
    with every attempt they name. The Jobs are read before the pods by that label: a Job gone at its
    read cannot make a pod the pod read then misses. Each read is made once per call
    (``Context.once``): a second caller, or the same attempts asked again, gets the first answer, or
    its error. Returns (pods, batch Jobs), new lists; raises ``PodReadError`` from any read."""
    found = list(ctx.once.get("active_job_pods", lambda: ctx.reader.active_job_pods(ctx.namespace, ctx.job)))
    found += ctx.once.get("active_launcher_pods", lambda: ctx.reader.active_launcher_pods(ctx.namespace, ctx.job))
    last = last_attempt(ctx, attempt, found) + 1
    jobs = list(ctx.once.get(("attempt_jobs", last), lambda: ctx.reader.attempt_jobs(ctx.namespace, ctx.job, last)))
    last = max(last, last_attempt(ctx, attempt, jobs) + 1)
    found += ctx.once.get(("active_attempt_pods", last),
                          lambda: ctx.reader.active_attempt_pods(ctx.namespace, ctx.job, last))
    return found, jobs


@dataclass(frozen=True)
class Drain:
    """What the drain barrier found, all read live, and what it makes of it.

    Found: ``jobsets`` (the names of the observed JobSets), ``workers`` and ``launchers`` (the
    active pods, without duplicates, sorted by name: ``split_launchers``), ``batch_jobs`` (the names
    of those that may still create a pod);
    or ``error``, the read that failed (then nothing else is known). ``stuck``: whether the pods it
    waits on are stuck on dead nodes (``hooks.core.stuckwait``). ``passed`` when nothing was found
    and no read failed; ``reason`` why it holds (``Drained``'s reason: the first thing waited for)
    or ``NoActivePods``; ``message`` what the status says.
    """

    jobsets: tuple[str, ...] = ()
    workers: tuple[Pod, ...] = ()
    launchers: tuple[Pod, ...] = ()
    batch_jobs: tuple[str, ...] = ()
    error: PodReadError | None = None
    stuck: StuckWait = field(default_factory=StuckWait)

    @property
    def passed(self) -> bool:
        """No read failed, no JobSet is observed, no pod is active, no batch Job is left."""
        return self.error is None and not (self.jobsets or self.workers or self.launchers or self.batch_jobs)

    @property
    def reason(self) -> Reason:
        """``ReadFailed``, else the first thing waited for (``WorkloadPresent``, ``PodsActive``,
        ``LauncherActive``, ``BatchJobsPresent``), else ``NoActivePods``."""
        if self.error is not None:
            return READ_FAILED
        for reason, found in ((WORKLOAD_PRESENT, self.jobsets), (PODS_ACTIVE, self.workers),
                              (LAUNCHER_ACTIVE, self.launchers), (BATCH_JOBS_PRESENT, self.batch_jobs)):
            if found:
                return reason
        return NO_ACTIVE_PODS

    def waiting_for(self) -> list[str]:
        """What it waits for, in words, in the order of ``reason``."""
        waiting: list[str] = []
        if self.jobsets:
            noun = "JobSet" if len(self.jobsets) == 1 else "JobSets"
            waiting.append(f"{noun} {list_names(list(self.jobsets))} to be deleted")
        if self.workers:
            noun = "active pod" if len(self.workers) == 1 else "active pods"
            waiting.append(f"{len(self.workers)} {noun}: {list_pods(list(self.workers))}")
        if self.launchers:
            waiting.append(f"launcher pod {list_pods(list(self.launchers))} to finish")
        if self.batch_jobs:
            noun = "batch Job" if len(self.batch_jobs) == 1 else "batch Jobs"
            waiting.append(f"{noun} {list_names(list(self.batch_jobs))} to finish or be deleted")
        return waiting

    def words(self) -> str:
        """The barrier's own words: the failed read (``hooks.core.reads.failed_words``), ``waiting
        for ...``, or ``""`` once it passed."""
        if self.error is not None:
            return failed_words(self.error)
        waiting = self.waiting_for()
        return bounded("waiting for " + " and ".join(waiting)) if waiting else ""

    def message(self, *, before: str = "", after: str = "") -> str:
        """The status message of a row that holds on the barrier: ``before``, the barrier's
        ``words``, the stuck pods (``StuckWait.said``), ``after``; ``""`` once it passed."""
        if self.passed:
            return ""
        return bounded(f"{before}{self.words()}{self.stuck.said()}{after}")

    def drained(self) -> tuple[str, str, str]:
        """The ``Drained`` condition it sets: (status, reason, message)."""
        if self.error is not None:
            return cond.UNKNOWN, READ_FAILED, self.error.cause
        if self.passed:
            return cond.TRUE, NO_ACTIVE_PODS, PASSED_WORDS
        return cond.FALSE, self.reason, self.words()


def barrier(ctx: Context, conditions: cond.Conditions, *, through: int) -> Drain:
    """The drain barrier (module doc). Reads, live (``drain_reads``): ``active_job_pods``
    (JOB_LABEL), ``active_launcher_pods`` (LAUNCHER_LABEL, every attempt, with or without
    ``spec.launcher``), ``attempt_jobs`` and ``active_attempt_pods`` (JobSet's ``jobset-name``
    label, for ``<job>-0`` up to one past the highest attempt known: ``through``, the status, the
    children, and those pods' attempt and ``jobset-name`` labels). ``through`` is the attempt the
    row works on: the current one for a teardown, the next one before starting it; the batch Jobs
    are found for every attempt, whatever ``through``. A batch Job counts while it may still
    create a pod (``may_create_pods``: the Job controller's own rule): until the garbage collector
    removes it, a Job that has not finished can replace a pod after every pod had ended; one that
    finished (``Complete``, ``Failed``) or is being deleted creates none, so an orphaned JobSet's
    finished Jobs, which no one deletes, never hold a teardown for ever. Waiting, ``Drained`` is
    False with the reason of the first thing waited for: ``WorkloadPresent``, ``PodsActive``,
    ``LauncherActive``, ``BatchJobsPresent``; a failed
    read holds with ``ReadFailed`` (Unknown). While it waits, asks ``hooks.core.stuckwait`` whether
    the pods are stuck, counting from when ``Drained`` turned False in ``conditions``. Returns the
    ``Drain``; a failed read is a ``Drain`` whose ``error`` is set, never "none"."""
    try:
        found, jobs = drain_reads(ctx, through)
    except PodReadError as error:
        return Drain(error=error, stuck=NOT_KNOWN)
    workers, launchers = split_launchers(ctx, found)
    jobsets = tuple(sorted(str(jobset["metadata"]["name"]) for jobset in ctx.observed.jobsets))
    drain = Drain(jobsets, tuple(workers), tuple(launchers), tuple(job_names([j for j in jobs if may_create_pods(j)])))
    if drain.passed:
        return drain
    return replace(drain, stuck=stuckwait.wait(ctx, stuckwait.waiting_since(conditions, evidence_time(ctx)),
                                               [*workers, *launchers]))


def evidence_time(ctx: Context) -> datetime:
    """The time stamped on a transition this answer makes: ``Context.stamp`` (``hooks.core.stamps``)."""
    return ctx.stamp


def record(ctx: Context, conditions: cond.Conditions, drain: Drain) -> Record:
    """What the barrier found, as it enters the status (the one place it is said; the step of the
    row that read it carries it and ``hooks.core.lifecycle.apply`` writes it): ``Drained``,
    ``DrainStuck`` and ``ForceDeleteAllowed`` (``hooks.core.stuckwait.conditions``), each with the
    transition time it has once set over ``conditions`` (the work's, as the row read them);
    ``activePods`` (the active pods that are not launchers; ``None``, kept as it was, when a read
    failed); resync while it holds; the stuck pods and the force deletes it asks for. The message,
    phase and kind are the row's, from the same ``drain`` (``Drain.message``)."""
    return _record(ctx, conditions, drain, drained=True)


def record_gate(ctx: Context, conditions: cond.Conditions, drain: Drain) -> Record:
    """``record`` for the check before creating the current attempt's JobSet: a pass adds no
    ``Drained`` condition where there was none in ``conditions`` (it updates one that exists), so a
    new Job's status stays minimal."""
    return _record(ctx, conditions, drain,
                   drained=not drain.passed or cond.get_condition(conditions, DRAINED) is not None)


def _record(ctx: Context, conditions: cond.Conditions, drain: Drain, *, drained: bool) -> Record:
    """``record``; ``drained``: whether the ``Drained`` condition is set. The conditions it returns
    are those it changes, each as it is once set (its ``since``: the transition time)."""
    after = conditions
    if drained:
        status, reason, message = drain.drained()  # stamped from the evidence (hooks.core.stamps)
        after = cond.set_condition(after, DRAINED, status, reason, message, _drained_stamp(ctx, conditions))
    after = stuckwait.conditions(ctx, after, drain.stuck)
    before = {condition.type: condition for condition in conditions}
    changes = tuple(ConditionChange(ConditionType(c.type), str(c.status), str(c.reason), str(c.message),
                                    since=str(c.last_transition_time))
                    for c in after if before.get(c.type) != c)
    return Record(conditions=changes, active_pods=len(drain.workers) if drain.error is None else None,
                  resync=not drain.passed, stuck_pods=drain.stuck.pods, deletes=tuple(drain.stuck.deletes))


def _drained_stamp(ctx: Context, conditions: cond.Conditions) -> datetime:
    """The time a ``Drained`` transition is stamped with: ``Context.stamp`` (the world's evidence),
    never before the ``Drained`` condition already there (the evidence can lose a time when a child
    goes: the JobSet's conditions leave with it). Not the time of the parent's last status write:
    two cached versions that each lack the pass would each stamp their own, and Metacontroller's
    last-writer-wins writes would alternate them (the tier's lost-node test)."""
    before = cond.get_condition(conditions, DRAINED)
    since = time_or_none(before.last_transition_time) if before is not None else None
    return max(ctx.stamp, since) if since is not None else ctx.stamp


@dataclass(frozen=True)
class Leftovers:
    """What keeps a terminal queue-managed Job's quota (``leftovers``): ``error`` (a read failed),
    ``pods`` (active, by any identity, unique, sorted) or ``jobs`` (batch Jobs that may still create
    pods, by name). ``none`` when nothing does; ``message`` says what keeps it."""

    error: PodReadError | None = None
    pods: tuple[Pod, ...] = ()
    jobs: tuple[str, ...] = ()

    @property
    def none(self) -> bool:
        return self.error is None and not self.pods and not self.jobs

    def message(self) -> str:
        if self.error is not None:
            return f"keeping the quota until a pod read succeeds: {self.error.cause}"
        if self.pods:
            return bounded(f"keeping the quota while {len(self.pods)} pods are active: {list_pods(list(self.pods))}")
        if self.jobs:
            return bounded(f"keeping the quota while {len(self.jobs)} batch Jobs may still create pods: "
                           f"{list_names(list(self.jobs))}")
        return ""


def leftovers(ctx: Context, attempt: int) -> Leftovers:
    """Whether a pod of the Job is active by any identity, or a batch Job of it can still create
    one (the barrier's reads, live, ``drain_reads``), for a terminal Job that keeps its JobSet.

    As in the barrier, only the batch Jobs that may still create a pod count (``may_create_pods``):
    the kept JobSet keeps its finished Jobs until it is deleted, and safety needs only that nothing
    runs outside the quota, now or later.
    """
    try:
        found, jobs = drain_reads(ctx, attempt)
    except PodReadError as error:
        return Leftovers(error=error)
    if found:
        return Leftovers(pods=tuple(sorted({pod_key(pod): pod for pod in found}.values(), key=pod_name)))
    return Leftovers(jobs=tuple(job_names([job for job in jobs if may_create_pods(job)])))


FINISHED_JOB_CONDITIONS = frozenset({"Complete", "Failed", "SuccessCriteriaMet", "FailureTarget"})
"""A batch Job with one of these conditions True creates no more pods: kube-controller-manager's Job
controller (``pkg/controller/job/job_controller.go``, v1.37) returns before managing pods once the
Job is finished (``Complete``, ``Failed``), and with ``SuccessCriteriaMet``/``FailureTarget`` only
deletes the active ones."""


def may_create_pods(job: Mapping[str, Any]) -> bool:
    """Whether a batch Job may still create a pod: it is not being deleted (the Job controller
    calls ``manageJob``, the only place it creates pods, only while ``deletionTimestamp`` is unset)
    and no finishing condition (``FINISHED_JOB_CONDITIONS``) is True. The one rule the barrier and
    a terminal Job's quota (``leftovers``) apply."""
    if (job.get("metadata") or {}).get("deletionTimestamp"):
        return False
    conditions = (job.get("status") or {}).get("conditions") or ()
    return not any(isinstance(c, Mapping) and c.get("type") in FINISHED_JOB_CONDITIONS and c.get("status") == "True"
                   for c in conditions)


def job_names(jobs: list[Mapping[str, Any]]) -> list[str]:
    """The names of ``jobs``, unique and sorted."""
    return sorted({str((job.get("metadata") or {}).get("name", "")) for job in jobs})


class StaleRequest(InvalidRequest):
    """The request is behind the cluster (Metacontroller's informer cache lags): the live reads
    show an attempt past the one the answer would write, or its children lack the running JobSet.
    A 409: Metacontroller writes nothing and asks again, with a fresher parent. ``cause`` names
    which (``STALE_CAUSES``): the refusals are counted by it (``nvcre_hook_refusals_total``)."""

    def __init__(self, message: str, cause: str = "children-behind") -> None:
        if cause not in STALE_CAUSES:
            raise ValueError(f"unknown cause {cause!r} of a refusal: add it to STALE_CAUSES (and its metric's help)")
        super().__init__(409, message)
        self.cause = cause


STALE_CAUSES = ("attempt-ahead", "children-behind", "parent-gone", "parent-replaced", "parent-deleting")
"""Why a request was refused as behind the cluster: the core's (an attempt past the request's; a
JobSet missing from its children) and the parent check's (``hooks.server.freshness.behind``)."""


def ahead_of(ctx: Context, attempt: int, through: int) -> int | None:
    """The newest attempt past ``attempt`` that the barrier's live reads (``drain_reads`` through
    ``through``, made once per call: no read again) name, by the pods' attempt and ``jobset-name``
    labels and the batch Jobs' ``jobset-name`` labels; ``None`` when none does or a read failed."""
    try:
        pods, jobs = drain_reads(ctx, through)
    except PodReadError:
        return None
    names = [str(((o.get("metadata") or {}).get("labels") or {}).get(JOBSET_NAME_LABEL, "")) for o in [*pods, *jobs]]
    found = [n for n in (attempt_in_name(ctx.job, name) for name in names) if n is not None]
    found += [n for n in (attempt_number(str(((p.get("metadata") or {}).get("labels") or {}).get(ATTEMPT_LABEL, "")))
                          for p in pods) if n is not None]
    newest = max(found, default=attempt)
    return newest if newest > attempt else None


STALE_CACHE_SECONDS = 30.0
"""How long after an attempt began a parent version older than it is taken for one from
Metacontroller's informer cache (``refuse_if_behind``): far past any informer's lag (the cluster
tier's is 2 s at most); past it, such a parent is one whose status write was lost, answered as before."""


def refuse_if_behind(ctx: Context, attempt: int, *, reads: bool = True) -> None:
    """``StaleRequest`` when the request's parent is older than an attempt past its ``attempt``:
    a child JobSet of the request, or (``reads``) a pod or batch Job of the barrier's live reads
    (``drain_reads``, made once per call: no read again), belongs to an attempt past ``attempt``,
    was created no earlier than the API server last wrote this parent version
    (``Observed.version_times``), and less than ``STALE_CACHE_SECONDS`` before ``now``. Such a
    parent comes from Metacontroller's cache (a suspend, or the status before the resume, read
    after attempt+1 began): answering it would write the attempt back (and a teardown would leave
    the newer attempt's JobSet out); the fresher parent that follows is answered instead. A
    parent written after that attempt began (its status write lost, then suspended), or one still
    older than it once the grace is past (a lost status write, never followed by a fresher one), is
    answered as before: refusing it would never end. Without the parent's times (a request built
    by hand) or the evidence's creation times, nothing is refused; a failed read refuses nothing
    (the barrier holds on it)."""
    written = [t for t in (time_or_none(text) for text in ctx.observed.version_times) if t is not None]
    if not written:
        return
    objs: list[tuple[Mapping[str, Any], bool]] = [(js, True) for js in ctx.observed.jobsets]
    if reads:
        try:
            pods, jobs = drain_reads(ctx, attempt)
        except PodReadError:
            return
        objs += [(obj, False) for obj in (*pods, *jobs)]
    now = utc(ctx.now)
    ahead: list[tuple[int, datetime]] = []
    for obj, named in objs:
        number = _attempt_of(ctx, obj, named=named)
        created = time_or_none((obj.get("metadata") or {}).get("creationTimestamp"))
        if number is not None and number > attempt and created is not None:
            ahead.append((number, created))
    if not ahead:
        return
    began = min(created for _, created in ahead)
    if max(written) <= began and (now - began).total_seconds() < STALE_CACHE_SECONDS:
        raise StaleRequest(f"the request is behind the cluster: status.attempt is {attempt}, but attempt "
                           f"{max(n for n, _ in ahead)} began after this parent version was written (its JobSet, "
                           "pods or batch Jobs exist); not answering from this parent", cause="attempt-ahead")


def refuse_if_children_behind(ctx: Context, attempt: int) -> None:
    """``StaleRequest`` when the children in the request are behind the cluster: JobSet
    ``<job>-<attempt>`` is not among them, yet the barrier's live reads (``drain_reads``, made once
    per call: no read again) find its pods or batch Jobs, none being deleted, the newest created
    less than ``STALE_CACHE_SECONDS`` before ``now``. Metacontroller's children cache has not seen
    the JobSet it created a moment ago: answering would hold "before creating" it and write a
    ``Drained`` condition the next call (with the JobSet seen) takes back, a status that never
    settles. A JobSet that is gone for real leaves its pods being deleted (or, orphaned, keeps them
    past the grace): those are answered, and held on, as before. A failed read refuses nothing (the
    barrier holds on it)."""
    try:
        pods, jobs = drain_reads(ctx, attempt)
    except PodReadError:
        return
    name = workload_name(ctx.job, attempt)
    if any(jobset["metadata"]["name"] == name for jobset in ctx.observed.jobsets):
        return
    mine = [obj for obj in (*pods, *jobs)
            if str(((obj.get("metadata") or {}).get("labels") or {}).get(JOBSET_NAME_LABEL, "")) == name]
    if not mine or any((obj.get("metadata") or {}).get("deletionTimestamp") for obj in mine):
        return
    created = [t for t in (time_or_none((o.get("metadata") or {}).get("creationTimestamp")) for o in mine)
               if t is not None]
    now = utc(ctx.now)
    if created and (now - max(created)).total_seconds() < STALE_CACHE_SECONDS:
        raise StaleRequest(f"the request is behind the cluster: JobSet {name} is not among its children, but "
                           f"its pods or batch Jobs exist and none is being deleted; not answering from this view")


def _attempt_of(ctx: Context, obj: Mapping[str, Any], *, named: bool) -> int | None:
    """The attempt ``obj`` belongs to: by its name ``<job>-<n>`` (``named``: a JobSet), else by its
    attempt and ``jobset-name`` labels (a pod, a batch Job); ``None`` when nothing says."""
    metadata = obj.get("metadata") or {}
    labels = metadata.get("labels") or {}
    if named:
        return attempt_in_name(ctx.job, str(metadata.get("name", "")))
    found = [attempt_in_name(ctx.job, str(labels.get(JOBSET_NAME_LABEL, ""))),
             attempt_number(str(labels.get(ATTEMPT_LABEL, "")))]
    return max((n for n in found if n is not None), default=None)


def last_attempt(ctx: Context, attempt: int, pods: list[Mapping[str, Any]]) -> int:
    """The highest attempt the evidence names: ``attempt``, ``status.attempt``, the observed
    JobSets named ``<job>-<n>``, and the attempt and ``jobset-name`` labels of ``pods`` (pods or
    batch Jobs)."""
    best = max(attempt, ctx.observed.status.attempt)
    names = [str(js["metadata"]["name"]) for js in ctx.observed.jobsets]
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        names.append(str(labels.get(JOBSET_NAME_LABEL, "")))
        number = attempt_number(str(labels.get(ATTEMPT_LABEL, "")))
        if number is not None:
            best = max(best, number)
    named = (attempt_in_name(ctx.job, name) for name in names)
    return max([best, *(n for n in named if n is not None)])


def split_launchers(ctx: Context, pods: list[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]],
                                                                             list[Mapping[str, Any]]]:
    """``pods`` without duplicates, sorted by name and split into (workers, launchers). A launcher
    carries LAUNCHER_LABEL=<job> and not JOB_LABEL=<job>, or lost both and is in the replicated job
    ``spec.launcher`` names."""
    launcher = ctx.observed.spec.launcher
    unique = {pod_key(pod): pod for pod in reversed(pods)}
    workers, launchers = [], []
    for pod in sorted(unique.values(), key=lambda p: (pod_name(p), pod_key(p))):
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if labels.get(JOB_LABEL) == ctx.job:
            workers.append(pod)
        elif labels.get(LAUNCHER_LABEL) == ctx.job or (launcher and labels.get(REPLICATED_JOB_LABEL) == launcher):
            launchers.append(pod)
        else:
            workers.append(pod)
    return workers, launchers
