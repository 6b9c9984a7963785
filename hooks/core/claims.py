"""The status fields the policies act on, checked against what the API server set: anyone with
write access to the status subresource can write a claim, so none is acted on unchecked.

Pure: reads an ``Observed`` (its status, spec, JobSets and the Job's own ``creationTimestamp``) and
the decision's ``now``; never the wall clock, never a pod. ``disagreement`` says, naming the field,
when a claim of the status disagrees with the evidence, so that the decision holds (row 3,
``StatusMismatch``) instead of ending a run, dropping a JobSet or deleting the Job on the status'
word. A time is read as the API server admits it (``hooks.core.apitime``: lower-case ``t``/``z``,
any fraction, any offset); one that cannot be counted with (it names no instant, or is out of range)
is a claim that disagrees: never a 5xx, and never a 4xx either (a 4xx would stop every sync,
suspend included).

The claims and their evidence:

- ``status.startTime``: not before the Job was created (``metadata.creationTimestamp``), not after
  ``now``; missing only while nothing says the Job has run, when ``activeDeadlineSeconds`` is set
  (a removed ``startTime`` must not restart the deadline from the current attempt);
- ``status.conditions[DeadlineExceeded]`` True: the deadline counted from the checked
  ``startTime`` passed, or the teardown is under way (``Terminating``, no healthy JobSet);
- a terminal ``status.phase``: the current attempt's JobSet is not running; with
  ``ttlSecondsAfterFinished`` (the Job is deleted) it is also proven (``terminal_evidence``);
- ``status.completionTime``: only in a terminal phase; not before the Job was created nor before
  the current JobSet's own terminal condition, not after ``now``;
- ``status.restartsByCause``: not more restarts than the attempts can have had;
- ``status.restartsByClass``: not more restarts than the attempts can have had (issue 34; not more
  than ``restarts`` either: ``hooks.core.evidence``);
- ``status.attempts``: no entry past the status' attempt (the hooks make entries only for the
  attempts they run: one past is written by someone else, and acting on it would end an attempt
  that never ran, call after call);
- ``status.excludedNodes``: every node it keeps out is one an attempt's ``failedNodes`` blames
  (``hooks.core.exclusion.unsupported``): a status that names another node would keep a healthy node
  out of every next attempt (one that drops a real exclusion needs no claim: the exclusions are derived
  again from the attempts each call).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from hooks.core import deadlines, exclusion
from hooks.core.evidence import COMPLETED, FAILED, healthy, jobset_state, restarts_allowed
from hooks.core.jobset import is_last_attempt
from hooks.core.observed import Observed
from hooks.core.status import Condition
from hooks.core.vocab import ConditionStatus, ConditionType, Phase, Reason
from podread.attempts import workload_name

CLOCK_SKEW = timedelta(seconds=60)
"""How far apart the clocks that stamp the compared times may be. ``startTime`` is a JobSet's
``creationTimestamp`` (the API server's clock) or the hook's ``now``; ``completionTime`` is the
hook's ``now``, compared with a JobSet condition the JobSet controller stamped: a hook replica whose
clock lags by less than this is not a status that disagrees. An edited time gains at most this much."""

TERMINATING, RUNNING, RESTARTING = Phase.TERMINATING, Phase.RUNNING, Phase.RESTARTING
SUCCEEDED, FAILED_PHASE = Phase.SUCCEEDED, Phase.FAILED
TERMINAL = (SUCCEEDED, FAILED_PHASE)
RAN_PHASES = (RUNNING, RESTARTING, TERMINATING)
DEADLINE_EXCEEDED = ConditionType.DEADLINE_EXCEEDED
SHOWN = 40
"""How many characters of a claimed value a message repeats."""

Disagreement = tuple[str, str]


def disagreement(observed: Observed, attempt: int, phase: str, now: datetime) -> Disagreement | None:
    """Whether a claim of ``observed.status`` the policies act on disagrees with the evidence.
    ``attempt`` and ``phase`` are the status' after adoption (``hooks.core.rows.mismatch.adopt``).
    Returns ``(reason, message)``, the message naming the field, or ``None``."""
    for check in (start_time, deadline_exceeded, terminal, completion_time, restarts_by_cause, restarts_by_class,
                  attempts_history, excluded_nodes):
        found = check(observed, attempt, phase, now)
        if found is not None:
            return found
    return None


def moment(text: str) -> datetime | None:
    """A time as the API server admits it (``hooks.core.deadlines.parse_time``), as an aware
    datetime in UTC; ``None`` for ``""``. Raises ``ValueError`` for a text the API server refuses
    and for one it admits that names no instant (``hooks.core.apitime.Unreadable``)."""
    return deadlines.parse_time(text)


def job_created(observed: Observed) -> datetime | None:
    """The Job's ``metadata.creationTimestamp`` (set by the API server), ``None`` when absent or
    unusable: then nothing is checked against it."""
    try:
        return moment(observed.creation_timestamp)
    except ValueError:
        return None


def has_run(observed: Observed) -> str:
    """What in the status says that the Job has run (and so had a ``startTime``), in words; ``""``
    when nothing does: phase Running, Restarting or Terminating, restarts counted, a failure or a
    cause recorded."""
    status = observed.status
    if status.phase in RAN_PHASES:
        return f"status.phase is {status.phase}"
    if status.restarts > 0:
        return f"status.restarts is {status.restarts}"
    if status.last_failure:
        return "status.lastFailure is set"
    if status.restarts_by_cause:
        return "status.restartsByCause is set"
    return ""


def start_time(observed: Observed, attempt: int, phase: str, now: datetime) -> Disagreement | None:
    """``status.startTime``: a time between the Job's creation and ``now`` (``CLOCK_SKEW`` either
    way); missing with ``activeDeadlineSeconds`` set only while nothing says the Job has run."""
    text = observed.status.start_time
    if not text:
        ran = has_run(observed)
        if ran and observed.spec.active_deadline_seconds is not None:
            return Reason.START_TIME_DISAGREES, (f"status.startTime is missing, but {ran}: the Job has run, and "
                                          "spec.activeDeadlineSeconds is not counted again from a later attempt")
        return None
    return _within("StartTimeDisagrees", "status.startTime", text, observed, now)


def _within(reason: str, field: str, text: str, observed: Observed, now: datetime,
            *, not_before: tuple[datetime, str] | None = None) -> Disagreement | None:
    """Whether ``text`` (the value of ``field``) is a time not before the Job was created (nor
    before ``not_before``, a moment and its words) and not after ``now``, ``CLOCK_SKEW`` allowed."""
    shown = text[:SHOWN]
    try:
        at = moment(text)
    except ValueError:
        return reason, f"{field} {shown!r} is not a time that can be counted from"
    assert at is not None
    created = job_created(observed)
    if created is not None and before(at, created):
        return reason, (f"{field} {shown} is before the Job was created "
                        f"(metadata.creationTimestamp {observed.creation_timestamp[:SHOWN]})")
    if not_before is not None and before(at, not_before[0]):
        return reason, f"{field} {shown} is before {not_before[1]}"
    if before(utc(now), at):  # words without now: a held status stays the same call after call
        return reason, f"{field} {shown} is in the future"
    return None


def before(at: datetime, than: datetime) -> bool:
    """Whether ``at`` is earlier than ``than`` by more than ``CLOCK_SKEW``. Compared as a difference,
    which never overflows, at the ends of ``datetime``'s range too (``than - CLOCK_SKEW`` would)."""
    return than - at > CLOCK_SKEW


def deadline_passed(observed: Observed, now: datetime) -> bool:
    """Whether ``spec.activeDeadlineSeconds`` is set and has passed, counted from ``status.startTime``
    (checked by ``start_time`` first). A time that cannot be counted with has not passed."""
    try:
        return deadlines.passed(deadlines.deadline_at(observed.spec, observed.status.start_time), now)
    except (ValueError, OverflowError):
        return False


def deadline_exceeded(observed: Observed, attempt: int, phase: str, now: datetime) -> Disagreement | None:
    """``status.conditions[DeadlineExceeded]`` True, outside a terminal phase, is honoured when the
    deadline passed by the evidence, or when its teardown is under way (``Terminating`` and no
    healthy JobSet observed: raising the limit afterwards does not bring the workload back)."""
    if phase in TERMINAL or not _true(observed, DEADLINE_EXCEEDED):
        return None
    if deadline_passed(observed, now):
        return None
    if phase == TERMINATING and not any(healthy(js) for js in observed.jobsets):
        return None
    field = "status.conditions[DeadlineExceeded] is True"
    seconds = observed.spec.active_deadline_seconds
    if seconds is None:
        return Reason.DEADLINE_EXCEEDED_DISAGREES, f"{field}, but spec.activeDeadlineSeconds is not set"
    if not observed.status.start_time:
        return Reason.DEADLINE_EXCEEDED_DISAGREES, f"{field}, but status.startTime is not recorded"
    return Reason.DEADLINE_EXCEEDED_DISAGREES, (
        f"{field}, but spec.activeDeadlineSeconds ({str(seconds)[:SHOWN]}) counted "
        f"from status.startTime {observed.status.start_time[:SHOWN]} has not passed")


def terminal(observed: Observed, attempt: int, phase: str, now: datetime) -> Disagreement | None:
    """A terminal ``status.phase`` while the current attempt's JobSet runs disagrees; with
    ``spec.ttlSecondsAfterFinished`` set (the hooks will delete the Job) it must also be proven
    (``terminal_evidence``)."""
    if phase not in TERMINAL:
        return None
    name = workload_name(observed.name, attempt)
    current = _jobset(observed, name)
    if current is not None and healthy(current):
        return Reason.PHASE_DISAGREES, f"status.phase is {phase}, but JobSet {name} runs"
    if observed.spec.ttl_seconds_after_finished is None:
        return None
    proof = terminal_evidence(observed, attempt, phase, now)
    if proof:
        return None
    seen = f"JobSet {name} is {(jobset_state(current) or 'being deleted').lower()}" if current is not None \
        else f"JobSet {name} is not observed"
    if phase == SUCCEEDED:
        return Reason.PHASE_DISAGREES, (f"status.phase is Succeeded, but {seen}, not completed: "
                                  "spec.ttlSecondsAfterFinished deletes the Job only once that is shown")
    return Reason.PHASE_DISAGREES, (f"status.phase is Failed, but {seen}, not failed, and no status.conditions[Failed] "
                              "shows why (DeadlineExceeded past the deadline, AttemptLimitReached at the last "
                              "attempt): spec.ttlSecondsAfterFinished deletes the Job only once that is shown")


def terminal_evidence(observed: Observed, attempt: int, phase: str, now: datetime) -> bool:
    """Whether the evidence shows the terminal ``phase``: Succeeded, the current JobSet observed
    Completed; Failed, the current JobSet observed Failed, or condition ``Failed`` with reason
    ``DeadlineExceeded`` and the deadline passed (``deadline_passed``) or its teardown ended
    (``torn_down_after_a_deadline``), or with reason
    ``AttemptLimitReached`` at the last attempt (``is_last_attempt``)."""
    current = _jobset(observed, workload_name(observed.name, attempt))
    state = jobset_state(current) if current is not None else ""
    if phase == SUCCEEDED:
        return state == COMPLETED
    if state == FAILED:
        return True
    failed = _condition(observed, ConditionType.FAILED)
    reason = failed.reason if failed is not None and _true(observed, ConditionType.FAILED) else None
    if reason == Reason.DEADLINE_EXCEEDED:
        return deadline_passed(observed, now) or torn_down_after_a_deadline(observed)
    return reason == Reason.ATTEMPT_LIMIT_REACHED and is_last_attempt(attempt)


def torn_down_after_a_deadline(observed: Observed) -> bool:
    """The end of a deadline teardown whose limit was raised while it drained (``deadline_exceeded``
    honours that teardown, so its Failed answer must stand when fed back): ``DeadlineExceeded`` True,
    a ``startTime`` recorded (the Job ran), and no JobSet of the Job left: nothing runs to lose."""
    return _true(observed, DEADLINE_EXCEEDED) and bool(observed.status.start_time) and not observed.jobsets


def completion_time(observed: Observed, attempt: int, phase: str, now: datetime) -> Disagreement | None:
    """``status.completionTime``: set only in a terminal phase; a time not before the Job was
    created nor before the current JobSet's own terminal condition (``lastTransitionTime``), and not
    after ``now`` (``CLOCK_SKEW`` either way)."""
    text = observed.status.completion_time
    if not text:
        return None
    if phase not in TERMINAL:
        return Reason.COMPLETION_TIME_DISAGREES, (f"status.completionTime is {text[:SHOWN]}, but status.phase is "
                                           f"{phase or 'unset'}: only a Succeeded or Failed Job has completed")
    name = workload_name(observed.name, attempt)
    ended = _ended_at(_jobset(observed, name))
    not_before = (ended[0], f"JobSet {name} became {ended[1]} ({deadlines.stamp(ended[0])})") if ended else None
    return _within("CompletionTimeDisagrees", "status.completionTime", text, observed, now, not_before=not_before)


def restarts_by_cause(observed: Observed, attempt: int, phase: str, now: datetime) -> Disagreement | None:
    """``status.restartsByCause``: every restart, counted or not, is one charge paid once
    (``hooks.core.budget.spend``) and leads to the next attempt, so the counts add up to no more
    than the restart budget says the charged attempts can have spent
    (``hooks.core.evidence.restarts_allowed``: ``budget.most_spent``), as ``restarts`` may be."""
    return _counted_within(observed.status.restarts_by_cause, "status.restartsByCause",
                           Reason.RESTARTS_BY_CAUSE_DISAGREE, observed, attempt, phase)


def restarts_by_class(observed: Observed, attempt: int, phase: str, now: datetime) -> Disagreement | None:
    """``status.restartsByClass``: every count is a restart that spent its class's budget, one paid
    charge each (``hooks.core.budget.spend``), so they add up to no more than the charged attempts
    can have spent (``hooks.core.evidence.restarts_allowed``). A count written down is no claim the
    hooks act on: what a budget spent is the largest of the claims and the history's count
    (``hooks.core.budget.spent_of``), so it frees nothing; it is not held either, because the
    history's count depends on the rules (a restart under a rule whose action was edited since), and
    a spec edit must not stop a Job."""
    return _counted_within(observed.status.restarts_by_class, "status.restartsByClass",
                           Reason.RESTARTS_BY_CLASS_DISAGREE, observed, attempt, phase)


def _counted_within(counts: Mapping[str, int], field: str, reason: Reason, observed: Observed, attempt: int,
                    phase: str) -> Disagreement | None:
    """``reason`` when the restarts ``counts`` (the status' ``field``) add up to more than the
    charged attempts can have spent (``hooks.core.evidence.restarts_allowed``), else ``None``."""
    total = sum(counts.values())
    allowed = restarts_allowed(observed, attempt, phase)
    if total > allowed:
        return reason, f"{field} counts {total} restarts, more than attempt {attempt} can have had ({allowed})"
    return None


def attempts_history(observed: Observed, attempt: int, phase: str, now: datetime) -> Disagreement | None:
    """``status.attempts``: every entry is of an attempt up to ``attempt`` (after adoption)."""
    past = sorted(int(entry["attempt"]) for entry in observed.status.attempts if int(entry["attempt"]) > attempt)
    if past:
        return Reason.ATTEMPTS_DISAGREE, (f"status.attempts has an entry for attempt {past[0]}, past the status' "
                                          f"attempt {attempt}")
    return None


def excluded_nodes(observed: Observed, attempt: int, phase: str, now: datetime) -> Disagreement | None:
    """``status.excludedNodes``: every entry supported by ``status.attempts`` (``exclusion.unsupported``)."""
    found = exclusion.unsupported(observed.status)
    if found:
        return Reason.EXCLUDED_NODES_DISAGREE, f"status.excludedNodes excludes {found}"
    return None


def _ended_at(jobset: Mapping[str, Any] | None) -> tuple[datetime, str] | None:
    """When ``jobset`` became Completed or Failed (its condition's ``lastTransitionTime``) and which,
    or ``None`` when it has not, or the time is unusable."""
    if jobset is None:
        return None
    state = jobset_state(jobset)
    for condition in (jobset.get("status") or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == state and condition.get("status") == "True":
            try:
                at = moment(str(condition.get("lastTransitionTime") or ""))
            except ValueError:
                return None
            return (at, state) if at is not None else None
    return None


def _jobset(observed: Observed, name: str) -> Mapping[str, Any] | None:
    return next((js for js in observed.jobsets if js["metadata"]["name"] == name), None)


def _condition(observed: Observed, type_: str) -> Condition | None:
    return next((c for c in observed.status.conditions if c.type == type_), None)


def _true(observed: Observed, type_: str) -> bool:
    found = _condition(observed, type_)
    return found is not None and found.status == ConditionStatus.TRUE


def utc(now: datetime) -> datetime:
    """``now`` in UTC (a naive ``now`` is taken to be UTC already)."""
    return now.astimezone(UTC) if now.tzinfo is not None else now.replace(tzinfo=UTC)
