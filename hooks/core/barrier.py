"""The drain barrier: nothing is torn down, restarted, resumed or created over a live pod, nor
while a batch Job that could still create one is left.

The barrier reads, live, every pod that may belong to the Job by any identity it carries:
JOB_LABEL (``Reader.active_job_pods``, cache then live), LAUNCHER_LABEL of every attempt
(``active_launcher_pods``), and JobSet's own ``jobset-name`` label for ``<job>-0`` up to one past the
highest attempt in the status, the children and those pods (``active_attempt_pods``); and, for
the same attempts, the ``batch/v1`` Jobs JobSet labelled with those names (``attempt_jobs``,
issue 20): Metacontroller deletes a JobSet in the background, and until the garbage collector
deletes its Jobs such a Job can create a pod after every pod had finished. It passes only when no
pod is active, no such batch Job exists (one being deleted included) and no JobSet of the Job is
observed. All reads of one call share one deadline (``hooks.server.handler``); a failed or late
read holds (``Drained=Unknown``, ``ReadFailed``), never "none". While it waits,
``hooks.core.stuckwait`` says whether the pods are stuck on dead nodes. ``no_active_pods`` is the
same reads for a terminal queue-managed Job's quota.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hooks.core import conditions as cond
from hooks.core.evidence import list_names
from hooks.core.reads import read_failed
from hooks.core.stuckwait import check_stuck, clear_stuck
from hooks.core.wording import bounded, list_pods, pod_name
from hooks.core.work import DRAINED, Context, Work
from podread.attempts import attempt_in_name, attempt_number
from podread.constants import ATTEMPT_LABEL, JOB_LABEL, JOBSET_NAME_LABEL, LAUNCHER_LABEL, REPLICATED_JOB_LABEL
from podread.errors import PodReadError
from podread.selector import pod_key


def drain_reads(ctx: Context, attempt: int) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """Every active pod that may belong to the Job, by any identity it carries, and every batch Job
    of its attempts, all confirmed live: ``active_job_pods`` (JOB_LABEL, cache then live),
    ``active_launcher_pods`` (LAUNCHER_LABEL), then for ``<job>-0`` up to one past the highest
    attempt (``attempt`` and the evidence, ``last_attempt``) ``attempt_jobs`` and
    ``active_attempt_pods`` (JobSet's ``jobset-name`` label). The Jobs are read before the pods by
    that label: a Job gone at its read cannot make a pod the pod read then misses. Returns
    (pods, batch Jobs); raises ``PodReadError`` from any read."""
    found = list(ctx.reader.active_job_pods(ctx.namespace, ctx.job))
    found += ctx.reader.active_launcher_pods(ctx.namespace, ctx.job)
    last = last_attempt(ctx, attempt, found) + 1
    jobs = list(ctx.reader.attempt_jobs(ctx.namespace, ctx.job, last))
    found += ctx.reader.active_attempt_pods(ctx.namespace, ctx.job, last)
    return found, jobs


def no_active_pods(ctx: Context, work: Work) -> bool:
    """Whether no pod of the Job is active by any identity and no batch Job of it can still create
    one (the barrier's reads, live), for a terminal Job that keeps its JobSet. A failed read, an
    active pod, or such a Job keeps the quota: the message says so and resync is set.

    Unlike the barrier it does not wait for every batch Job: the kept JobSet keeps its finished
    Jobs until it is deleted, so that would hold the quota for as long as the Job exists. Safety
    needs only that nothing runs outside the quota, now or later: a batch Job whose
    ``Complete``/``Failed`` (or ``SuccessCriteriaMet``/``FailureTarget``) condition is True, or
    that is being deleted, creates no pod (the Job controller's rule), so only the others keep it.
    """
    try:
        found, jobs = drain_reads(ctx, work.attempt)
    except PodReadError as error:
        work.message = f"keeping the quota until a pod read succeeds: {error.cause}"
        work.resync = True
        return False
    if found:
        unique = sorted({pod_key(pod): pod for pod in found}.values(), key=pod_name)
        work.message = bounded(f"keeping the quota while {len(unique)} pods are active: {list_pods(unique)}")
        work.resync = True
        return False
    running = job_names([job for job in jobs if may_create_pods(job)])
    if running:
        work.message = bounded(f"keeping the quota while {len(running)} batch Jobs may still create pods: "
                               f"{list_names(running)}")
        work.resync = True
        return False
    return True


FINISHED_JOB_CONDITIONS = frozenset({"Complete", "Failed", "SuccessCriteriaMet", "FailureTarget"})
"""A batch Job with one of these conditions True creates no more pods."""


def may_create_pods(job: Mapping[str, Any]) -> bool:
    """Whether a batch Job may still create a pod: it is not being deleted and no finishing
    condition (``FINISHED_JOB_CONDITIONS``) is True."""
    if (job.get("metadata") or {}).get("deletionTimestamp"):
        return False
    conditions = (job.get("status") or {}).get("conditions") or ()
    return not any(isinstance(c, Mapping) and c.get("type") in FINISHED_JOB_CONDITIONS and c.get("status") == "True"
                   for c in conditions)


def job_names(jobs: list[Mapping[str, Any]]) -> list[str]:
    """The names of ``jobs``, unique and sorted."""
    return sorted({str((job.get("metadata") or {}).get("name", "")) for job in jobs})


def barrier(ctx: Context, work: Work, *, gate: bool = False, next_attempt: bool = False) -> bool:
    """The drain barrier. Returns True only when no JobSet of the Job is observed, no pod that
    may belong to the Job is active, by any identity it carries, and no batch Job of its attempts
    is left, all confirmed live (``drain_reads``): ``active_job_pods`` (JOB_LABEL),
    ``active_launcher_pods`` (LAUNCHER_LABEL, every attempt, with or without ``spec.launcher``),
    ``attempt_jobs`` and ``active_attempt_pods`` (JobSet's ``jobset-name`` label, for ``<job>-0``
    up to one past the highest attempt known: the status, ``next_attempt``'s attempt, the
    children, and those pods' attempt and ``jobset-name`` labels). A batch Job counts whatever its
    state, one being deleted too: until the garbage collector removes it, it may create a pod.
    Waiting, ``Drained`` is False with the reason of the first thing waited for:
    ``WorkloadPresent``, ``PodsActive``, ``LauncherActive``, ``BatchJobsPresent``.
    Sets the ``Drained`` condition, ``message``, ``activePods`` (the active pods that are not
    launchers) and, while waiting, resync. A failed read holds: ``Drained`` Unknown, ``ReadFailed``,
    previous ``activePods`` kept, wording fixed by the error's class.
    With ``gate`` (the check before creating the current attempt's JobSet when it is not observed)
    a pass adds no ``Drained`` condition where there was none, so a new Job's status stays minimal.
    """
    try:
        found, jobs = drain_reads(ctx, work.attempt + (1 if next_attempt else 0))
    except PodReadError as error:
        read_failed(ctx, work, error, in_barrier=True)
        return False
    batch_jobs = job_names(jobs)
    active, launchers = split_launchers(ctx, found)
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
        waiting.append(f"{len(active)} {noun}: {list_pods(active)}")
        reason = reason or "PodsActive"
    if launchers:
        waiting.append(f"launcher pod {list_pods(launchers)} to finish")
        reason = reason or "LauncherActive"
    if batch_jobs:
        noun = "batch Job" if len(batch_jobs) == 1 else "batch Jobs"
        waiting.append(f"{noun} {list_names(batch_jobs)} to be deleted")
        reason = reason or "BatchJobsPresent"
    if waiting:
        work.message = bounded("waiting for " + " and ".join(waiting))
        work.conditions = cond.set_condition(work.conditions, DRAINED, cond.FALSE, reason, work.message, ctx.now)
        work.resync = True
        check_stuck(ctx, work, [*active, *launchers])
        return False
    work.message = ""
    clear_stuck(ctx, work)
    if not gate or cond.get_condition(work.conditions, DRAINED) is not None:
        work.conditions = cond.set_condition(work.conditions, DRAINED, cond.TRUE, "NoActivePods",
                                             "no active pod (confirmed with the API server)", ctx.now)
    return True


def last_attempt(ctx: Context, attempt: int, pods: list[Mapping[str, Any]]) -> int:
    """The highest attempt the evidence names: ``attempt``, ``status.attempt``, the observed
    JobSets named ``<job>-<n>``, and the attempt and ``jobset-name`` labels of ``pods``."""
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
    launcher = ctx.observed.spec.get("launcher")
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
