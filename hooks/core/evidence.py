"""What the observed children say, apart from what the status claims (the status is a claim, the children are evidence).

Pure: reads an ``Observed`` only. ``newer_jobsets`` finds JobSets of an attempt past the status'
(a lost status write, or a stray), ``unadoptable`` says why one cannot be the step after a drained
attempt (``hooks.core.rows.mismatch.adopt`` adds the live pod reads); ``status_mismatch`` says when
the status disagrees with the JobSets present, so that the decision holds instead of dropping a
healthy workload or opening a gate on the status' word (the times, conditions and terminal phase
the policies read are checked in ``hooks.core.claims``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hooks.core.budget import most_spent
from hooks.core.failurepolicy import spends_no_restart
from hooks.core.lifecycle import jobset_disagreement
from hooks.core.observed import Observed
from hooks.core.vocab import ConditionStatus, ConditionType, Phase, Reason
from podread.attempts import attempt_in_name, attempt_number, workload_name
from podread.constants import ATTEMPT_LABEL

RESTARTING, SUSPENDING, SUSPENDED = Phase.RESTARTING, Phase.SUSPENDING, Phase.SUSPENDED
FAILED, COMPLETED = "Failed", "Completed"  # a JobSet's terminal states (its own words)
MAX_LISTED = 5


def newer_jobsets(observed: Observed) -> list[tuple[int, Mapping[str, Any]]]:
    """The observed JobSets, not being deleted, named ``<job>-<attempt>`` and labelled with that
    attempt, whose attempt is past ``status.attempt``: ``(attempt, jobset)`` sorted by attempt."""
    found = []
    for jobset in observed.jobsets:
        metadata = jobset["metadata"]
        value = attempt_number((metadata.get("labels") or {}).get(ATTEMPT_LABEL) or "")
        if metadata.get("deletionTimestamp") or value is None:
            continue
        if attempt_in_name(observed.name, str(metadata["name"])) == value > observed.status.attempt:
            found.append((value, jobset))
    return sorted(found, key=lambda pair: pair[0])


def current_attempt(observed: Observed) -> int:
    """The attempt the status would have if the newest of ``newer_jobsets`` were adopted: the larger
    of ``status.attempt`` and theirs. A candidate only: ``hooks.core.rows.mismatch.adopt`` decides."""
    return max([observed.status.attempt, *(attempt for attempt, _ in newer_jobsets(observed))])


def unadoptable(observed: Observed, newer: list[tuple[int, Mapping[str, Any]]]) -> str | None:
    """Why the newer JobSets ``newer`` (``newer_jobsets``, not empty) cannot be the step after a
    drained attempt whose status write was lost, in words naming the JobSet and ``status.attempt``;
    ``None`` when they can, as far as the children tell: the status is ``Restarting``,
    ``Suspending`` or ``Suspended`` (the steps that create attempt+1 after the barrier), there is
    one, of exactly ``status.attempt + 1``, and no other JobSet is observed (the barrier had
    passed). The pods are ``hooks.core.rows.mismatch.adopt``'s to read."""
    status = observed.status
    attempt, jobset = newer[-1]
    name = str(jobset["metadata"]["name"])
    said = f"JobSet {name} names attempt {attempt}, but status.attempt is {status.attempt}"
    if status.phase not in (RESTARTING, SUSPENDING, SUSPENDED):
        return (f"{said} and status.phase is not Restarting, Suspending or Suspended: only the step after a "
                "drained attempt creates a newer one")
    if len(newer) > 1 or attempt != status.attempt + 1:
        return f"{said}: the step after a drained attempt creates attempt {status.attempt + 1} only"
    others = sorted(str(js["metadata"]["name"]) for js in observed.jobsets if js["metadata"]["name"] != name)
    if others:
        noun = "JobSet" if len(others) == 1 else "JobSets"
        verb = "is" if len(others) == 1 else "are"
        return (f"{said}, and {noun} {list_names(others)} {verb} still observed: attempt {attempt} is created only "
                "once every JobSet of the Job is gone")
    return None


def charged_attempts(observed: Observed, attempt: int, phase: str) -> int:
    """How many ended attempts ``attempt`` (after adoption) in ``phase`` can have been charged
    (``hooks.core.budget.Charge``): one per attempt started after the first, and one more while a
    restart's attempt has not begun (Restarting; cut short by the active deadline; suspended before
    it began)."""
    # A restart is charged when Restarting begins; the active deadline may end the Job
    # before that restart's attempt starts, so a Job past its deadline may keep the extra one.
    cut_short = any(c.type == ConditionType.DEADLINE_EXCEEDED and c.status == ConditionStatus.TRUE
                    for c in observed.status.conditions)
    # Likewise a restart charged and then suspended before its attempt began: Suspending/Suspended
    # keep the extra one until the resume starts the next attempt.
    suspended_early = phase in (SUSPENDING, SUSPENDED)
    return attempt + (1 if phase == RESTARTING or cut_short or suspended_early else 0)


def restarts_allowed(observed: Observed, attempt: int, phase: str) -> int:
    """The most restarts (``status.restarts``, and ``status.restartsByCause`` summed) ``attempt``
    can have had in ``phase``: what the restart budget says its charged attempts can have spent
    (``hooks.core.budget.most_spent`` of ``charged_attempts``). Both invariants ask it: this
    module's ``status_mismatch`` and ``hooks.core.claims.restarts_by_cause``."""
    return most_spent(charged_attempts(observed, attempt, phase))


def status_mismatch(observed: Observed, attempt: int, phase: str) -> tuple[str, str] | None:
    """Whether the status (``attempt`` after adoption, ``phase``, ``restarts``) disagrees with the
    observed JobSets, or ``restartsByClass`` with ``restarts`` (each restart that spent a budget is
    one of both: a class counted past ``restarts`` would shift what the user budget has spent,
    ``hooks.core.budget.spent_of``). Reads only ``observed``. Returns ``(reason, message)`` or ``None``.

    A healthy JobSet is one not being deleted and not finished (Failed or Completed). Which phase may
    stand next to the current attempt's JobSet is the lifecycle's table
    (``hooks.core.lifecycle.jobset_disagreement``: Restarting only next to a failed one, Suspending
    and Suspended not next to a running one, unless a teardown's gate that lets it run waits).
    """
    job = observed.name
    running = [js for js in observed.jobsets if healthy(js)]
    names = [str(js["metadata"]["name"]) for js in running]
    current = workload_name(job, attempt)
    if len(running) > 1:
        return Reason.SEVERAL_WORKLOADS, (f"JobSets {list_names(names)} all run, but a Job has one workload at a time "
                                    f"(status.attempt is {observed.status.attempt})")
    if running and names[0] != current:
        return Reason.WORKLOAD_NOT_CURRENT, (f"JobSet {names[0]} runs, but status.attempt is {attempt} "
                                      f"(JobSet {current})")
    present = next((js for js in observed.jobsets if js["metadata"]["name"] == current
                    and not js["metadata"].get("deletionTimestamp")), None)
    disagrees = None if present is None else jobset_disagreement(observed.status, phase, current, jobset_state(present))
    if disagrees is not None:
        return Reason.PHASE_DISAGREES, disagrees
    restarts = observed.status.restarts
    if restarts > restarts_allowed(observed, attempt, phase):
        return Reason.RESTARTS_DISAGREE, f"status.restarts is {restarts}, more than attempt {attempt} can have had"
    if phase == RESTARTING and restarts == 0 and not _uncounted_restart(observed, attempt):
        return Reason.RESTARTS_DISAGREE, "status.phase is Restarting, but status.restarts records no restart"
    # every restart that spent a budget is one of ``restarts`` and one of its class (hooks.core.budget.spend)
    by_class = sum(observed.status.restarts_by_class.values())
    if by_class > restarts:
        return Reason.RESTARTS_DISAGREE, (f"status.restartsByClass counts {by_class} restarts, more than "
                                          f"status.restarts ({restarts})")
    return None


def _uncounted_restart(observed: Observed, attempt: int) -> bool:
    """Whether ``status.lastFailure`` records a restart of ``attempt`` that spends no restart
    (failure policy ``RestartJobIgnoreMaxRestarts``): Restarting with restarts 0 is then
    what the steps give."""
    last = observed.status.last_failure
    return spends_no_restart(last.get("action")) and last.get("attempt") == attempt


def healthy(jobset: Mapping[str, Any]) -> bool:
    """A JobSet that is not being deleted and has not finished: a workload that runs."""
    return not jobset["metadata"].get("deletionTimestamp") and jobset_state(jobset) == ""


def jobset_state(jobset: Mapping[str, Any]) -> str:
    """``"Failed"``, ``"Completed"`` or ``""`` from a JobSet's conditions or ``terminalState``. A
    JobSet without conditions (a running one, as often as not) builds no set of them: asked about four
    times a sync (issue 32 item 4)."""
    status = jobset.get("status") or {}
    conditions = status.get("conditions")
    true_types = {c.get("type") for c in conditions if c.get("status") == "True"} if conditions else ()
    terminal = status.get("terminalState")
    if "Failed" in true_types or terminal == "Failed":
        return FAILED
    if "Completed" in true_types or terminal == "Completed":
        return COMPLETED
    return ""


def list_names(names: list[str], *, cut: int | None = 80) -> str:
    """Names up to five names (already sorted), each cut to ``cut`` characters (``None``: whole),
    then "and N more"."""
    text = ", ".join(name[:cut] for name in names[:MAX_LISTED])
    if len(names) > MAX_LISTED:
        text += f" and {len(names) - MAX_LISTED} more"
    return text
