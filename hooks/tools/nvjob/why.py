"""``kubectl nvjob why``: one paragraph saying why a Job is in its phase and what would move it on.

Pure. The words come from the status the hooks wrote (phase, attempt, restarts, the conditions and
their reasons, ``message``, ``lastFailure``, and ``attempts``: the first failing pod, its node and
exit code) and, while the Job drains, from the barrier's view read
now (``drain.DrainView``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hooks.tools.nvjob.drain import DrainView
from hooks.tools.nvjob.view import QUEUE_LABEL, as_map, condition, current_workload, spec_of, status_of, waiting_for


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def _drain_words(job: Mapping[str, Any], drain: DrainView | None) -> str:
    """What the barrier waits for, in the barrier's words: the view read now, else the status."""
    if drain is not None:
        if drain.error:
            return f"The drain barrier cannot tell what is left: {drain.error}; it holds and reads again"
        if drain.passed:
            return "The drain barrier finds nothing left now (no JobSet, no active pod, no batch Job)"
        words = f"The drain barrier is {drain.message}" if drain.message else ""
        return f"{words}; {drain.stuck}" if drain.stuck else words
    said = waiting_for(job)
    return f"It is {said}" if said else ""


@dataclass(frozen=True)
class _Facts:
    """What the paragraph is made of, read once from the Job (and the barrier's view)."""

    job: Mapping[str, Any]
    drain: DrainView | None
    name: str
    phase: str
    attempt: Any
    restarts: Any
    workload: str
    message: str

    @property
    def status(self) -> Mapping[str, Any]:
        return status_of(self.job)

    @property
    def spec(self) -> Mapping[str, Any]:
        return spec_of(self.job)

    @property
    def labels(self) -> Mapping[str, Any]:
        return as_map(as_map(self.job.get("metadata")).get("labels"))

    @property
    def limit(self) -> str:
        """`` of N`` for ``spec.maxRestarts`` N, ``""`` without one."""
        most = self.spec.get("maxRestarts")
        return f" of {most}" if isinstance(most, int) else ""

    def waits(self) -> str:
        return _drain_words(self.job, self.drain)


def _failing_pod(f: _Facts, attempt: Any) -> str:
    """What ``status.attempts`` says of ``attempt``'s first failing pod: ``Its first failing pod was
    P (replicated job R) on node N: exit code C (reason)``; ``""`` when the history names none."""
    entries = f.status.get("attempts")
    entry = next((as_map(e) for e in entries if as_map(e).get("attempt") == attempt), {}) \
        if isinstance(entries, list) else {}
    pod = entry.get("failedPod")
    if not pod:
        return ""
    where = f" (replicated job {entry['failedReplicatedJob']})" if entry.get("failedReplicatedJob") else ""
    where += f" on node {entry['node']}" if entry.get("node") else ""
    how = [f"exit code {entry['exitCode']}"] if isinstance(entry.get("exitCode"), int) else []
    how += [str(entry["reason"])] if entry.get("reason") else []
    said = f": {', '.join(how)}" if how else ""
    return f"Its first failing pod was {pod}{where}{said}"


def _last_failure(f: _Facts) -> str:
    """For a Job that restarted: the attempt before this one and its first failing pod, from
    ``status.attempts``; ``""`` when that attempt did not fail or the history does not name its pod."""
    if not isinstance(f.attempt, int) or f.attempt == 0 or not f.restarts:
        return ""
    failing = _failing_pod(f, f.attempt - 1)
    if not failing:
        return ""
    return f"Attempt {f.attempt - 1} failed: its first failing pod" + failing.removeprefix("Its first failing pod")


def _mismatch(f: _Facts) -> list[str]:
    mismatch = condition(f.status, "StatusMismatch")
    return [f"Job {f.name} is {f.phase} and holds: its status disagrees with what the API server shows "
            f"({mismatch.get('reason')}: {mismatch.get('message') or f.message})",
            "Nothing is created, deleted or ended until the status is corrected or the extra JobSet removed "
            "(docs/operations.md, StatusMismatch)"]


def _deleted(f: _Facts) -> list[str]:
    return [f"Job {f.name} is Terminating: it was deleted, and its finalizer keeps it until no pod of any attempt "
            "is left", f.waits(), "Once the barrier passes, the finalizer is removed and the Job goes away"]


def _deadline(f: _Facts) -> list[str]:
    deadline = condition(f.status, "DeadlineExceeded")
    return [f"Job {f.name} is Terminating: spec.activeDeadlineSeconds passed "
            f"({deadline.get('message') or 'DeadlineExceeded'}), so its workload is being torn down", f.waits(),
            "Once the barrier passes it becomes Failed (reason DeadlineExceeded)"]


def _invalid(f: _Facts) -> list[str]:
    invalid = condition(f.status, "InvalidSpec")
    parts = [f"Job {f.name} is {f.phase} and creates nothing: its spec cannot become a JobSet "
             f"({invalid.get('reason')}: {invalid.get('message')})"]
    if invalid.get("reason") == "ReplicatedJobsChanged":
        parts.append("spec.replicatedJobs no longer matches the workload the Job was created with "
                     "(status.replicatedJobsDigest): restore it, or delete the Job and create it again")
    else:
        parts.append(f"Fix the spec (kubectl edit nvjob {f.name}); the hooks judge it again on their next call")
    return [*parts, f.message]


def _pending(f: _Facts) -> list[str]:
    if "before creating JobSet" in f.message or "admitted, waiting" in f.message:
        return [f"Job {f.name} is Pending at attempt {f.attempt}: JobSet {f.workload} is not created yet, because "
                f"the drain barrier holds: {f.message}", "It is created once nothing of an earlier attempt is left"]
    return [f"Job {f.name} is Pending at attempt {f.attempt}: JobSet {f.workload} exists and no worker pod is "
            "active yet" + (f" ({f.message})" if f.message else ""),
            "It becomes Running when a worker pod is active (scheduled and started)"]


def _running(f: _Facts) -> list[str]:
    active = f.status.get("activePods", 0)
    said = f": {f.message}" if f.message else f" of JobSet {f.workload}"
    return [f"Job {f.name} is Running at attempt {f.attempt} with {active} active pods{said}",
            f"It becomes Succeeded when JobSet {f.workload} reports Completed; when it reports Failed, it restarts "
            f"as attempt {_next(f.attempt)} after the drain barrier (restarts {f.restarts}{f.limit}) or, with no "
            "restart left or a FailJob rule, becomes Failed", _last_failure(f)]


def _restarting(f: _Facts) -> list[str]:
    failure = as_map(f.status.get("lastFailure"))
    why_failed = failure.get("message") or failure.get("cause") or "its JobSet failed"
    return [f"Job {f.name} is Restarting: attempt {f.attempt} failed ({why_failed}) and is being torn down "
            f"(restarts {f.restarts}{f.limit})", _failing_pod(f, f.attempt), f.waits(),
            f"Attempt {_next(f.attempt)} is created, Pending, only once nothing of attempt {f.attempt} is left"]


def _suspending(f: _Facts) -> list[str]:
    cause = "spec.suspend is true" if f.spec.get("suspend") is True else (
        "Kueue evicted its Workload" if f.labels.get(QUEUE_LABEL) else "it is being suspended")
    return [f"Job {f.name} is Suspending: {cause}, so attempt {f.attempt} is being torn down", f.waits(),
            "It becomes Suspended (Queued behind Kueue, its quota released) once nothing is left"]


def _suspended(f: _Facts) -> list[str]:
    return [f"Job {f.name} is Suspended: spec.suspend is true and nothing of it runs",
            f"Resume it with kubectl patch nvjob {f.name} --type merge -p '{{\"spec\":{{\"suspend\":false}}}}': "
            f"attempt {_next(f.attempt)} starts once the drain barrier passes"]


def _queued(f: _Facts) -> list[str]:
    admitted = condition(f.status, "Admitted")
    said = admitted.get("message") or admitted.get("reason") or f.message or "not admitted yet"
    return [f"Job {f.name} is Queued in LocalQueue {f.labels.get(QUEUE_LABEL, '')}: Kueue has not admitted its "
            f"Workload ({said})", "Its JobSet is created once Kueue admits the Workload"]


def _succeeded(f: _Facts) -> list[str]:
    when = f.status.get("completionTime")
    return [f"Job {f.name} Succeeded: JobSet {f.workload} completed at attempt {f.attempt}"
            + (f" (completed at {when})" if when else ""), _final_words(f.spec)]


def _failed(f: _Facts) -> list[str]:
    failed = condition(f.status, "Failed")
    said = failed.get("message") or as_map(f.status.get("lastFailure")).get("message") or f.message or "it failed"
    return [f"Job {f.name} Failed ({failed.get('reason') or 'Failed'}) at attempt {f.attempt} after {f.restarts} "
            f"restarts: {said}", _failing_pod(f, f.attempt), _final_words(f.spec)]


PHASES: dict[str, Callable[[_Facts], list[str]]] = {
    "Pending": _pending, "Running": _running, "Restarting": _restarting, "Suspending": _suspending,
    "Suspended": _suspended, "Queued": _queued, "Succeeded": _succeeded, "Failed": _failed,
}
"""The words of each phase when no condition overrides them (StatusMismatch, a delete, a deadline, InvalidSpec)."""


def why(job: Mapping[str, Any], drain: DrainView | None = None) -> str:
    """One paragraph: why the Job is in its phase and what would move it on, from the status the
    hooks wrote (phase, attempt, restarts, conditions and their reasons, message, lastFailure) and,
    while it drains, what the barrier waits for now (``drain``). First that applies: no status yet;
    ``StatusMismatch``; deleted; ``Terminating`` after the deadline; ``InvalidSpec``; the phase's own words
    (``PHASES``). A ``DrainStuck`` the barrier's view did not already name is added."""
    metadata, status = as_map(job.get("metadata")), status_of(job)
    facts = _Facts(job, drain, str(metadata.get("name", "")), str(status.get("phase") or ""),
                   status.get("attempt", 0), status.get("restarts", 0), current_workload(job),
                   str(status.get("message") or ""))
    if not facts.phase:
        parts = [f"Job {facts.name} has no status yet: the hooks have not answered for it. Check that Metacontroller "
                 "runs and the CompositeController nvcre-hooks is installed, and that the hooks answer (SyncError "
                 "Events, docs/operations.md §4)"]
    elif condition(status, "StatusMismatch").get("status") == "True":
        parts = _mismatch(facts)
    elif metadata.get("deletionTimestamp"):
        parts = _deleted(facts)
    elif facts.phase == "Terminating":
        parts = _deadline(facts)
    elif condition(status, "InvalidSpec").get("status") == "True":
        parts = _invalid(facts)
    else:
        parts = PHASES.get(facts.phase, lambda f: [f"Job {f.name} is {f.phase}" + (f": {f.message}" if f.message
                                                                                   else "")])(facts)
    stuck = condition(status, "DrainStuck")
    if stuck.get("status") == "True" and (drain is None or not drain.stuck):
        parts.append(f"Pods are stuck on lost nodes: {stuck.get('message')}")
    return " ".join(_sentence(p) for p in parts if p)


def _next(attempt: Any) -> Any:
    return attempt + 1 if isinstance(attempt, int) else "the next"


def _final_words(spec: Mapping[str, Any]) -> str:
    ttl = spec.get("ttlSecondsAfterFinished")
    after = f"; it is deleted {ttl}s after it finished (spec.ttlSecondsAfterFinished)" if isinstance(ttl, int) else ""
    return f"The phase is final: nothing moves it on, create a new Job to run again{after}"
