"""What the observed children say, apart from what the status claims (issue 12: status is a claim).

Pure: reads an ``Observed`` only. ``current_attempt`` adopts a newer JobSet (a lost status write);
``status_mismatch`` says when the status disagrees with the JobSets present, so that the decision
holds instead of dropping a healthy workload or opening a gate on the status' word.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from hooks.core.jobset import workload_name
from hooks.core.observed import Observed
from podread.constants import ATTEMPT_LABEL

RESTARTING, SUSPENDING, SUSPENDED = "Restarting", "Suspending", "Suspended"
FAILED, COMPLETED = "Failed", "Completed"
ATTEMPT_VALUE = re.compile(r"0|[1-9][0-9]{0,8}")
MAX_LISTED = 5


def attempt_in_name(job: str, name: str) -> int | None:
    """The attempt a workload name ``<job>-<attempt>`` names, or ``None`` for any other name."""
    prefix = f"{job}-"
    if name.startswith(prefix) and ATTEMPT_VALUE.fullmatch(name[len(prefix):]):
        return int(name[len(prefix):])
    return None


def current_attempt(observed: Observed) -> int:
    """Returns the current attempt: the larger of ``status.attempt`` and the attempt label of any
    observed JobSet named ``<job>-<attempt>`` with that label.

    Adopting a newer observed JobSet protects against a lost status write: Metacontroller creates
    children before it writes the status.
    """
    best = observed.status.attempt
    for jobset in observed.jobsets:
        metadata = jobset["metadata"]
        value = (metadata.get("labels") or {}).get(ATTEMPT_LABEL) or ""
        if ATTEMPT_VALUE.fullmatch(value) and attempt_in_name(observed.name, str(metadata["name"])) == int(value):
            best = max(best, int(value))
    return best


def status_mismatch(observed: Observed, attempt: int, phase: str) -> tuple[str, str] | None:
    """Whether the status (``attempt`` after adoption, ``phase``, ``restarts``) disagrees with the
    observed JobSets. Reads only ``observed``. Returns ``(reason, message)`` or ``None``.

    A healthy JobSet is one not being deleted and not finished (Failed or Completed).
    """
    job = observed.name
    running = [js for js in observed.jobsets if healthy(js)]
    names = [str(js["metadata"]["name"]) for js in running]
    current = workload_name(job, attempt)
    if len(running) > 1:
        return "SeveralWorkloads", (f"JobSets {list_names(names)} all run, but a Job has one workload at a time "
                                    f"(status.attempt is {observed.status.attempt})")
    if running and names[0] != current:
        return "WorkloadNotCurrent", (f"JobSet {names[0]} runs, but status.attempt is {attempt} "
                                      f"(JobSet {current})")
    present = next((js for js in observed.jobsets if js["metadata"]["name"] == current
                    and not js["metadata"].get("deletionTimestamp")), None)
    if present is not None and phase in (SUSPENDED, SUSPENDING) and healthy(present):
        return "PhaseDisagrees", f"status.phase is {phase}, but JobSet {current} runs"
    if present is not None and phase == RESTARTING and jobset_state(present) != FAILED:
        state = jobset_state(present) or "running"
        return "PhaseDisagrees", f"status.phase is Restarting, but JobSet {current} is {state.lower()}, not failed"
    restarts = observed.status.restarts
    # A restart is counted when Restarting begins; the active deadline (issue 15) may end the Job
    # before that restart's attempt starts, so a Job past its deadline may keep the extra one.
    cut_short = any(c.get("type") == "DeadlineExceeded" and c.get("status") == "True"
                    for c in observed.status.conditions)
    # Likewise a restart counted and then suspended before its attempt began: Suspending/Suspended
    # keep the extra one until the resume starts the next attempt.
    suspended_early = phase in (SUSPENDING, SUSPENDED)
    allowed = attempt + (1 if phase == RESTARTING or cut_short or suspended_early else 0)
    if restarts > allowed:
        return "RestartsDisagree", f"status.restarts is {restarts}, more than attempt {attempt} can have had"
    if phase == RESTARTING and restarts == 0 and not _uncounted_restart(observed, attempt):
        return "RestartsDisagree", "status.phase is Restarting, but status.restarts records no restart"
    return None


def _uncounted_restart(observed: Observed, attempt: int) -> bool:
    """Whether ``status.lastFailure`` records a restart of ``attempt`` that spends no restart
    (failure policy ``RestartJobIgnoreMaxRestarts``, issue 15): Restarting with restarts 0 is then
    what the steps give."""
    last = observed.status.last_failure
    return last.get("action") == "RestartJobIgnoreMaxRestarts" and last.get("attempt") == attempt


def healthy(jobset: Mapping[str, Any]) -> bool:
    """A JobSet that is not being deleted and has not finished: a workload that runs."""
    return not jobset["metadata"].get("deletionTimestamp") and jobset_state(jobset) == ""


def jobset_state(jobset: Mapping[str, Any]) -> str:
    """``"Failed"``, ``"Completed"`` or ``""`` from a JobSet's conditions or ``terminalState``."""
    status = jobset.get("status") or {}
    true_types = {c.get("type") for c in status.get("conditions") or () if c.get("status") == "True"}
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
