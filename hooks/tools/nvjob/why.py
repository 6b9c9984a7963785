"""``kubectl nvjob why``: one paragraph saying why a Job is in its phase and what would move it on.

Pure. The words come from the status the hooks wrote (phase, attempt, restarts, the conditions and
their reasons, ``message``, ``lastFailure``, and ``attempts``: the first failing pod, its node and
exit code) and, while the Job drains, from the barrier's view read
now (``drain.DrainView``). What a phase may move on to, and when, is the lifecycle table's
(``hooks.core.lifecycle``: the arrows out of the phase and their words, whether the phase is
terminal), read at each call: a phase or an arrow added there is explained here without editing
this module. Where the hooks' own rules say what happens next (the attempt a resumed Job starts,
whether a gang's JobSet exists yet), the hooks' own code is asked, never a copy of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hooks.core import gang, lifecycle
from hooks.core.declared import InvalidRequest, decode
from hooks.core.rows.current import never_started
from hooks.core.status import Status
from hooks.tools.nvjob.drain import DrainView
from hooks.tools.nvjob.view import (
    QUEUE_LABEL,
    as_map,
    budget_rows,
    condition,
    current_workload,
    excluded_rows,
    human_duration,
    seconds_since,
    spec_of,
    status_of,
    waiting_for,
)

GANG_HOLDS = frozenset({gang.WAITING_FOR_PODGROUP, gang.MISMATCH, gang.UNAVAILABLE})
"""``GangScheduled=False`` reasons that, on a Job with no workload in its status, mean the gang's
hold: the attempt's JobSet is not created (``hooks.core.gang``: the PodGroup comes first)."""
STUCK_STEPS = (
    "First confirm that the node is really down (powered off, or removed from the cloud provider): a "
    "force delete on a live node leaves its containers running. Then taint it (kubectl taint node NODE "
    "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute: kube-controller-manager's pod GC force-deletes "
    "its terminating pods, and so do the hooks with spec.drain.forceDeleteStuckPodsAfterSeconds where the "
    "force-delete overlay manifests/overlays/force-delete is applied) or force delete each pod (kubectl delete "
    "pod POD -n {namespace} --grace-period=0 --force); docs/operations.md, section 4"
)
"""The next step docs/operations.md gives for pods stuck terminating on dead nodes."""


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def _drain_words(job: Mapping[str, Any], drain: DrainView | None) -> str:
    """What the barrier waits for, in the barrier's words: the view read now, else the status
    (without the stuck pods, which ``_stuck`` says once)."""
    if drain is not None:
        if drain.error:
            return f"The drain barrier cannot tell what is left: {drain.error}; it holds and reads again"
        if drain.passed:
            return "The drain barrier finds nothing left now (no JobSet, no active pod, no batch Job)"
        return f"The drain barrier is {drain.message}" if drain.message else ""
    said = _without_stuck(job, waiting_for(job))
    return f"It is {said}" if said else ""


def _without_stuck(job: Mapping[str, Any], text: str) -> str:
    """``text`` (the status message) without the stuck pods the barrier appends to it
    (``; <DrainStuck's message>``): ``_stuck`` says them once, with what to do."""
    stuck = condition(status_of(job), "DrainStuck")
    words = str(stuck.get("message") or "") if stuck.get("status") == "True" else ""
    return text.replace(f"; {words}", "") if words else text


def _stuck(job: Mapping[str, Any], drain: DrainView | None, now: datetime | None) -> str:
    """The pods stuck terminating on dead nodes, once: the barrier's view read now, else the
    ``DrainStuck=True`` condition; for how long (from the view's ``stuck_since``, else the
    condition's ``lastTransitionTime``; only with ``now``), and the next step docs/operations.md
    gives (``STUCK_STEPS``). ``""`` when nothing is stuck."""
    reported = condition(status_of(job), "DrainStuck")
    if drain is not None and drain.stuck:
        words, since = drain.stuck, drain.stuck_since
    elif reported.get("status") == "True":
        words, since = str(reported.get("message") or "pods wait on nodes that are gone or not ready"), \
            reported.get("lastTransitionTime")
    else:
        return ""
    seconds = seconds_since(since, now) if now is not None else None
    lasted = f" (stuck for {human_duration(seconds)}, since {since})" if seconds is not None else ""
    namespace = str(as_map(job.get("metadata")).get("namespace") or "NS")
    return f"Pods are stuck on lost nodes{lasted}: {words}. " + STUCK_STEPS.format(namespace=namespace)


GONE = "gone (its finalizer removed)"
"""What the table's ``START`` is as a target: the Job no longer exists."""


def ways_on(phase: str, *, to: frozenset[str] | None = None,
            but: frozenset[str] = frozenset()) -> list[tuple[str, list[str]]]:
    """The lifecycle table's ways out of ``phase`` (``hooks.core.lifecycle.ARROWS``, its order; not
    a phase's arrow to itself): each target with the words of every arrow to it. ``to`` keeps
    only those targets, ``but`` leaves those out. ``[]`` for a phase the table does not know."""
    ways: dict[str, list[str]] = {}
    for arrow in lifecycle.ARROWS:
        source, target = str(arrow.source), str(arrow.target)
        if source != phase or target == phase or (to is not None and target not in to) or target in but:
            continue
        ways.setdefault(target, []).append(arrow.words)
    return list(ways.items())


def _fill(words: str, name: str, following: Any) -> str:
    """An arrow's words for this Job: ``<job>`` its name, ``(attempt+1)`` the attempt that follows."""
    return (words.replace("<job>-(attempt+1)", f"{name}-{following}").replace("<job>", name)
            .replace("(attempt+1)", f"(attempt {following})"))


def moves_on(phase: str, name: str, following: Any, *, to: frozenset[str] | None = None,
             but: frozenset[str] = frozenset()) -> str:
    """What moves a Job in ``phase`` on, as one sentence from the table (``ways_on``): ``From
    Running it moves to Succeeded when JobSet Completed; to Suspending when spec.suspend or when
    evicted by Kueue; ...``; ``following`` is the attempt that would follow (its words name it).
    ``""`` when the table has no way out."""
    ways = ways_on(phase, to=to, but=but)
    if not ways:
        return ""
    said = [f"to {GONE if target == lifecycle.START else target} when "
            + " or when ".join(_fill(words, name, following) for words in all_words) for target, all_words in ways]
    return f"From {phase} it moves " + "; ".join(said)


def terminal(phase: str) -> bool:
    """Whether the table calls ``phase`` terminal (``hooks.core.lifecycle.PHASES``); a phase it does not know is not."""
    rule = lifecycle.PHASES.get(phase)  # type: ignore[call-overload]  # any string: a status written by anyone
    return bool(rule is not None and rule.terminal)


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
    now: datetime | None = None

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
        """`` of N`` for ``spec.maxRestarts`` N (the user budget), ``""`` without one. Since issue 34
        ``restarts`` counts every budget's restarts (ADR-108): when other classes spent some, what
        the user budget spent is said on its own (``budget_rows``, the hooks' rule), ``, S of N on
        the user budget``."""
        most = self.spec.get("maxRestarts")
        if not isinstance(most, int):
            return ""
        user = next((row for row in budget_rows(self.job) if row["class"] == "user"), None)
        if user is None or user["spent"] == self.restarts:
            return f" of {most}"
        return f", {user['spent']} of {most} on the user budget"

    def moves(self, following: Any = None, **which: Any) -> str:
        """``moves_on`` for this Job's phase (``following``: the attempt that would follow, the next by default)."""
        return moves_on(self.phase, self.name, _next(self.attempt) if following is None else following, **which)

    def waits(self) -> str:
        """What the barrier waits for, then (once, here) the pods stuck on dead nodes (``_stuck``)."""
        stuck = _stuck(self.job, self.drain, self.now)
        return " ".join(_sentence(part) for part in (_drain_words(self.job, self.drain), stuck) if part)


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


def _classes(f: _Facts) -> str:
    """Issue 34: the failure class of the last attempt whose end has one (``status.attempts[].class``)
    and its evidence, the budget that class has left (``view.budget_rows``), and the nodes kept out of
    the next attempts (``status.excludedNodes``, how long each still is). ``""`` when the status says
    none of them."""
    entries = f.status.get("attempts")
    classed = [as_map(e) for e in entries if as_map(e).get("class")] if isinstance(entries, list) else []
    parts = []
    if classed:
        last = classed[-1]
        cls = str(last["class"])
        said = f"Attempt {last.get('attempt')} ended in failure class {cls}"
        said += f" ({last['classEvidence']})" if last.get("classEvidence") else ""
        row = next((r for r in budget_rows(f.job) if r["class"] == cls), None)
        if row is not None:
            pool = f"the {row['shares']} budget" if row["shares"] else f"the {cls} budget"
            said += (f"; {pool} is unlimited" if row["budget"] is None else
                     f"; {pool} has {row['left']} of {row['budget']} restarts left (spec.failurePolicy.budgets)")
        parts.append(said)
    excluded = excluded_rows(f.job, f.now) if f.now is not None else [
        {"node": str(as_map(e).get("node")), "until": as_map(e).get("until"), "left": ""}
        for e in f.status.get("excludedNodes") or ()]
    if excluded:
        shown = ", ".join(f"{r['node']} (until {r['until']})" for r in excluded[:8])
        more = f" and {len(excluded) - 8} more" if len(excluded) > 8 else ""
        parts.append(f"Nodes kept out of the next attempts (status.excludedNodes, spec.failurePolicy."
                     f"excludeNodesSeconds): {shown}{more}")
    return ". ".join(parts)


def _mismatch(f: _Facts) -> list[str]:
    mismatch = condition(f.status, "StatusMismatch")
    return [f"Job {f.name} is {f.phase} and holds: its status disagrees with what the API server shows "
            f"({mismatch.get('reason')}: {mismatch.get('message') or f.message})",
            "Nothing is created, deleted or ended until the status is corrected or the extra JobSet removed "
            "(docs/operations.md, StatusMismatch)"]


def _deleted(f: _Facts) -> list[str]:
    return [f"Job {f.name} is Terminating: it was deleted, and its finalizer keeps it until no pod of any attempt "
            "is left", f.waits(), moves_on(lifecycle.Phase.TERMINATING, f.name, _next(f.attempt),
                                           to=frozenset({lifecycle.START}))]


def _deadline(f: _Facts) -> list[str]:
    deadline = condition(f.status, "DeadlineExceeded")
    return [f"Job {f.name} is Terminating: spec.activeDeadlineSeconds passed "
            f"({deadline.get('message') or 'DeadlineExceeded'}), so its workload is being torn down", f.waits(),
            moves_on(lifecycle.Phase.TERMINATING, f.name, _next(f.attempt), but=frozenset({lifecycle.START}))]


def _invalid(f: _Facts) -> list[str]:
    invalid = condition(f.status, "InvalidSpec")
    parts = [f"Job {f.name} is {f.phase} and creates nothing: its spec cannot become a JobSet "
             f"({invalid.get('reason')}: {invalid.get('message')})"]
    if invalid.get("reason") == "ReplicatedJobsChanged":
        parts.append("spec.replicatedJobs no longer matches the workload the Job was created with "
                     "(status.replicatedJobsDigest): restore it, or delete the Job and create it again")
    elif invalid.get("reason") == "QueueingUnavailable":
        parts.append(f"The spec is fine: the Job names a Kueue LocalQueue (label {QUEUE_LABEL}) but this install "
                     "does not queue Jobs. Apply the Kueue install (kubectl apply -k manifests-kueue/, "
                     "docs/operations.md section 9) to run it behind Kueue, or remove the label to run it without "
                     f"a queue (kubectl label nvjob {f.name} {QUEUE_LABEL}-); the hooks judge it again on their "
                     "next call")
    else:
        parts.append(f"Fix the spec (kubectl edit nvjob {f.name}); the hooks judge it again on their next call")
    return [*parts, f.message]


def _pending(f: _Facts) -> list[str]:
    held = condition(f.status, gang.CONDITION)
    if not f.status.get("workload") and held.get("status") == "False" and held.get("reason") in GANG_HOLDS:
        return _gang_hold(f, str(held.get("reason")), str(held.get("message") or ""))
    if "before creating JobSet" in f.message or "admitted, waiting" in f.message:
        return [f"Job {f.name} is Pending at attempt {f.attempt}: JobSet {f.workload} is not created yet, because "
                f"the drain barrier holds: {f.message}", "It is created once nothing of an earlier attempt is left",
                f.moves()]
    return [f"Job {f.name} is Pending at attempt {f.attempt}: JobSet {f.workload} exists and no worker pod is "
            "active yet" + (f" ({f.message})" if f.message else ""), f.moves()]


def _gang_hold(f: _Facts, reason: str, said: str) -> list[str]:
    """A gang Job whose attempt's JobSet is held for its PodGroup (``hooks.core.gang``): nothing of
    the attempt runs yet; what moves it on depends on the reason."""
    group = f"PodGroup {f.workload}"
    moves = {
        gang.WAITING_FOR_PODGROUP: f"JobSet {f.workload} is created on the hooks' next call once {group} is among "
                                   "the Job's children (normally one call); if it lasts, a PodGroup of that name "
                                   f"the Job does not own is in the way: look at kubectl get podgroup {f.workload} "
                                   "-o yaml and delete it",
        gang.MISMATCH: f"JobSet {f.workload} is created once {group} is the gang the hooks build: fix it (kubectl "
                       f"patch podgroup {f.workload}) or delete it (kubectl delete podgroup {f.workload}) and the "
                       "hooks go on",
        gang.UNAVAILABLE: "Install manifests-gang/ on a cluster that serves scheduling.k8s.io/v1beta1 podgroups, or "
                          "set spec.gang.whenUnavailable to StartWithoutGang (or spec.gang.policy to None) to run "
                          "it without a gang",
    }
    return [f"Job {f.name} is Pending at attempt {f.attempt}: JobSet {f.workload} is not created yet, because its "
            f"gang holds it (GangScheduled {reason}: {said or f.message})", moves[reason], f.moves()]


def _running(f: _Facts) -> list[str]:
    active = f.status.get("activePods", 0)
    said = f": {f.message}" if f.message else f" of JobSet {f.workload}"
    return [f"Job {f.name} is Running at attempt {f.attempt} with {active} active pods{said} "
            f"(restarts {f.restarts}{f.limit})", f.moves(), _last_failure(f)]


def _restarting(f: _Facts) -> list[str]:
    failure = as_map(f.status.get("lastFailure"))
    why_failed = failure.get("message") or failure.get("cause") or "its JobSet failed"
    return [f"Job {f.name} is Restarting: attempt {f.attempt} failed ({why_failed}) and is being torn down "
            f"(restarts {f.restarts}{f.limit})", _failing_pod(f, f.attempt), f.waits(), f.moves()]


def _suspending(f: _Facts) -> list[str]:
    cause = "spec.suspend is true" if f.spec.get("suspend") is True else (
        "Kueue evicted its Workload" if f.labels.get(QUEUE_LABEL) else "it is being suspended")
    return [f"Job {f.name} is Suspending: {cause}, so attempt {f.attempt} is being torn down", f.waits(), f.moves()]


def _suspended(f: _Facts) -> list[str]:
    return [f"Job {f.name} is Suspended: spec.suspend is true and nothing of it runs",
            f"Resume it with kubectl patch nvjob {f.name} --type merge -p '{{\"spec\":{{\"suspend\":false}}}}': "
            f"attempt {_resumed(f)} starts once the drain barrier passes", f.moves(_resumed(f))]


def _resumed(f: _Facts) -> Any:
    """The attempt a resume starts: the first, ``status.attempt`` itself, for a Job that never started
    one (created suspended: ``hooks.core.rows.current.never_started`` on the status as the hooks read
    it), else the next (``_next``; also when the status cannot be read as the hooks read it)."""
    try:
        first = never_started(decode(dict(f.status), Status, "status"))
    except (InvalidRequest, ValueError, TypeError):
        first = False
    return f.attempt if first else _next(f.attempt)


def _queued(f: _Facts) -> list[str]:
    admitted = condition(f.status, "Admitted")
    said = admitted.get("message") or admitted.get("reason") or f.message or "not admitted yet"
    return [f"Job {f.name} is Queued in LocalQueue {f.labels.get(QUEUE_LABEL, '')}: Kueue has not admitted its "
            f"Workload ({said})", f.moves()]


def _succeeded(f: _Facts) -> list[str]:
    when = f.status.get("completionTime")
    return [f"Job {f.name} Succeeded: JobSet {f.workload} completed at attempt {f.attempt}"
            + (f" (completed at {when})" if when else "")]


def _failed(f: _Facts) -> list[str]:
    failed = condition(f.status, "Failed")
    said = failed.get("message") or as_map(f.status.get("lastFailure")).get("message") or f.message or "it failed"
    return [f"Job {f.name} Failed ({failed.get('reason') or 'Failed'}) at attempt {f.attempt} after {f.restarts} "
            f"restarts: {said}", _failing_pod(f, f.attempt)]


def _any_phase(f: _Facts) -> list[str]:
    """A phase with no facts of its own here (one the table gained, or a status written by hand):
    the phase and the hooks' message; what moves it on is the table's, as for every phase."""
    return [f"Job {f.name} is {f.phase}" + (f": {f.message}" if f.message else ""), f.moves()]


FACTS: dict[str, Callable[[_Facts], list[str]]] = {
    "Pending": _pending, "Running": _running, "Restarting": _restarting, "Suspending": _suspending,
    "Suspended": _suspended, "Queued": _queued, "Succeeded": _succeeded, "Failed": _failed,
}
"""The facts of the status each phase is said with (the attempt, the failing pod, the barrier's wait,
the resume command) when no condition overrides them (StatusMismatch, a delete, a deadline,
InvalidSpec). Not what a phase means or what moves it on: that is the lifecycle table's
(``moves_on``, ``terminal``), and a phase not listed here is said by ``_any_phase``."""


def _final(f: _Facts) -> str:
    """For a phase the table calls terminal: nothing but what the table allows moves it on (a
    deletion), and when ``spec.ttlSecondsAfterFinished`` deletes it. ``""`` for any other phase."""
    if not terminal(f.phase):
        return ""
    ttl = f.spec.get("ttlSecondsAfterFinished")
    after = f"; it is deleted {ttl}s after it finished (spec.ttlSecondsAfterFinished)" if isinstance(ttl, int) else ""
    return f"The phase is final (terminal in hooks/core/lifecycle.py): create a new Job to run again{after}. " \
        + f.moves()


def why(job: Mapping[str, Any], drain: DrainView | None = None, now: datetime | None = None) -> str:
    """One paragraph: why the Job is in its phase and what would move it on, from the status the
    hooks wrote (phase, attempt, restarts, conditions and their reasons, message, lastFailure) and,
    while it drains, what the barrier waits for now (``drain``). First that applies: no status yet;
    ``StatusMismatch``; deleted; ``Terminating`` after the deadline; ``InvalidSpec``; the phase's own words
    (``FACTS``, ``_any_phase``), the last failure class, its budget left and the nodes kept out
    (``_classes``), and what moves it on, from the lifecycle table (``moves_on``; for a
    terminal phase, ``_final``). The pods stuck on dead nodes are said once (``_stuck``: how long,
    with ``now``, and what to do): after what the barrier waits for, else last."""
    metadata, status = as_map(job.get("metadata")), status_of(job)
    facts = _Facts(job, drain, str(metadata.get("name", "")), str(status.get("phase") or ""),
                   status.get("attempt", 0), status.get("restarts", 0), current_workload(job),
                   _without_stuck(job, str(status.get("message") or "")), now)
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
        parts = [*FACTS.get(facts.phase, _any_phase)(facts), _classes(facts), _final(facts)]
    stuck = _stuck(job, drain, now)
    if stuck and not any(stuck in part for part in parts):  # a phase that says no barrier words says it last
        parts.append(stuck)
    return " ".join(_sentence(p) for p in parts if p)


def _next(attempt: Any) -> Any:
    return attempt + 1 if isinstance(attempt, int) else "the next"
