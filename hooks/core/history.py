"""``status.attempts``: what became of each attempt, the last ``spec.attemptsHistoryLimit`` of them (issue 23).

Pure: reads what the rows already read or decided in this call (the observed JobSets and their
conditions' ``lastTransitionTime``, the failed attempt's telling pods read once by the failure row
through ``failure_pods``, the ``Drained``/``DrainStuck`` conditions the drain barrier wrote, the
verdict in ``lastFailure``), never the wall clock and never a read of its own. ``update`` runs once
per call after the rows, and only when the status agrees with the evidence (a status that
disagrees keeps its history as it came).

An entry (keys in ``ENTRY_KEYS`` order, the words of ``hooks.core.vocab.AttemptField``, each present
only once known; ``outcome`` is a ``vocab.EndCause``):

- ``attempt``, ``jobSet``: the attempt's number and its JobSet's name;
- ``created``: the JobSet's ``creationTimestamp``, once the JobSet is observed (an entry made when
  the hooks first answer a JobSet, before it exists, has none until then);
- ``started``: when the attempt's first pod was started (``started_at``: the earliest ``startTime``
  of its pods that ran), from the pods this call read anyway (``counted_job_pods`` of
  ``hooks.core.reads.counted``, the failed attempt's ``failure_pods``), so an attempt that ran and ended
  between two calls has one too;
- ``ended`` and ``outcome``: ``Succeeded`` or ``Failed`` at the time of the JobSet's ``Completed``
  or ``Failed`` condition (``Failed`` is written once the failure policy judged it; ``Preempted``
  when the first failing pod's ``DisruptionTarget`` reason is a preemption); ``Suspended``,
  ``Deleted``, ``Evicted`` (Kueue took the admission back; ``reason`` is Kueue's, such as
  ``Preempted``) and ``DeadlineExceeded`` when the teardown began (the Job's ``deletionTimestamp``,
  the Workload's ``Evicted`` and the Job's ``DeadlineExceeded`` condition times; for a suspend the
  newest time the request's evidence carries, ``barrier.evidence_time``: when the API server wrote
  the suspended parent);
- for a failed attempt, from its first failing pod (the earliest container end or disruption):
  ``failedPod``, ``node``, ``failedReplicatedJob`` (else from the JobSet's
  ``replicatedJobsStatus``), ``exitCode`` (the first container that ended non-zero), ``reason``
  (the disruption's, the pod's, the container's, else the JobSet's failure reason); a pod being
  deleted with ``failedPodDeletionStarted`` (its ``deletionTimestamp`` less its grace period) and
  ``failedPodGracePeriodEnds`` (its ``deletionTimestamp``: the moment the kubelet may kill it,
  not when its deletion began);
- ``cause``: the restart cause it was counted under (``status.restartsByCause``), only when it
  restarted the Job;
- ``drainSeconds`` (from ``ended`` until the barrier passed, as ``Drained``'s stamp dates it: a
  lower bound, ``hooks.core.stamps``) and ``drainStuck`` (whether
  ``DrainStuck`` was True meanwhile), for an attempt torn down (a restart, a suspend, a delete, an
  eviction, the deadline).

Every time is a time the API server or the kubelet wrote, never the call's clock (only kept no later
than it), and each field is written once and never changed, so the status is a fixed point: fed
back, at any later moment, nothing moves. Older entries beyond the limit are dropped and counted in
``status.attemptsDropped``; every string is cut to a bound, so the history is at most
``MAX_HISTORY_BYTES`` whatever ran (a Job restarted 10,000 times included).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from hooks.core import conditions as cond
from hooks.core import deadlines, queueing
from hooks.core.barrier import evidence_time
from hooks.core.claims import utc
from hooks.core.evidence import COMPLETED, FAILED, jobset_state
from hooks.core.failurepolicy import disruption, ended_as, failed_container, first_failing
from hooks.core.historyentry import ordered
from hooks.core.jobset import KIND as JOBSET_KIND
from hooks.core.lifecycle import ENDS, Move
from hooks.core.reads import job_pods
from hooks.core.request import Spec, default_of, range_of
from hooks.core.vocab import TORN_DOWN, ConditionType, EndCause
from hooks.core.vocab import AttemptField as F
from hooks.core.work import DRAIN_STUCK, DRAINED, RESTARTING, SUCCEEDED, Context, Work
from hooks.core.work import FAILED as FAILED_PHASE
from podread.attempts import workload_name
from podread.constants import JOBSET_NAME_LABEL, REPLICATED_JOB_LABEL

Pod = Mapping[str, Any]
Entry = dict[str, Any]

DEFAULT_LIMIT, MAX_LIMIT = default_of(Spec, "attempts_history_limit"), range_of(Spec, "attempts_history_limit").high
"""``spec.attemptsHistoryLimit``: its default and largest value, as ``hooks.core.request.Spec`` declares them."""
MAX_HISTORY_BYTES = 144 * 1024
"""An upper bound of ``status.attempts`` as JSON, at ``MAX_LIMIT`` entries of the longest values
(about 14 KiB at the default limit; the checkpoint's keys, issue 33, added 8 KiB at the largest):
well inside the 1.5 MiB an object may have in etcd."""



def limit(spec: Spec) -> int:
    """``spec.attemptsHistoryLimit`` (its declared default when unset), kept within its declared
    range, 1..``MAX_LIMIT`` (the CRD refuses anything else: only a request not from the API server
    carries it)."""
    return range_of(Spec, "attempts_history_limit").clamp(spec.attempts_history_limit)


def failure_pods(ctx: Context, workload: str) -> list[Pod]:
    """The pods of the failed JobSet ``workload`` that tell why it failed (``Reader.
    attempt_failure_pods``, live), read at most once per call: the failure row's verdict and this
    history both read this answer. Raises ``PodReadError``."""
    return ctx.once.get(_pods_key(workload),
                        lambda: ctx.reader.attempt_failure_pods(ctx.namespace, workload))


def _pods_key(workload: str) -> tuple[str, str]:
    return ("attempt_failure_pods", workload)


def update(ctx: Context, work: Work, *, attempt: int, ended_by: Move | None) -> None:
    """Updates ``work.attempts`` (and ``work.attempts_dropped``) after the rows.

    ``attempt`` is the attempt the rows started from (after adoption); ``work.attempt`` where they
    left it. ``ended_by`` is the move of the teardown a row began (``hooks.core.lifecycle.Move``:
    suspend, delete, evict, deadline), ``None`` when none did; the attempt ends as the lifecycle's
    table says that move ends one (``lifecycle.ENDS``: ``Suspended``, ``Deleted``, ``Evicted``,
    ``DeadlineExceeded``). An entry is made
    for each of the two whose JobSet is observed or answered, and dated (``created``, ``started``)
    once the evidence shows when; ``attempt``'s is ended (once) and its drain recorded (once). Then
    only the last ``limit`` entries up to the later of the two are kept; the prior status' entries
    let go are counted in ``attemptsDropped``."""
    # An entry past the attempt the rows started from (the prior status' attempt, or the newer one a
    # lost write left, adopted) is none the hooks wrote (they write entries up to the attempt they
    # write): written by hand. The claim check holds on it (``AttemptsDisagree``) except where a
    # teardown row runs first; then it is let go uncounted, or the teardown would end it once the Job
    # reached its number (and the next call would end it again: no fixed point).
    written = [entry for entry in work.attempts if int(entry[F.ATTEMPT]) <= attempt]
    entries = {int(entry[F.ATTEMPT]): dict(entry) for entry in written}
    for number in sorted({attempt, work.attempt}):
        jobset = ctx.jobset(number)
        if number not in entries and (jobset is not None or _answered(work, workload_name(ctx.job, number))):
            entries[number] = {F.ATTEMPT: number, F.JOB_SET: workload_name(ctx.job, number)}
        if number in entries:
            _date(ctx, entries[number], workload_name(ctx.job, number), jobset)
    entry = entries.get(attempt)
    if entry is not None:
        if F.OUTCOME not in entry:
            _end(ctx, work, entry, attempt, ENDS.get(ended_by) if ended_by is not None else None)
        if _drains(entry) and F.DRAIN_SECONDS not in entry:
            _drain(ctx, work, entry)
    most = limit(ctx.observed.spec)
    kept = [number for number in sorted(entries) if number <= max(attempt, work.attempt)][-most:]
    # Only entries the hooks wrote are counted when let go: one made in this call and not kept is not
    # made at all, and one written by hand is no attempt that ran, so the count cannot grow on every call.
    work.attempts_dropped += sum(1 for entry in written if int(entry[F.ATTEMPT]) not in kept)
    work.attempts = [ordered(entries[number]) for number in kept]


def _answered(work: Work, name: str) -> bool:
    return any(child.get("kind") == JOBSET_KIND and (child.get("metadata") or {}).get("name") == name
               for child in work.children)


def _date(ctx: Context, entry: Entry, workload: str, jobset: Mapping[str, Any] | None) -> None:
    """Adds ``created`` (the observed JobSet's ``creationTimestamp``) and ``started`` (``started_at``
    over the pods this call read) to ``entry``, the attempt whose JobSet is named ``workload``, when
    it has none yet and the evidence says when."""
    if "created" not in entry:
        created = deadlines.time_or_none(((jobset or {}).get("metadata") or {}).get("creationTimestamp"))
        if created is not None:
            entry["created"] = _at(ctx, deadlines.stamp(created))
    if "started" not in entry:
        started = started_at([*job_pods(ctx), *(ctx.once.peek(_pods_key(workload)) or ())],
                             workload)
        if started is not None:
            entry["started"] = _at(ctx, deadlines.stamp(started))


def started_at(pods: Sequence[Pod], workload: str) -> datetime | None:
    """When the first of ``workload``'s pods (label ``jobset.sigs.k8s.io/jobset-name``) that the
    kubelet ran (phase ``Running``, ``Succeeded`` or ``Failed``) was started: the earliest such pod's
    ``status.startTime`` (set by its kubelet; kept in the cache, ``podread.slim``). ``None`` when no
    pod of it says so (none read, none scheduled or started yet). Each distinct ``startTime`` is read
    once: a gang's pods share a few (a sync reads all of its Job's pods, issue 32 item 4)."""
    texts: set[str] = set()
    for pod in pods:
        status = pod.get("status") or {}
        start = status.get("startTime")
        if (isinstance(start, str) and status.get("phase") in RAN
                and ((pod.get("metadata") or {}).get("labels") or {}).get(JOBSET_NAME_LABEL) == workload):
            texts.add(start)  # anything but a text is no time (``time_or_none``)
    known = [moment for moment in map(deadlines.time_or_none, texts) if moment is not None]
    return min(known) if known else None


RAN = frozenset({"Running", "Succeeded", "Failed"})
"""The pod phases reached only once the kubelet started the pod's containers."""


def _end(ctx: Context, work: Work, entry: Entry, attempt: int, ending: EndCause | None) -> None:
    """Ends ``entry`` when this call shows how ``attempt`` ended (the module doc): as ``ending`` says,
    the end of the teardown that began (``update``), else as the JobSet's own condition says; else
    leaves it."""
    if ending is not None:
        entry[F.OUTCOME] = ending
        entry[F.ENDED] = _at(ctx, _ending_time(ctx, work, ending))
        reason = _evicted_reason(ctx) if ending == EndCause.EVICTED else ""
        if reason:
            entry[F.REASON] = reason
        return
    jobset = ctx.jobset(attempt)
    state = jobset_state(jobset) if jobset is not None else ""
    if state == COMPLETED and work.phase == SUCCEEDED:
        entry[F.OUTCOME] = EndCause.SUCCEEDED
        entry[F.ENDED] = _at(ctx, _condition_time(jobset, COMPLETED))
        return
    judged = (work.last_failure.get("attempt") == attempt
              and (work.phase in (RESTARTING, FAILED_PHASE) or work.attempt > attempt))
    if state != FAILED or jobset is None or not judged:
        return
    entry[F.ENDED] = _at(ctx, _condition_time(jobset, FAILED))
    pods = ctx.once.peek(_pods_key(str(jobset["metadata"]["name"]))) or []
    facts = failure_facts(jobset, pods)
    entry.update(facts)  # its ``outcome`` is the failure's class (``failurepolicy.ended_as``)
    if work.phase == RESTARTING or work.attempt > attempt:
        cause = work.last_failure.get("cause")
        if isinstance(cause, str) and cause:
            entry[F.CAUSE] = cause


def _ending_time(ctx: Context, work: Work, ending: str) -> Any:
    """When a teardown began (``_at`` keeps it no later than ``now``, and reads ``None`` as ``now``):
    for the deadline, the Job's ``DeadlineExceeded`` condition's time; for an eviction, the
    Workload's ``Evicted`` condition's time; for a delete, the Job's ``deletionTimestamp``; for a
    suspend (and a delete whose request carries no ``deletionTimestamp``), the newest time the
    request's evidence carries (``barrier.evidence_time``: when the API server wrote this parent)."""
    if ending == EndCause.DEADLINE_EXCEEDED:
        marked = cond.get_condition(work.conditions, ConditionType.DEADLINE_EXCEEDED)
        when = marked.last_transition_time if marked is not None else None
        return when if isinstance(when, str) else None
    if ending == EndCause.EVICTED:
        workload = queueing.current_workload(ctx.observed) or {}
        return _condition_time(workload, "Evicted")
    if ending == EndCause.DELETED and deadlines.time_or_none(ctx.observed.deletion_timestamp) is not None:
        return ctx.observed.deletion_timestamp
    return deadlines.stamp(evidence_time(ctx))


def _evicted_reason(ctx: Context) -> str:
    """Kueue's reason (``Preempted``, ``InactiveWorkload``, ...; ``WorkloadMissing`` when a JobSet
    runs without an admitted Workload)."""
    return ctx.admission.reason


def _drains(entry: Entry) -> bool:
    """Whether the drain barrier waits after ``entry``'s end: a teardown, or a failure that restarted."""
    return entry.get(F.OUTCOME) in TORN_DOWN or F.CAUSE in entry


def _drain(ctx: Context, work: Work, entry: Entry) -> None:
    """While the attempt drains: ``drainStuck`` once ``DrainStuck`` is True; once ``Drained`` is
    True (the barrier passed in this call: every row that drains records it each call),
    ``drainSeconds`` from ``ended`` to ``Drained``'s ``lastTransitionTime`` (stamped from the
    request's evidence, ``barrier.evidence_time``), not to ``now``: answers to one cached parent
    version made a second apart wrote 0, 2 and 3 and the status never settled (issue 21)."""
    stuck = cond.get_condition(work.conditions, DRAIN_STUCK)
    if stuck is not None and stuck.status == cond.TRUE:
        entry[F.DRAIN_STUCK] = True
    drained = cond.get_condition(work.conditions, DRAINED)
    if drained is None or drained.status != cond.TRUE:
        return
    ended = deadlines.time_or_none(entry.get(F.ENDED))
    passed = deadlines.time_or_none(drained.last_transition_time) or utc(ctx.stamp)
    seconds = (utc(passed) - ended).total_seconds() if ended is not None else 0.0
    entry[F.DRAIN_SECONDS] = int(min(deadlines.MAX_SECONDS, max(0.0, seconds)))
    entry[F.DRAIN_STUCK] = bool(entry.get(F.DRAIN_STUCK))


def failure_facts(jobset: Mapping[str, Any], pods: Sequence[Pod]) -> Entry:
    """What a failed attempt's first failing pod (``first_failing``) and its JobSet tell:
    ``failedPod``, ``node``, ``failedReplicatedJob``, ``exitCode``, ``reason``, the deletion times
    of a pod being deleted, and ``outcome``: the failure's class (``failurepolicy.ended_as``, the one
    place a failure is classified: ``Failed``, or ``Preempted``)."""
    facts: Entry = {F.OUTCOME: ended_as(pods)}
    pod = first_failing(pods)
    if pod is not None:
        metadata, pod_spec = pod.get("metadata") or {}, pod.get("spec") or {}
        facts[F.FAILED_POD] = metadata.get("name")
        facts[F.NODE] = pod_spec.get("nodeName")
        facts[F.FAILED_REPLICATED_JOB] = (metadata.get("labels") or {}).get(REPLICATED_JOB_LABEL)
        container = failed_container(pod)
        if container is not None:
            facts[F.EXIT_CODE] = container[0]
        disrupted = disruption(pod)
        disrupted_by = str(disrupted.get("reason") or "") if disrupted is not None else ""
        facts[F.REASON] = (disrupted_by or str((pod.get("status") or {}).get(F.REASON) or "")
                           or (container[1] if container is not None else ""))
        facts.update(deletion_times(pod))
    if not facts.get(F.FAILED_REPLICATED_JOB):
        facts[F.FAILED_REPLICATED_JOB] = _failed_replicated_job(jobset)
    if not facts.get(F.REASON):
        facts[F.REASON] = _condition_reason(jobset, FAILED)
    return {key: value for key, value in facts.items() if value not in (None, "")}


def deletion_times(pod: Pod) -> Entry:
    """For a pod being deleted: ``failedPodGracePeriodEnds`` (its ``deletionTimestamp``, the delete
    time plus the grace period) and ``failedPodDeletionStarted`` (that less
    ``deletionGracePeriodSeconds``, when known). ``{}`` otherwise."""
    metadata = pod.get("metadata") or {}
    ends = deadlines.time_or_none(metadata.get("deletionTimestamp"))
    if ends is None:
        return {}
    times = {F.FAILED_POD_GRACE_PERIOD_ENDS: deadlines.stamp(ends)}
    grace = metadata.get("deletionGracePeriodSeconds")
    if isinstance(grace, int) and not isinstance(grace, bool) and 0 <= grace <= deadlines.MAX_SECONDS:
        earliest = datetime.min.replace(tzinfo=UTC)
        if ends - earliest >= timedelta(seconds=grace):  # not below datetime's range
            times[F.FAILED_POD_DELETION_STARTED] = deadlines.stamp(ends - timedelta(seconds=grace))
    return times


def _failed_replicated_job(jobset: Mapping[str, Any]) -> str:
    """The first replicated job the JobSet counts failed Jobs in (``status.replicatedJobsStatus``)."""
    statuses = (jobset.get("status") or {}).get("replicatedJobsStatus")
    for status in statuses if isinstance(statuses, list) else ():  # a request's JobSet: any shape
        failed = status.get("failed") if isinstance(status, Mapping) else None
        if isinstance(failed, int) and not isinstance(failed, bool) and failed > 0:
            return str(status.get("name") or "")
    return ""


def _condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any]:
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == type_ and condition.get("status") == cond.TRUE:
            return condition
    return {}


def _condition_time(obj: Mapping[str, Any], type_: str) -> Any:
    return _condition(obj, type_).get("lastTransitionTime")


def _condition_reason(obj: Mapping[str, Any], type_: str) -> str:
    return str(_condition(obj, type_).get("reason") or "")


def _at(ctx: Context, text: Any) -> str:
    """``text`` as a status time when it is one no later than ``now``, else the answer's stamp
    (``Context.stamp``: the request's evidence, the same for every answer to one observed state)."""
    moment = deadlines.time_or_none(text)
    return deadlines.stamp(moment if moment is not None and moment <= utc(ctx.now) else utc(ctx.stamp))
