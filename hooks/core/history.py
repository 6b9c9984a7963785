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
- ``class``, ``classEvidence`` and ``failedNodes`` (issue 34): the failure class the failure row
  named (``hooks.core.failureclass``: the verdict's, read through ``failure_class`` in the same
  call), the evidence it named it from, and the nodes it blames (node and infrastructure
  classes); for an eviction the class of Kueue's reason, for the deadline ``deadline``. Written
  once, never read back to spend a budget (``hooks.core.budget.floor`` only counts them);
- ``drainSeconds`` and ``drainStuck`` (whether ``DrainStuck`` was True meanwhile), for an attempt
  torn down (a restart, a suspend, an eviction, the deadline; a deleted Job is gone once drained):
  from the drain's start (``ended``, or the end of a checkpoint request before it) until the API
  server stored the status that said the barrier passed, written by the call after that write
  (``_drained``: the pass leaves no dated trace of its own in the call that finds it).

Every time is a time the API server or the kubelet wrote, never the call's clock (only kept no later
than it), and each field is written once and never changed, so the status is a fixed point: fed
back, at any later moment, nothing moves (once a drain's pass is written, its ``drainSeconds`` is
added in the next answer, then nothing moves: ``tests/support/settling.py``). Older entries beyond
the limit are dropped and counted in ``status.attemptsDropped``; every string is cut to a bound, so
the history is at most ``MAX_HISTORY_BYTES`` whatever ran (a Job restarted 10,000 times included).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from hooks.core import conditions as cond
from hooks.core import deadlines, failureclass, queueing
from hooks.core.barrier import evidence_time
from hooks.core.claims import utc
from hooks.core.evidence import COMPLETED, FAILED, jobset_state
from hooks.core.failureclass import Classified, disruption, failed_container, first_failing
from hooks.core.historyentry import ordered
from hooks.core.jobset import KIND as JOBSET_KIND
from hooks.core.lifecycle import ENDS, Move
from hooks.core.reads import job_pods
from hooks.core.request import Spec, default_of, range_of
from hooks.core.vocab import TORN_DOWN, AttemptField, ConditionType, EndCause, members
from hooks.core.work import DRAIN_STUCK, DRAINED, RESTARTING, SUCCEEDED, Context, Work
from hooks.core.work import FAILED as FAILED_PHASE
from podread.attempts import workload_name
from podread.constants import JOBSET_NAME_LABEL, REPLICATED_JOB_LABEL
from podread.errors import PodReadError

F = members(AttemptField)
"""``AttemptField``'s members, read on every call (``hooks.core.vocab.members``)."""

Pod = Mapping[str, Any]
Entry = dict[str, Any]

DEFAULT_LIMIT, MAX_LIMIT = default_of(Spec, "attempts_history_limit"), range_of(Spec, "attempts_history_limit").high
"""``spec.attemptsHistoryLimit``: its default and largest value, as ``hooks.core.request.Spec`` declares them."""
MAX_HISTORY_BYTES = 400 * 1024
"""An upper bound of ``status.attempts`` as JSON, at ``MAX_LIMIT`` entries of the longest values
(about 40 KiB at the default limit; the checkpoint's keys, issue 33, added 8 KiB at the largest, the
class's, issue 34, 235 KiB: eight node names of 253 characters an entry): well inside the 1.5 MiB
an object may have in etcd."""



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


def failure_class(ctx: Context, workload: str, pods: Sequence[Pod] | None, unread: str = "") -> Classified:
    """The class of the failed JobSet ``workload`` whose telling pods are ``pods`` (``None``: their
    read failed, ``unread`` says why), named once per call (``hooks.core.failureclass``): the
    failure row's verdict and this history read the same value. Reads the nodes
    ``failureclass.nodes_to_read`` names (``Reader.node_states``, as the stuck-drain check does:
    a healthy node may be answered from the Node watch or cache, anything else by a GET) when no pod
    says why; a failed node read is no evidence (the class is then ``unknown``)."""
    def named() -> Classified:
        if pods is None:
            return failureclass.unread(unread)
        names = failureclass.nodes_to_read(pods)
        try:
            nodes = ctx.reader.node_states(names) if names else None
        except PodReadError:
            nodes = None
        return failureclass.classify(pods, nodes)
    return ctx.once.get(_class_key(workload), named)


def _class_key(workload: str) -> tuple[str, str]:
    return ("failure_class", workload)


def judged(ctx: Context, workload: str, classified: Classified) -> Classified:
    """Notes ``classified``, the class the failure verdict gave the failed JobSet ``workload``
    (the default table's, or the class a matching failure-policy rule assigns:
    ``hooks.core.failurepolicy.judge``), so that the history records the class the budget was
    charged by, named once per call. Returns the class noted (the first, if noted twice)."""
    return ctx.once.get(_verdict_key(workload), lambda: classified)


def _verdict_key(workload: str) -> tuple[str, str]:
    return ("failure_verdict", workload)


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
        jobset, name = ctx.jobset(number), workload_name(ctx.job, number)
        if number not in entries and (jobset is not None or _answered(work, name)):
            entries[number] = {F.ATTEMPT: number, F.JOB_SET: name}
        if number in entries:
            _date(ctx, entries[number], name, jobset)
    entry = entries.get(attempt)
    if entry is not None:
        if F.OUTCOME not in entry:
            _end(ctx, work, entry, attempt, ENDS.get(ended_by) if ended_by is not None else None)
        if _drains(entry) and F.DRAIN_SECONDS not in entry:
            _drain(ctx, work, entry)
    for number in (attempt - 1, attempt):  # the teardown's attempt: the current one, or the one before it
        _drained(ctx, entries.get(number), next((e for e in written if e[F.ATTEMPT] == number), None))
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
            entry["created"] = _at(ctx, deadlines.stamp(created), canonical=True)
    if "started" not in entry:
        started = started_at([*job_pods(ctx), *(ctx.once.peek(_pods_key(workload)) or ())],
                             workload)
        if started is not None:
            entry["started"] = _at(ctx, deadlines.stamp(started), canonical=True)


def started_at(pods: Sequence[Pod], workload: str) -> datetime | None:
    """When the first of ``workload``'s pods (label ``jobset.sigs.k8s.io/jobset-name``) that the
    kubelet ran (phase ``Running``, ``Succeeded`` or ``Failed``) was started: the earliest such pod's
    ``status.startTime`` (set by its kubelet; kept in the cache, ``podread.slim``). ``None`` when no
    pod of it says so (none read, none scheduled or started yet). Each distinct ``startTime`` is read
    once: a gang's pods share a few (a sync reads all of its Job's pods, issue 32 item 4), and a pod
    whose text is taken already is not looked at further (adding it again would change nothing); nor
    is a pod whose status is the very object whose text was taken last (slim pods of one phase and
    start share one, ``podread.slim``: a gang's 64 pods hold one or a few, issue 32 item 4)."""
    texts: set[str] = set()
    taken: object = None
    for pod in pods:
        status = pod.get("status") or {}
        if status is taken:
            continue
        start = status.get("startTime")
        if (isinstance(start, str) and start not in texts and status.get("phase") in RAN
                and ((pod.get("metadata") or {}).get("labels") or {}).get(JOBSET_NAME_LABEL) == workload):
            texts.add(start)  # anything but a text is no time (``time_or_none``)
            taken = status
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
        ended = failureclass.evicted(reason) if ending == EndCause.EVICTED else (
            failureclass.DEADLINE if ending == EndCause.DEADLINE_EXCEEDED else None)
        if ended is not None:
            entry.update(class_facts(ended))
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
    workload = str(jobset["metadata"]["name"])
    pods = ctx.once.peek(_pods_key(workload)) or []
    facts = failure_facts(jobset, pods, ctx.once.peek(_verdict_key(workload)) or ctx.once.peek(_class_key(workload)))
    entry.update(facts)  # its ``outcome`` and ``class`` are the failure row's (``failureclass``)
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
    """While the attempt drains: ``drainStuck`` once ``DrainStuck`` is True."""
    stuck = cond.get_condition(work.conditions, DRAIN_STUCK)
    if stuck is not None and stuck.status == cond.TRUE:
        entry[F.DRAIN_STUCK] = True


def _drained(ctx: Context, entry: Entry | None, prior: Entry | None) -> None:
    """``drainSeconds`` and ``drainStuck`` of ``entry`` (an attempt torn down, ``prior`` as the
    request's status has it), written once, in the first call whose request carries the write that
    said its drain barrier passed: ``prior`` ended (the teardown's first answer runs the barrier, so
    its ``Drained`` is this teardown's) and ``Drained`` is True. ``drainSeconds`` is from the drain's
    start (``drain_start``) to when the API server stored that write (``Observed.status_written``:
    the barrier passed before it, so it overstates the drain by the hooks' delay, at most a resync,
    never understates it); the same in every answer to that request, and kept once written (the
    status a fixed point). Pods leave no dated trace once gone, so no time the cluster's objects
    carry can date the pass, and the call's clock would move with every answer (issue 21). Bounded:
    a write time that is unreadable or later than ``now`` is not believed (the answer's evidence
    stamp instead, ``Context.stamp``, never later than ``now``: a request built by hand, without
    ``managedFields``, is dated by its clock); never negative, at most ``MAX_SECONDS``."""
    if entry is None or prior is None or F.DRAIN_SECONDS in entry or not (_drains(entry) and _drains(prior)):
        return
    drained = cond.get_condition(ctx.observed.status.conditions, DRAINED)
    if drained is None or drained.status != cond.TRUE:
        return
    written = deadlines.time_or_none(ctx.observed.status_written)
    passed = written if written is not None and written <= utc(ctx.now) else utc(ctx.stamp)
    start = drain_start(entry)
    seconds = (passed - start).total_seconds() if start is not None else 0.0
    entry[F.DRAIN_SECONDS] = int(min(deadlines.MAX_SECONDS, max(0.0, seconds)))
    entry[F.DRAIN_STUCK] = bool(entry.get(F.DRAIN_STUCK))


def class_facts(classified: Classified) -> Entry:
    """An entry's ``class``, ``classEvidence`` and ``failedNodes`` (when it blames nodes)."""
    facts: Entry = {F.CLASS: classified.klass.value, F.CLASS_EVIDENCE: classified.evidence}
    if classified.nodes:
        facts[F.FAILED_NODES] = list(classified.nodes)
    return facts


def drain_start(entry: Mapping[str, Any]) -> datetime | None:
    """When ``entry``'s drain began: its ``ended``, or, after a checkpoint before the drain
    (``hooks.core.checkpoint``), the later time its request was acknowledged or expired (the JobSet
    ran until then). ``None`` when ``ended`` is not a time."""
    times = [deadlines.time_or_none(entry.get(key)) for key in (F.ENDED, F.CHECKPOINT_ACKNOWLEDGED,
                                                                 F.CHECKPOINT_EXPIRED)]
    return None if times[0] is None else max(t for t in times if t is not None)


def failure_facts(jobset: Mapping[str, Any], pods: Sequence[Pod], classified: Classified | None = None) -> Entry:
    """What a failed attempt's first failing pod (``first_failing``) and its JobSet tell:
    ``failedPod``, ``node``, ``failedReplicatedJob``, ``exitCode``, ``reason``, the deletion times
    of a pod being deleted, ``class``, ``classEvidence`` and ``failedNodes`` (``classified``, the
    failure row's, ``failure_class``; from the pods alone when it named none in this call) and
    ``outcome`` (``failureclass.outcome`` of the class: ``Failed``, or ``Preempted``)."""
    named = classified if classified is not None else failureclass.classify(pods)
    facts: Entry = {F.OUTCOME: failureclass.outcome(named.klass), **class_facts(named)}
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


def _at(ctx: Context, text: Any, *, canonical: bool = False) -> str:
    """``text`` as a status time when it is one no later than ``now``, else the answer's stamp
    (``Context.stamp``: the request's evidence, the same for every answer to one observed state).
    ``canonical``: ``text`` is ``deadlines.stamp``'s own writing, kept as it is rather than written
    again (a time read from a stamp is written as that very stamp; issue 32 item 4)."""
    moment = deadlines.time_or_none(text)
    if moment is not None and moment <= utc(ctx.now):
        return text if canonical else deadlines.stamp(moment)
    return deadlines.stamp(utc(ctx.stamp))
